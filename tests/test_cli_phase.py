"""`replica-mlm phase`: files, numbers equal to the library's, bad options exit 2."""

import csv
import json

import numpy as np
from click.testing import CliRunner

import replica_mlm as rm
from replica_mlm.cli import main


def test_phase_limit_writes_files(tmp_path):
    out = tmp_path / "ph"
    res = CliRunner().invoke(main, ["phase", "--limit", "--points", "6", "--lam-points", "4",
                                    "--no-optimal", "--out", str(out)])
    assert res.exit_code == 0, res.output
    for name in ("phase.csv", "phase_lines.csv", "phase.json", "phase.png", "phase.pdf"):
        assert (out / name).stat().st_size > 0
    rows = list(csv.DictReader(open(out / "phase.csv")))
    assert len(rows) == 24
    r = rows[5]
    sp = rm.solve(rm.GaussianPotts.limit(shift=3.0), alpha=float(r["alpha"]), lam=float(r["lam"]))
    assert np.isclose(float(r["eg"]), sp.eg, rtol=1e-13)
    assert json.loads((out / "phase.json").read_text())["parameters"]["axis"] == "lam"


def test_phase_shift_axis(tmp_path):
    res = CliRunner().invoke(main, ["phase", "--axis", "shift", "--points", "5", "--shift-points", "3",
                                    "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(open(tmp_path / "phase.csv")))
    assert {float(r["shift"]) for r in rows} == {2.05, 4.025, 6.0}


def test_phase_bad_options(tmp_path):
    runner = CliRunner()
    for args in (["--lam-min", "1", "--lam-max", "0.1"], ["--limit", "--shift", "1.5"],
                 ["--shift-min", "1.0"], ["--axis", "beta"], ["--lam-min", "-1"]):
        res = runner.invoke(main, ["phase", *args, "--out", str(tmp_path)])
        assert res.exit_code == 2, (args, res.output)


def test_phase_says_whether_every_point_converged(tmp_path):
    """The grid and the optimal-lam line: one line, and the record in phase.json."""
    out = tmp_path / "p"
    res = CliRunner().invoke(main, ["phase", "--L", "40", "--points", "8", "--lam-points", "5",
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    meta = json.loads((out / "phase.json").read_text())
    record = meta["convergence"]
    assert record["converged"] is True and record["points"] == 8 * 5 + 8
    assert f"converged: all 48 points (largest residual {record['largest_residual']:.2g})" in res.output
