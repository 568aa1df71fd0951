//! `clustersim calibrate`: time GEMMs, HBM copies, PCIe, NCCL collectives and
//! the CPU Adam step on this machine and write a calibration profile.

use crate::exit::user_error;
use crate::stdout::outln;
use calibrate::{CalibrateError, CalibrateOptions, Progress};
use clap::Args;
use gpu::detect::CudaLibrary;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  clustersim calibrate --quick --out my-gpu.json && clustersim simulate --profile my-gpu.json\n  clustersim calibrate --model gpt3-175b --tp 8 --microbatch-size 1 --out a100.json\n  clustersim calibrate --cpu-only --out cpu.json   # no GPU needed: times the CPU Adam step\n\nCUDA libraries: cuBLAS, NVRTC and NCCL are looked for in --cuda-lib-dir, CLUSTERSIM_CUDA_LIB_DIR,\nthe system's loader path, then the active Python's nvidia/*/lib wheel folders (pip install\nnvidia-cublas nvidia-cuda-nvrtc nvidia-nccl-cu13 is enough); the first lines printed say which\nfile was loaded. `clustersim cuda-libs` shows the search without running anything."
)]
pub struct CalibrateArgs {
    /// Few shapes, sizes and repeats: under two minutes on one GPU.
    #[arg(long)]
    pub quick: bool,
    /// Also time the exact GEMM shapes of this model (preset or JSON file, ≤ 256 MiB).
    #[arg(long)]
    pub model: Option<String>,
    /// Tensor-parallel degree of the model's shapes.
    #[arg(long, default_value_t = 1)]
    pub tp: u32,
    /// Microbatch size of the model's shapes.
    #[arg(long, default_value_t = 1)]
    pub microbatch_size: u32,
    /// Timed repeats per entry (the median is recorded; at most 200).
    #[arg(long, default_value_t = 20)]
    pub repeats: u32,
    /// Time only the CPU Adam step (no GPU needed).
    #[arg(long)]
    pub cpu_only: bool,
    /// Do not time FP8 GEMMs (cuBLASLt) even on a GPU with FP8 tensor cores; the profile keeps the
    /// base gemm.fp8_relative_efficiency.
    #[arg(long)]
    pub no_fp8: bool,
    /// Skip the sustained stage (one 8192³ GEMM back to back for 20 s, 5 s with
    /// --quick, clocks and power sampled): the sustained-over-burst ratio then
    /// comes from the grid's GEMMs of 10 ms or more (a full run has them), else
    /// the base profile's is kept
    #[arg(long)]
    pub no_sustained: bool,
    #[arg(long, help = super::registry_help::base_profile_help())]
    pub base_profile: Option<String>,
    /// Where to write the profile.
    #[arg(long, default_value = "profile.json", value_parser = crate::output_file::output_path)]
    pub out: PathBuf,
    #[command(flatten)]
    pub libs: super::cuda_libs::CudaLibArgs,
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<()> {
    let model = match &args.model {
        Some(name) => Some(models::ModelSpec::resolve(name).map_err(user_error)?),
        None => None,
    };
    let options = CalibrateOptions {
        quick: args.quick,
        model,
        tensor_parallel: args.tp,
        microbatch_size: args.microbatch_size,
        repeats: args.repeats,
        cpu_only: args.cpu_only,
        skip_fp8: args.no_fp8,
        skip_sustained: args.no_sustained,
        base_profile: args.base_profile.clone(),
        ..CalibrateOptions::default()
    };
    // Bad options are reported before any library is looked for.
    options.validate().map_err(user_error)?;
    if !args.cpu_only {
        super::cuda_libs::prepare(
            &args.libs,
            &super::cuda_libs::Needs {
                required: &[CudaLibrary::Cublas, CudaLibrary::Nvrtc],
                optional: &[CudaLibrary::Nccl],
            },
        )?;
    }
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg:<28} [{bar:30}] {pos}/{len} {elapsed}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut on_progress = |progress: Progress| {
        bar.set_message(progress.stage.clone());
        bar.set_length(progress.total.max(1));
        bar.set_position(progress.done);
    };
    let profile = calibrate::run(&options, &mut on_progress);
    bar.finish_and_clear();
    let profile = profile.map_err(|error| match error {
        CalibrateError::NoGpu(_)
        | CalibrateError::Gpu(calibrate::GpuError::MissingLibrary { .. })
        | CalibrateError::InvalidOptions { .. }
        | CalibrateError::Profile(_) => user_error(error),
        other => anyhow::anyhow!(other),
    })?;
    let mut profile = profile;
    refit_tile_model(&mut profile);
    // What the run could not do or the reader should know, one per line.
    for remark in &profile.provenance.remarks {
        eprintln!("remark: {remark}");
    }
    let text = serde_json::to_string_pretty(&profile)?;
    crate::output_file::write_output(&args.out, |writer| {
        std::io::Write::write_all(writer, (text + "\n").as_bytes())
    })?;
    outln!(
        "profile {} written to {} (use it with: clustersim simulate --profile {})",
        profile.id,
        args.out.display(),
        args.out.display()
    )?;
    Ok(())
}

/// Fits the GEMM tile model to the GEMMs this run timed
/// ([`sim::cost::fit_tile_model`]); where it cannot, the base profile's model
/// stays and a remark says why (none when the run timed no GEMM at all: a
/// CPU-only run's remark says so).
fn refit_tile_model(profile: &mut profile::Profile) {
    if profile.gemm.measured.is_empty() {
        return;
    }
    let Some(sheet) = topologies::datasheet(&profile.gpu) else {
        profile.provenance.remarks.push(format!(
            "no datasheet for {}: the GEMM tile model is the base profile's",
            profile.gpu
        ));
        return;
    };
    match sim::cost::fit_tile_model(profile, &sheet.gpu) {
        Ok(fit) => {
            let sustained = match fit.sustained_from {
                sim::cost::SustainedFrom::SustainedRun => format!(
                    ", sustained ratio {:.3} from the sustained stage",
                    fit.constants.sustained_ratio.value
                ),
                sim::cost::SustainedFrom::LongGemms(count) => format!(
                    ", sustained ratio {:.3} from {count} GEMMs of 10 ms or more",
                    fit.constants.sustained_ratio.value
                ),
                sim::cost::SustainedFrom::Kept => {
                    "; sustained ratio kept from the base profile".to_string()
                }
            };
            profile.provenance.remarks.push(format!(
                "GEMM tile model fitted to {} GEMMs: mean |error| {:.2} %{sustained}",
                fit.gemms,
                100.0 * fit.mean_abs_error
            ));
            profile.gemm.tile_model = Some(fit.constants);
        }
        Err(why) => profile.provenance.remarks.push(format!(
            "GEMM tile model not fitted ({why}): the base profile's is kept"
        )),
    }
}
