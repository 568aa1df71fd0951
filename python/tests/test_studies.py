"""clustersim.sweep, validate, fit, presets and show."""

import sys

import pytest

import clustersim

SWEEP = dict(model="gpt2-1b", topology="dgx-a100", gpus=8, global_batch=32)


def test_sweep_is_a_ranked_frame_of_layouts():
    pandas = pytest.importorskip("pandas")
    frame = clustersim.sweep(**SWEEP)
    assert isinstance(frame, pandas.DataFrame)
    assert {"tensor_parallel", "pipeline_parallel", "data_parallel", "schedule", "samples_per_s"} <= set(frame.columns)
    assert (frame.tensor_parallel * frame.pipeline_parallel * frame.data_parallel == 8).all()
    assert frame.samples_per_s.is_monotonic_decreasing
    assert frame.attrs["counts"]["simulated"] == len(frame)


def test_sweep_gives_records_without_pandas(monkeypatch):
    records = clustersim.sweep(**SWEEP, records=True)
    monkeypatch.setitem(sys.modules, "pandas", None)
    assert clustersim.sweep(**SWEEP) == records
    assert records[0]["samples_per_s"] >= records[-1]["samples_per_s"]


def test_sweep_takes_lists_as_the_command_takes_commas():
    records = clustersim.sweep(**SWEEP, schedule=["1f1b", "gpipe"], recompute="none", records=True)
    assert {r["schedule"] for r in records} == {"1f1b", "gpipe"}
    assert {r["recompute"] for r in records} == {"none"}


def test_validate_gives_the_commands_rows(root):
    document = clustersim.validate(root / "validation" / "dev-set.json")
    assert document.kind == "cases"
    assert document.summary.predicted == 20
    rows = document.rows
    assert len(rows) == 22
    predicted = [r for r in rows if r.predicted is not None]
    assert len(predicted) == 20
    assert all(abs(r.error_percent) < 15 for r in predicted)
    assert rows[0].case == "korthikanti22-22b"


def test_fit_returns_fit_json_and_simulate_names_it(root, tmp_path):
    kept = tmp_path / "fit.json"
    fitted = clustersim.fit(root / "validation" / "dev-set.json", out=kept)
    assert kept.exists()
    assert "gemm_rate" in fitted.parameters or "gemm_rate" in str(fitted.parameters)
    r = clustersim.simulate(model="gpt-22b", topology="selene", tp=8, pp=1, dp=1, global_batch=4, fit=fitted)
    assert r.fit["factors"]["gemm_rate"] != 1.0
    assert r.fit["cases_file"].endswith("dev-set.json")


def test_presets_and_show():
    assert "llama3-70b" in clustersim.presets("models")
    model = clustersim.show("llama3-70b")
    assert model.layers == 80
    with pytest.raises(clustersim.InputError, match="--kind"):
        clustersim.show("h200")


def test_cli_runs_any_command():
    assert "busbw" in clustersim.cli("collective", "--gpus", "8").lower() or \
        "bus" in clustersim.cli("collective", "--gpus", "8").lower()
    with pytest.raises(clustersim.InputError, match="unexpected argument"):
        clustersim.cli("simulate", "--no-such-flag")
    assert clustersim.cli("--version").startswith("clustersim ")


def test_sweep_takes_a_scenario_file_as_its_base(root):
    frame = clustersim.sweep(root / "examples" / "llama3-70b-superpod-cp2.json", tp=8, global_batch=32, top=1, records=True)
    assert frame and all(r["tensor_parallel"] == 8 for r in frame)
    assert all(r["tensor_parallel"] * r["pipeline_parallel"] * r["data_parallel"] * r.get("context_parallel", 1) == 128 for r in frame)


def test_run_plan_gives_the_time_to_train_with_its_sources():
    plan = clustersim.run_plan(
        model="llama3-8b", topology="dgx-h100-ib", tp=2, pp=1, dp=4, global_batch=32, tokens="1T", trials=200
    )
    assert plan.schema_version == 1
    assert plan.expected.wall_clock_s >= plan.useful_time_s
    assert 0 < plan.goodput <= 1
    assert any("Newkirk" in value.source for value in plan.energy["values"])
    with pytest.raises(clustersim.InputError, match="--failures"):
        clustersim.run_plan(model="llama3-8b", topology="dgx-h100-ib", tp=2, pp=1, dp=4, global_batch=32, tokens="1T", failures="meteor")
