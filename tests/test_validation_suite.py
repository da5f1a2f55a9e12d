"""The quick validation suite, as CI runs it: every section passes, report shaped as documented."""

import json
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
#: mean image. If one of them starts to pass, this set (and the docs) must change.
NOT_REPRODUCED = {"attractor.digits.beyond_shrinkage.masked.test", "attractor.digits.recall.masked.test"}


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("validation")
    res = CliRunner().invoke(main, ["validate", "--quick", "--out", str(out), "--workers", "2",
                                    "--no-progress"])
    return out, res


def test_quick_suite_passes_but_for_the_claims_not_reproduced(quick_report):
    out, res = quick_report
    report = json.loads((out / "report.json").read_text())
    failed = {c["name"] for c in report["checks"] if not c["passed"]}
    assert failed == NOT_REPRODUCED, res.output
    assert res.exit_code == 1 and report["passed"] is False  # a failed check fails the run
    assert report["version"] == rm.__version__
    assert report["mode"] == "quick" and report["seeds"]["root"] == 0
    names = [c["name"] for c in report["checks"]]
    for prefix in ("mlm.a.", "mlm.c.", "mlm.d.", "attractor.", "erm."):
        assert any(n.startswith(prefix) for n in names), prefix
    for c in report["checks"]:
        assert set(c) >= {"name", "passed", "value", "threshold", "detail"} and c["passed"] is True
    sections = {s["name"].split(":")[0]: s for s in report["sections"]}
    assert "mlm" in sections
    for s in report["sections"]:
        for fig in s["figures"]:
            assert (out / fig).stat().st_size > 0, fig
    for fig in ("mlm_fig3_left", "mlm_zscores", "mlm_large_alpha"):
        assert (out / f"{fig}.png").exists() and (out / f"{fig}.pdf").exists()
    md = (out / "report.md").read_text()
    assert "Overall: FAILED" in md and "mlm.d.ks_normal" in md
    mlm = sections["mlm"]
    assert mlm["parameters"]["settings"]["lams"] == [0.0, 0.001, 0.1, 1.0]
    assert mlm["data"]["z_summary"]["n"] >= 200
    assert len(list((out / "mlm_points").glob("point-*.json"))) == mlm["data"]["sweep"]["points"]
    skipped = set(report["skipped_sections"])
    assert skipped == {n for n in suite.SECTIONS if n not in suite.available_sections()}


def test_quick_suite_resume_recomputes_nothing(quick_report):
    out, _ = quick_report
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


def test_unknown_section_and_bad_options(tmp_path):
    with pytest.raises(ValueError, match="unknown section"):
        suite.run_suite(tmp_path, sections=["nope"])
    runner = CliRunner()
    for args in (["--section", "nope"], ["--workers", "0"], ["--seed", "-1"]):
        res = runner.invoke(main, ["validate", *args, "--out", str(tmp_path)])
        assert res.exit_code == 2, (args, res.output)
