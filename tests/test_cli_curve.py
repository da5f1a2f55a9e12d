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


def test_curve_says_whether_every_point_converged(tmp_path):
    """One line after the run, the same record in curve.json; the residuals are the CSV's."""
    from replica_mlm.theory.solvers.root import RESIDUAL_TOL

    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["curve", "--L", "60", "--points", "9", "--lam", "0.01", "--lam", "0.1",
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(open(out / "curve.csv")))
    largest = max(float(r["residual"]) for r in rows)
    assert 0 < largest <= RESIDUAL_TOL
    assert f"converged: all 18 points (largest residual {largest:.2g})" in res.output.splitlines()
    meta = json.loads((out / "curve.json").read_text())
    assert meta["convergence"] == {"converged": True, "points": 18, "unconverged": [],
                                   "largest_residual": largest}


def test_convergence_names_the_points_that_did_not_converge():
    """The reduced route records residuals only (its curve says converged=True): a residual above
    the route's tolerance is a point that did not converge, named on the console and in the title."""
    from dataclasses import replace

    from replica_mlm.cli._convergence import of_curves, of_phase
    from replica_mlm.theory.solvers.root import RESIDUAL_TOL

    site = rm.GaussianPotts.random(L=60, shift=3.0, seed=0).masked_site(0)
    curve = rm.learning_curve(site, alpha=[0.5, 2.0, 3.0], lam=0.1)
    assert curve.method == "root" and of_curves([curve]).converged
    residual = curve.residual.copy()
    residual[1] = 1e3 * RESIDUAL_TOL
    bad = of_curves([replace(curve, residual=residual)])
    assert not bad.converged and bad.unconverged == ["lam=0.1, alpha=2"]
    assert bad.line() == ("warning: 1 of 3 points did not converge "
                          f"(largest residual {1e3 * RESIDUAL_TOL:.2g}): lam=0.1, alpha=2")
    assert bad.note() == "1 of 3 points did not converge"
    assert bad.as_dict()["converged"] is False
    pd = rm.phase_diagram(site, alpha=[0.5, 2.0], lam=[0.01, 0.1], optimal=True)
    assert pd.converged.shape == (3, 2) and pd.converged.all()  # the optimal line: the last row
    ok = pd.converged.copy()
    ok[2, 0] = ok[0, 1] = False
    assert of_phase(replace(pd, converged=ok)).unconverged == ["lam=0.01, alpha=2", "optimal lam, alpha=0.5"]
    many = of_phase(replace(pd, converged=np.zeros_like(ok)))
    assert many.line().endswith("and 1 more") and many.points == 6
