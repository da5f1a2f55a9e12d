"""`replica-mlm curve`: files written, numbers equal the library's, bad options exit 2."""

import csv
import json

import numpy as np
import pytest
from click.testing import CliRunner

import replica_mlm as rm
from replica_mlm.cli import main


def test_curve_writes_csv_json_and_figures(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["curve", "--L", "60", "--points", "7", "--lam", "0.01",
                                    "--lam", "0", "--out", str(out)])
    assert res.exit_code == 0, res.output
    for name in ("curve.csv", "curve.json", "curve.png", "curve.pdf"):
        assert (out / name).stat().st_size > 0
    rows = list(csv.DictReader(open(out / "curve.csv")))
    assert len(rows) == 14 and {float(r["lam"]) for r in rows} == {0.0, 0.01}
    meta = json.loads((out / "curve.json").read_text())
    assert meta["parameters"]["L"] == 60 and meta["version"] == rm.__version__
    site = rm.GaussianPotts.random(L=60, shift=3.0, seed=0).masked_site(0)
    row = next(r for r in rows if float(r["lam"]) == 0.01)
    sp = rm.solve(site, alpha=float(row["alpha"]), lam=0.01)
    # same equations; Newton's start depends on the batch, so agreement is to rounding
    assert float(row["eg"]) == pytest.approx(sp.eg, rel=1e-13)
    assert np.isclose(meta["c_ii"], site.c_ii)


def test_curve_bad_options_exit_2(tmp_path):
    runner = CliRunner()
    for args in (["--lam", "-1"], ["--L", "1"], ["--alpha-min", "2", "--alpha-max", "1"],
                 ["--shift", "1.0"], ["--site", "600"], ["--points", "x"]):
        res = runner.invoke(main, ["curve", *args, "--out", str(tmp_path)])
        assert res.exit_code == 2, (args, res.output)
        assert "Error" in res.output


def test_curve_in_the_limit(tmp_path):
    res = CliRunner().invoke(main, ["curve", "--limit", "--points", "5", "--lam", "0.01",
                                    "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(open(tmp_path / "curve.csv")))
    lim = rm.GaussianPotts.limit(shift=3.0)
    assert float(rows[0]["noise"]) == lim.noise
    sp = rm.solve(lim, alpha=float(rows[2]["alpha"]), lam=0.01)
    assert float(rows[2]["eg"]) == pytest.approx(sp.eg, rel=1e-13)
    bad = CliRunner().invoke(main, ["curve", "--limit", "--shift", "1.9", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "shift must be > 2" in bad.output
