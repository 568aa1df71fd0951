"""clustersim.simulate and timeline: keyword arguments are the command's
flags, results its --json, errors its messages."""

import json
import threading

import pytest

import clustersim

SMALL = dict(model="llama3-8b", topology="dgx-h100-ib", tp=2, pp=1, dp=4, global_batch=64, precision="bf16")


def test_the_readme_example_runs_and_reads_as_attributes():
    r = clustersim.simulate(model="llama3-70b", topology="dgx-h100-ib", tp=8, pp=4, dp=16,
                            global_batch=512, precision="bf16")
    assert r.parameters == r["parameters"]
    assert round(r.parameters / 1e9, 2) == 70.55
    assert r.gpus == 512
    assert 0 < r.mfu_percent < 100
    assert r.iteration_time_s > 0
    assert r.expected_range == r["expected_range"]


def test_keywords_are_the_flags_the_command_line_takes():
    by_keywords = clustersim.simulate(**SMALL, sequence_parallel=True, recompute="selective")
    by_flags = json.loads(clustersim.cli(
        "simulate", "--model", "llama3-8b", "--topology", "dgx-h100-ib", "--tp", "2", "--pp", "1",
        "--dp", "4", "--global-batch", "64", "--precision", "bf16", "--sequence-parallel=true",
        "--recompute", "selective", "--json"))
    assert by_keywords == by_flags
    without_sp = clustersim.simulate(**SMALL, sequence_parallel=False, recompute="selective")
    assert without_sp.peak_memory_bytes > by_keywords.peak_memory_bytes


def test_a_scenario_dict_simulates_as_its_file(root):
    path = root / "examples" / "llama3-70b-superpod-cp2.json"
    from_file = clustersim.simulate(path)
    from_dict = clustersim.simulate(json.loads(path.read_text()))
    assert from_dict == from_file
    overridden = clustersim.simulate(path, global_batch=from_file.gpus // 8 * 2)
    assert overridden.iteration_time_s != from_file.iteration_time_s


def test_a_model_dict_simulates_as_the_preset_it_prints():
    as_json = clustersim.show("llama3-8b", kind="model")
    assert clustersim.simulate(**{**SMALL, "model": as_json}).iteration_time_s == \
        clustersim.simulate(**SMALL).iteration_time_s


def test_refused_input_raises_the_commands_message():
    with pytest.raises(clustersim.InputError) as refused:
        clustersim.simulate(**{**SMALL, "model": "llama3-70"})
    assert "llama3-70b" in str(refused.value)
    assert refused.value.exit_code == 2
    assert isinstance(refused.value, ValueError)
    with pytest.raises(clustersim.InputError, match="tensor"):
        clustersim.simulate(**{**SMALL, "tp": 3})


def test_an_unknown_keyword_names_the_nearest_flag():
    with pytest.raises(clustersim.InputError, match="did you mean 'global_batch'"):
        clustersim.simulate(model="tiny", global_bach=8)
    with pytest.raises(clustersim.InputError, match="json"):
        clustersim.simulate(model="tiny", json=True)
    with pytest.raises(clustersim.InputError, match="True or False"):
        clustersim.simulate(model="tiny", sequence_parallel="yes")


def test_outputs_are_written_only_when_the_run_succeeds(tmp_path):
    chart = tmp_path / "gantt.svg"
    clustersim.simulate(model="tiny", topology="dgx-a100", tp=1, pp=2, dp=1, global_batch=4, plot=str(chart))
    assert chart.read_text().startswith("<svg")
    refused = tmp_path / "refused.svg"
    with pytest.raises(clustersim.InputError):
        clustersim.simulate(model="tiny", topology="dgx-a100", tp=3, global_batch=4, plot=str(refused))
    assert not refused.exists()


def test_timeline_holds_every_task_in_integer_nanoseconds():
    tl = clustersim.timeline(model="tiny", topology="dgx-a100", tp=1, pp=2, dp=1, global_batch=4)
    assert tl.tasks
    assert all(isinstance(t.start_ns, int) and t.end_ns >= t.start_ns for t in tl.tasks)
    r = clustersim.simulate(model="tiny", topology="dgx-a100", tp=1, pp=2, dp=1, global_batch=4)
    assert max(t.end_ns for t in tl.tasks) == round(r.iteration_time_s * 1e9)


def test_calls_from_threads_each_get_their_own_result():
    results = {}

    def one(dp):
        results[dp] = clustersim.simulate(**{**SMALL, "dp": dp, "global_batch": 16 * dp})

    threads = [threading.Thread(target=one, args=(dp,)) for dp in (1, 2, 4, 8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.gpus for r in results.values()) == [2, 4, 8, 16]
    assert results[4] == clustersim.simulate(**{**SMALL, "dp": 4, "global_batch": 64})
