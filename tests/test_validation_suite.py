"""The quick validation suite, as CI runs it: every section passes, report shaped as documented."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import replica_mlm as rm
from replica_mlm.cli import main
from replica_mlm.validation import suite

ROOT = Path(__file__).resolve().parents[1]
#: claims of the papers that the quick suite measures and does NOT reproduce (the section's module
#: docstring and docs/figures.md give the numbers): for masked digits the attractor's best state is
#: no closer to a stored image than its input, and no better than shrinking the input toward the
#: mean image. They are the package's known deviations (each fails, with its numbers in the report,
#: and the run passes); if one of them starts to pass, the run fails and this set (and the docs)
#: must change.
NOT_REPRODUCED = {"attractor.digits.beyond_shrinkage.masked.test", "attractor.digits.recall.masked.test"}


#: the quick suite in two halves of similar cost, each run once (in its own pytest-xdist worker)
GROUPS = {"a": ("mlm", "limit", "erm", "discrete"),
          "b": ("attractor", "potts", "figure2", "bayes", "dynamics")}


def _run_quick(tmp_path_factory, group: str):
    out = tmp_path_factory.mktemp(f"validation_{group}")
    sections = [s for s in GROUPS[group] if s in suite.available_sections()]
    args = ["validate", "--quick", "--out", str(out), "--workers", "2", "--no-progress"]
    for name in sections:
        args += ["--section", name]
    res = CliRunner().invoke(main, args)
    return out, res, json.loads((out / "report.json").read_text())


# each half is used by exactly one test, so that pytest-xdist cannot run it on both workers
# (measured with three tests sharing a fixture under --dist loadgroup: half b ran on both, +120 s)
@pytest.fixture(scope="session")
def quick_a(tmp_path_factory):
    return _run_quick(tmp_path_factory, "a")


@pytest.fixture(scope="session")
def quick_b(tmp_path_factory):
    return _run_quick(tmp_path_factory, "b")


def test_every_section_is_in_a_group():
    assert set(suite.SECTIONS) == {s for g in GROUPS.values() for s in g}


def _check_report(out, report):
    assert report["version"] == rm.__version__
    assert report["mode"] == "quick" and report["seeds"]["root"] == 0
    for c in report["checks"]:
        assert set(c) >= {"name", "passed", "value", "threshold", "detail"}
    for s in report["sections"]:
        for fig in s["figures"]:
            assert (out / fig).stat().st_size > 1000, fig
    assert "timing_seconds" in report
    for s in report["sections"]:
        assert s["seconds"] > 0
    assert sum(s["seconds"] for s in report["sections"]) <= report["timing_seconds"]["total"]
    assert "Mode: quick." in (out / "report.md").read_text()


def test_report_records_wall_time_and_mode_per_section(tmp_path, monkeypatch):
    import time
    import types

    from replica_mlm.validation.report import Check, Section

    def slow(out, *, quick, rng):
        time.sleep(0.3)
        return Section(name="slow one", checks=[Check("slow.claim", True, 1.0, "> 0", "passes")])

    module = types.ModuleType("replica_mlm_test_slow_section")
    module.run = slow
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(suite.SECTIONS, "mlm", module.__name__)
    monkeypatch.setattr(suite, "available_sections", lambda: list(suite.SECTIONS))
    report = suite.run_suite(tmp_path, quick=False, sections=["mlm"])
    seconds = report["sections"][0]["seconds"]
    assert 0.3 <= seconds <= report["timing_seconds"]["total"] and report["timing_seconds"]["mlm"] == seconds
    assert json.loads((tmp_path / "report.json").read_text())["sections"][0]["seconds"] == seconds
    md = (tmp_path / "report.md").read_text()
    assert "Mode: full." in md
    cpu = report["sections"][0]["cpu_seconds"]
    assert f"| slow one | yes | {seconds:.1f} | {cpu:.1f} |" in md and f"Wall time: {seconds:.1f} s, " in md


def _spin(seconds: float) -> float:
    """Burn CPU for ``seconds`` of this process's CPU time (module level: picklable for a pool)."""
    import time

    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds


def test_report_records_cpu_time_with_process_pool_workers(tmp_path, monkeypatch):
    # three sections: one sleeps (wall, no CPU), one spins here, one spins in two pool workers.
    # CPU time must see the sleep as idle and count the workers (RUSAGE_CHILDREN), which a
    # process-only clock (RUSAGE_SELF, time.process_time) would miss.
    import time
    import types
    from concurrent.futures import ProcessPoolExecutor

    from replica_mlm.validation.report import Check, Section

    def sleeper(out, *, quick, rng):
        time.sleep(0.4)
        return Section(name="sleeper", checks=[Check("s.claim", True, 1.0, "> 0", "passes")])

    def spinner(out, *, quick, rng):
        _spin(0.4)
        return Section(name="spinner", checks=[Check("p.claim", True, 1.0, "> 0", "passes")])

    def pooled(out, *, quick, rng, workers=1):
        with ProcessPoolExecutor(max_workers=2) as pool:
            assert sum(pool.map(_spin, [0.4, 0.4])) == 0.8
        return Section(name="pooled", checks=[Check("w.claim", True, 1.0, "> 0", "passes")])

    for key, func in (("mlm", sleeper), ("limit", spinner), ("erm", pooled)):
        module = types.ModuleType(f"replica_mlm_test_{func.__name__}_section")
        module.run = func
        monkeypatch.setitem(sys.modules, module.__name__, module)
        monkeypatch.setitem(suite.SECTIONS, key, module.__name__)
    monkeypatch.setattr(suite, "available_sections", lambda: list(suite.SECTIONS))
    report = suite.run_suite(tmp_path, quick=True, sections=["mlm", "limit", "erm"], workers=2)
    cpu = {s["name"]: s["cpu_seconds"] for s in report["sections"]}
    wall = {s["name"]: s["seconds"] for s in report["sections"]}
    assert wall["sleeper"] >= 0.4 and cpu["sleeper"] < 0.2, (wall, cpu)
    assert 0.4 <= cpu["spinner"] < 0.4 + 0.5, cpu
    assert cpu["pooled"] >= 0.8, cpu  # both workers' CPU, counted after the pool shut down
    totals = report["cpu_seconds"]
    assert totals["total"] >= sum(cpu.values()) and totals["erm"] == cpu["pooled"]
    assert "not of Dask workers" in report["cpu_seconds_counts"]
    md = (tmp_path / "report.md").read_text()
    assert f"| pooled | yes | {wall['pooled']:.1f} | {cpu['pooled']:.1f} |" in md
    assert f"| total | yes | {report['timing_seconds']['total']:.1f} | {totals['total']:.1f} |" in md


@pytest.mark.xdist_group("suite_a")
def test_quick_suite_a_passes_and_report_is_complete(quick_a):
    out, res, report = quick_a
    assert res.exit_code == 0 and report["passed"] is True, res.output
    _check_report(out, report)
    names = [c["name"] for c in report["checks"]]
    for prefix in ("mlm.a.", "mlm.c.", "mlm.d.", "limit.", "erm.", "discrete."):
        assert any(n.startswith(prefix) for n in names), prefix
    sections = {s["name"].split(":")[0]: s for s in report["sections"]}
    for fig in ("mlm_fig3_left", "mlm_zscores", "mlm_large_alpha", "discrete_fig3_right"):
        assert (out / f"{fig}.png").exists() and (out / f"{fig}.pdf").exists()
    from PIL import Image

    with Image.open(out / "mlm_fig3_left.png") as im:  # saved by plotting.save: 300 dpi (was 150)
        assert round(im.info["dpi"][0]) == 300 and im.size[0] > 1500, (im.info, im.size)
    md = (out / "report.md").read_text()
    assert "Overall: PASSED" in md and "mlm.d.ks_normal" in md
    mlm = sections["mlm"]
    assert mlm["parameters"]["settings"]["lams"] == [0.0, 0.001, 0.1, 1.0]
    assert mlm["data"]["z_summary"]["n"] >= 200
    assert len(list((out / "mlm_points").glob("point-*.json"))) == mlm["data"]["sweep"]["points"]
    # the mixture panels draw each theory as a curve through many points, not through the few
    # simulated alphas (issue 38: theory had been drawn through 4 points)
    discrete = json.loads((out / "discrete.json").read_text())
    drawn = [s["curves"] for s in discrete["mixture"]["sites"] if "curves" in s]
    assert drawn and all(len(c["alpha"]) >= 10 and len(c["eg_mixture"]) == len(c["alpha"]) for c in drawn)
    _check_resume_recomputes_nothing(out)


@pytest.mark.xdist_group("suite_b")
def test_quick_suite_b_passes_with_the_claims_not_reproduced_as_known_deviations(quick_b):
    out, res, report = quick_b
    failed = {c["name"] for c in report["checks"] if not c["passed"]}
    assert failed == NOT_REPRODUCED, res.output
    assert {c["name"] for c in report["checks"] if c["status"] == "known deviation"} == NOT_REPRODUCED
    # the known deviations fail as documented, every other check passes: the run passes
    assert res.exit_code == 0 and report["passed"] is True, res.output
    n = len(report["checks"]) - 2
    assert report["summary"].startswith(f"{n} passed, 2 known deviations (not reproduced: ")
    assert f"PASSED: {report['summary']}" in res.output
    _check_report(out, report)
    md = (out / "report.md").read_text()
    assert "Overall: PASSED" in md and "no (known deviation)" in md and "Known deviations" in md
    skipped = set(report["skipped_sections"])
    assert skipped == {n for n in GROUPS["b"] if n not in suite.available_sections()}
    _check_potts_section(out, report)
    _check_attractor_section(out, report)


def _check_potts_section(out, report):
    data = json.loads((out / "potts.json").read_text())
    checks = {c["name"]: c for c in report["checks"] if c["name"].startswith("potts.")}
    assert data["passed"] == all(c["passed"] for c in checks.values())
    for name in ("potts.pseudolikelihood_equivalence", "potts.sampler.chi_square",
                 "potts.consistency.reconstruction_slope"):
        assert checks[name]["passed"], checks[name]["detail"]
    for fig in ("potts_reconstruction.pdf", "potts_test_loss.png", "potts_small_lam.png",
                "potts_gibbs.png"):
        assert (out / fig).stat().st_size > 1000, fig


def _check_attractor_section(out, report):
    data = json.loads((out / "attractor.json").read_text())
    checks = {c["name"]: c for c in report["checks"] if c["name"].startswith("attractor.")}
    assert {"attractor.potts.factored_attention_matches_theory",
            "attractor.potts.predict_mean_matches_theory",
            "attractor.digits.recall.masked.test",
            "attractor.digits.lifetime.noise.test",
            "attractor.digits.beyond_structureless.noise.test"} <= set(checks)
    # the transient on held-out test digits for both tasks, beating the corrupted input, the mean
    # training image and the end state
    for task in ("masked", "noise"):
        chk = checks[f"attractor.digits.transient_memory.{task}.test"]
        assert chk["passed"], chk["detail"]
        assert 1 <= chk["value"]["t_best"] <= 50
        assert min(chk["value"][k] for k in ("z_vs_t0", "z_vs_baseline", "z_vs_last")) > 3
    curves = data["data"]["digits"]["curves"]["masked"]["test"]["error"]
    assert len(curves["mean"]) == 101 and all(math.isfinite(x) for x in curves["sem"])
    assert "measured, not a check" in data["data"]["potts_comparison_note"]
    # the exact factored-attention check has the power to see sequences without structure
    fa = checks["attractor.potts.factored_attention_matches_theory"]
    assert fa["passed"] and fa["value"]["z_if_sites_independent"] > 3, fa["detail"]


def _check_resume_recomputes_nothing(out):
    res = CliRunner().invoke(main, ["validate", "--quick", "--section", "mlm", "--out", str(out),
                                    "--resume", "--no-progress"])
    assert res.exit_code == 0, res.output
    mlm = json.loads((out / "mlm.json").read_text())
    assert mlm["data"]["sweep"]["computed"] == 0 and mlm["passed"] is True


def test_python_m_validation_forwards_to_validate():
    proc = subprocess.run([sys.executable, "-m", "validation", "--help"], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "--quick / --full" in proc.stdout and "report.json" in proc.stdout


def test_failed_check_gives_exit_1(tmp_path, monkeypatch):
    import types

    from replica_mlm.validation.report import Check, Section

    def failing(out, *, quick, rng):
        return Section(name="broken", checks=[Check("broken.claim", False, 1.0, "< 0", "always fails")])

    module = types.ModuleType("replica_mlm_test_broken_section")
    module.run = failing
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(suite.SECTIONS, "mlm", module.__name__)  # stands in for a section that fails
    monkeypatch.setattr(suite, "available_sections", lambda: list(suite.SECTIONS))
    res = CliRunner().invoke(main, ["validate", "--section", "mlm", "--out", str(tmp_path)])
    assert res.exit_code == 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["passed"] is False and report["checks"][0]["name"] == "broken.claim"
    assert "FAILED" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("outcomes, exit_code, status", [
    ((False, True), 0, ["known deviation", "passed"]),     # the deviation fails as documented
    ((True, True), 1, ["unexpectedly passed", "passed"]),  # strict: a deviation that passes fails the run
    ((False, False), 1, ["known deviation", "failed"]),    # any other failure fails the run
])
def test_known_deviations_are_strict(tmp_path, monkeypatch, outcomes, exit_code, status):
    import types

    from replica_mlm.validation import known_deviations
    from replica_mlm.validation.report import Check, Section

    monkeypatch.setitem(known_deviations.KNOWN_DEVIATIONS, "demo.claim", "measured: 1 is not < 0")

    def section(out, *, quick, rng):
        return Section(name="demo", checks=[Check("demo.claim", outcomes[0], 1.0, "< 0", "a claim"),
                                            Check("demo.other", outcomes[1], 1.0, "> 0", "another")])

    module = types.ModuleType("replica_mlm_test_demo_section")
    module.run = section
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(suite.SECTIONS, "mlm", module.__name__)
    monkeypatch.setattr(suite, "available_sections", lambda: list(suite.SECTIONS))
    res = CliRunner().invoke(main, ["validate", "--section", "mlm", "--out", str(tmp_path)])
    assert res.exit_code == exit_code, res.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert [c["status"] for c in report["checks"]] == status and report["passed"] is (exit_code == 0)
    assert report["checks"][0]["known_deviation"] == "measured: 1 is not < 0"
    if status[0] == "known deviation":
        assert "known deviation (not reproduced: demo.claim)" in report["summary"]
        assert "[known deviation] demo.claim" in res.output
    else:
        assert "1 known deviation unexpectedly passed (demo.claim)" in report["summary"]
        assert "[UNEXPECTED PASS] demo.claim" in res.output
    if status[1] == "failed":
        assert "1 failed (demo.other)" in report["summary"]


def test_unknown_section_and_bad_options(tmp_path):
    with pytest.raises(ValueError, match="unknown section"):
        suite.run_suite(tmp_path, sections=["nope"])
    runner = CliRunner()
    for args in (["--section", "nope"], ["--workers", "0"], ["--seed", "-1"]):
        res = runner.invoke(main, ["validate", *args, "--out", str(tmp_path)])
        assert res.exit_code == 2, (args, res.output)
