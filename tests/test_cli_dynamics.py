"""`replica-mlm dynamics`: files written, numbers equal the library's, bad options exit 2."""

import csv
import json

import pytest
from click.testing import CliRunner

import replica_mlm as rm
from replica_mlm.cli import main


def test_dynamics_writes_csv_json_and_figures(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["dynamics", "--L", "60", "--points", "5", "--alpha-max", "2",
                                    "--lr", "0.5", "--lr", "1", "--exact", "--flow-alpha", "2",
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    for name in ("dynamics.csv", "flow.csv", "dynamics.json", "dynamics.png", "dynamics.pdf"):
        assert (out / name).stat().st_size > 0
    rows = list(csv.DictReader(open(out / "dynamics.csv")))
    assert len(rows) == 10 and {float(r["lr"]) for r in rows} == {0.5, 1.0}
    meta = json.loads((out / "dynamics.json").read_text())
    assert meta["parameters"]["exact"] is True and meta["rows"]["dynamics.csv"] == 10
    site = rm.GaussianPotts.random(L=60, shift=3.0, seed=0).masked_site(0)
    row = rows[-1]
    dyn = rm.online_sgd(site, alpha=[float(row["alpha"])], lr=float(row["lr"]), exact=True)
    assert float(row["eg"]) == pytest.approx(float(dyn.eg[0]), rel=1e-12)
    flow = list(csv.DictReader(open(out / "flow.csv")))
    end = rm.solve(site, alpha=2.0, lam=0).eg
    assert len(flow) == 101 and float(flow[-1]["end_eg"]) == pytest.approx(end)


def test_dynamics_bad_options_exit_2(tmp_path):
    runner = CliRunner()
    for args in (["--lr", "-1"], ["--lr", "100"], ["--batch", "0"], ["--flow-alpha", "1", "--loss", "huber"],
                 ["--limit", "--exact"]):
        res = runner.invoke(main, ["dynamics", "--L", "30", "--points", "3", *args, "--out", str(tmp_path)])
        assert res.exit_code == 2, (args, res.output)
        assert "Error" in res.output


def test_dynamics_of_a_q_colour_site(tmp_path):
    # --colours: site 1 of rm.PottsModel.random(L=6, q=3, seed=2, beta=1.5), the softmax cross-entropy
    out = tmp_path / "potts"
    args = ["dynamics", "--colours", "3", "--L", "6", "--seed", "2", "--beta", "1.5", "--site", "1",
            "--points", "3", "--alpha-max", "1"]
    res = CliRunner().invoke(main, [*args, "--lr", "0.5", "--out", str(out)])
    assert res.exit_code == 0, res.output
    for name in ("dynamics.csv", "dynamics.json", "dynamics.png", "dynamics.pdf"):
        assert (out / name).stat().st_size > 0
    rows = list(csv.DictReader(open(out / "dynamics.csv")))
    assert len(rows) == 3 and {(r["loss"], r["channel"]) for r in rows} == {("cross_entropy", "softmax")}
    meta = json.loads((out / "dynamics.json").read_text())
    assert meta["parameters"]["colours"] == 3 and meta["K"] == 2 and meta["rows"]["dynamics.csv"] == 3
    site = rm.PottsModel.random(L=6, q=3, seed=2, beta=1.5).masked_site(1, rng=2)
    dyn = rm.online_sgd(site, alpha=[0.0, 0.5, 1.0], lr=0.5)
    for name in ("eg", "test_loss", "estimation_error", "m", "q"):
        assert [float(r[name]) for r in rows] == pytest.approx(getattr(dyn, name), rel=1e-12), name
    # what the planner does not serve on a q-colour site is refused with its message (exit 2)
    runner = CliRunner()
    for extra, message in ((["--loss", "hinge"], "learns with loss='cross_entropy'"),
                           (["--channel", "sign"], "learns with loss='cross_entropy'"),
                           (["--exact"], "takes exact=False"), (["--flow-alpha", "1"], "one-pass SGD only"),
                           (["--limit"], "--colours takes an instance"), (["--colours", "2"], "x>=3")):
        res = runner.invoke(main, [*args, *extra, "--out", str(tmp_path / "bad")])
        assert res.exit_code == 2 and message in " ".join(res.output.split()), (extra, res.output)
    res = runner.invoke(main, ["dynamics", "--L", "30", "--loss", "cross_entropy", "--out",
                               str(tmp_path / "x")])
    assert res.exit_code == 2 and "give --colours" in res.output
