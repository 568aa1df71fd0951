//! Engine benchmarks: lowering and whole simulations at 64, 1024 and 3072
//! GPUs, with throughput in events per second (`whole_run`: as `simulate`
//! runs them, one representative replica where symmetry holds;
//! `whole_run_full`: every replica), and the engine alone in
//! events per CPU-second (`engine_cpu`, the figure to compare on a shared
//! machine), and whole `--contention` simulations of the 1T model
//! (`contention`, in CPU time: flows sharing links max-min fairly, every
//! replica lowered). Run with `cargo bench -p sim --bench engine` (add
//! `-- whole_run/3072` to pick one).

mod cpu_time;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sim::scenario::{Recompute, ScenarioFile, ScheduleKind};
use std::hint::black_box;
use std::time::Duration;

/// (label, scenario): GPT-3 175B on 64 and 1024 GPUs, the 1T model on 3072.
fn cases() -> Vec<(&'static str, sim::scenario::Scenario)> {
    let base = ScenarioFile::embedded_default();
    let gpt3_64 = ScenarioFile {
        pp: Some(8),
        dp: Some(1),
        global_batch: Some(64),
        ..base.clone()
    };
    let gpt3_1024 = base.clone();
    let gpt1t_3072 = ScenarioFile {
        model: Some("gpt-1t".into()),
        tp: Some(8),
        pp: Some(64),
        dp: Some(6),
        global_batch: Some(3072),
        schedule: Some(ScheduleKind::OneFOneB),
        recompute: Some(Recompute::Full),
        ..base
    };
    vec![
        ("64", gpt3_64.resolve().unwrap()),
        ("1024", gpt3_1024.resolve().unwrap()),
        ("3072", gpt1t_3072.resolve().unwrap()),
    ]
}

fn lowering(c: &mut Criterion) {
    let mut group = c.benchmark_group("lowering");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (label, scenario) in cases() {
        let tasks = sim::build_graph(&scenario).1.task_count() as u64;
        group.throughput(Throughput::Elements(tasks));
        group.bench_with_input(BenchmarkId::from_parameter(label), &scenario, |b, s| {
            b.iter(|| black_box(sim::build_graph(s)))
        });
    }
    group.finish();
}

fn whole_run(c: &mut Criterion) {
    let mut group = c.benchmark_group("whole_run");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for (label, scenario) in cases() {
        let events = sim::simulate(&scenario).unwrap().n_events;
        group.throughput(Throughput::Elements(events));
        group.bench_with_input(BenchmarkId::from_parameter(label), &scenario, |b, s| {
            b.iter(|| black_box(sim::simulate(s).unwrap()))
        });
    }
    group.finish();
}

/// Whole simulations with every replica lowered (`--no-symmetry`).
fn whole_run_full(c: &mut Criterion) {
    let mut group = c.benchmark_group("whole_run_full");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for (label, scenario) in cases() {
        let full =
            |s: &sim::scenario::Scenario| sim::simulate_with(s, sim::Expansion::Full).unwrap();
        group.throughput(Throughput::Elements(full(&scenario).n_events));
        group.bench_with_input(BenchmarkId::from_parameter(label), &scenario, |b, s| {
            b.iter(|| black_box(full(s)))
        });
    }
    group.finish();
}

fn engine_only(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine_only");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (label, scenario) in cases() {
        let (_, graph) = sim::build_graph(&scenario);
        let network = sim::cost::ClosedFormNetwork::for_scenario(&scenario);
        let costs = sim::cost::cost_works(&scenario, graph.works(), &network);
        let events = 2 * graph.task_count() as u64;
        group.throughput(Throughput::Elements(events));
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                black_box(
                    sim::engine::run(&graph, |id| costs[graph.work_of(id).index()].duration)
                        .unwrap(),
                )
            })
        });
    }
    group.finish();
}

/// The engine alone, in CPU time of the benchmark thread.
fn engine_cpu(c: &mut Criterion<cpu_time::CpuTime>) {
    let mut group = c.benchmark_group("engine_cpu");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (label, scenario) in cases() {
        let (_, graph) = sim::build_graph(&scenario);
        let network = sim::cost::ClosedFormNetwork::for_scenario(&scenario);
        let costs = sim::cost::cost_works(&scenario, graph.works(), &network);
        let events = 2 * graph.task_count() as u64;
        group.throughput(Throughput::Elements(events));
        group.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| {
                black_box(
                    sim::engine::run(&graph, |id| costs[graph.work_of(id).index()].duration)
                        .unwrap(),
                )
            })
        });
    }
    group.finish();
}

/// Whole `--contention` simulations of the 1T model on 3,072 GPUs at 64 and
/// 512 microbatches a pipeline, in CPU time of the benchmark thread
/// (`scripts/bench-scale.sh 3072-contention` times the second as a command).
fn contention(c: &mut Criterion<cpu_time::CpuTime>) {
    let mut group = c.benchmark_group("contention");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(30));
    let base = ScenarioFile::embedded_default();
    for (label, global_batch) in [("3072-m64", 384), ("3072-m512", 3072)] {
        let file = ScenarioFile {
            model: Some("gpt-1t".into()),
            tp: Some(8),
            pp: Some(64),
            dp: Some(6),
            global_batch: Some(global_batch),
            schedule: Some(ScheduleKind::OneFOneB),
            recompute: Some(Recompute::Full),
            options: sim::scenario::TrainingOptionsFile {
                network_contention: Some(true),
                ..base.options.clone()
            },
            ..base.clone()
        };
        let scenario = file.resolve().unwrap();
        let events = sim::simulate(&scenario).unwrap().n_events;
        group.throughput(Throughput::Elements(events));
        group.bench_with_input(BenchmarkId::from_parameter(label), &scenario, |b, s| {
            b.iter(|| black_box(sim::simulate(s).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, lowering, engine_only, whole_run, whole_run_full);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(cpu_time::CpuTime);
    targets = engine_cpu, contention
}
criterion_main!(benches, cpu);
