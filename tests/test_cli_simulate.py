"""`replica-mlm simulate` and `replica-mlm equations`: files, numbers, resume, bad options."""

import csv
import json

import numpy as np
import pytest
from click.testing import CliRunner

import replica_mlm as rm
from replica_mlm.cli import main

ARGS = ["simulate", "--L", "50", "--alpha", "0.5", "--alpha", "2", "--lam", "0", "--lam", "0.1",
        "--seeds", "6", "--sample-seed", "3", "--no-progress"]


def test_simulate_writes_files_and_matches_the_library(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(main, [*ARGS, "--out", str(out)])
    assert res.exit_code == 0, res.output
    for name in ("simulate.csv", "simulate.json", "simulate.png", "simulate.pdf"):
        assert (out / name).stat().st_size > 0
    rows = list(csv.DictReader(open(out / "simulate.csv")))
    assert len(rows) == 4
    meta = json.loads((out / "simulate.json").read_text())
    assert meta["parameters"]["seeds"] == 6 and meta["version"] == rm.__version__
    assert meta["sweep"]["computed"] == 2 and meta["elapsed_seconds"] > 0
    # alpha number 1 (2.0) used SeedSequence(3, spawn_key=(1,))
    site = rm.GaussianPotts.random(L=50, shift=3.0, seed=0).masked_site(0)
    sim = rm.simulate(site, alpha=2.0, lam=[0.0, 0.1], seeds=6,
                      rng=np.random.default_rng(np.random.SeedSequence(3, spawn_key=(1,))))
    row = next(r for r in rows if float(r["alpha_target"]) == 2.0 and float(r["lam"]) == 0.1)
    assert float(row["eg_mean"]) == sim.eg_mean[1]
    assert float(row["eg_theory"]) == pytest.approx(rm.solve(site, alpha=sim.alpha, lam=0.1).eg, rel=1e-13)
    assert float(row["z"]) == pytest.approx((sim.eg_mean[1] - float(row["eg_theory"])) / sim.eg_stderr[1])


def test_simulate_resume_and_workers_give_the_same_table(tmp_path):
    runner = CliRunner()
    a, b = tmp_path / "a", tmp_path / "b"
    assert runner.invoke(main, [*ARGS, "--out", str(a)]).exit_code == 0
    res = runner.invoke(main, [*ARGS, "--out", str(b), "--workers", "2"])
    assert res.exit_code == 0, res.output
    assert (a / "simulate.csv").read_text() == (b / "simulate.csv").read_text()
    (b / "simulate_points" / "point-00001.json").unlink()  # as if the run had stopped half-way
    res = runner.invoke(main, [*ARGS, "--out", str(b), "--resume"])
    assert res.exit_code == 0, res.output
    assert json.loads((b / "simulate.json").read_text())["sweep"]["resumed"] == 1
    assert (a / "simulate.csv").read_text() == (b / "simulate.csv").read_text()


def test_simulate_bad_options_exit_2(tmp_path):
    runner = CliRunner()
    for args in (["--alpha", "0"], ["--alpha", "-1"], ["--lam", "-0.1"], ["--seeds", "1"],
                 ["--workers", "0"], ["--L", "1"], ["--shift", "1.0"], ["--site", "99"]):
        res = runner.invoke(main, ["simulate", "--L", "50", *args, "--out", str(tmp_path / "x")])
        assert res.exit_code == 2, (args, res.output)
        assert "Error" in res.output
    assert runner.invoke(main, [*ARGS, "--out", str(tmp_path / "y")]).exit_code == 0
    # a folder holding another sweep (7 training sets per point, not 6) is not resumed
    res = runner.invoke(main, [*ARGS, "--seeds", "7", "--out", str(tmp_path / "y"), "--resume"])
    assert res.exit_code == 2
    assert "--resume: --seeds differs (point 0): folder has 6, this run asks 7" in res.output
    # extending the alpha list keeps the finished points
    res = runner.invoke(main, [*ARGS, "--alpha", "3", "--out", str(tmp_path / "y"), "--resume"])
    assert res.exit_code == 0, res.output


def test_help_states_the_conventions():
    runner = CliRunner()
    for cmd in ("simulate", "validate", "equations"):
        res = runner.invoke(main, [cmd, "--help"])
        assert res.exit_code == 0
        text = " ".join(res.output.split())
        assert "alpha = n / p" in text and "(lam p / 2) |w|^2" in text and "factor 1/2" in text, cmd


def test_equations_plain_and_latex():
    runner = CliRunner()
    plain = runner.invoke(main, ["equations"])
    assert plain.exit_code == 0
    assert "V_hat:  V_hat = alpha/(V + 1)" in plain.output
    assert "eg:  e_g = -2*m + q + rho + sigma^2" in plain.output
    latex = runner.invoke(main, ["equations", "--latex"])
    assert latex.exit_code == 0 and latex.output.strip() == rm.equations(latex=True).strip()
