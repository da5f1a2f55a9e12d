"""The API composes: several lam, several alpha, vectorised optimal lambda, pandas, load, rng=."""

from __future__ import annotations

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm._base.sweep import point_rng

SITE = rm.GaussianPotts.random(L=40, shift=3.0, seed=0).masked_site(0)
LIM = rm.GaussianPotts.limit(shift=3.0)
GRID = np.linspace(0.2, 3.0, 9)


def test_learning_curve_several_lam_is_one_curve_per_lam():
    curves = rm.learning_curve(SITE, alpha=GRID, lam=[1e-3, 0.1, 1e-3])
    assert isinstance(curves, list) and [c.lam for c in curves] == [1e-3, 0.1, 1e-3]
    for c in curves:
        one = rm.learning_curve(SITE, alpha=GRID, lam=c.lam)
        assert isinstance(one, rm.LearningCurve)
        assert np.array_equal(c.eg, one.eg) and np.array_equal(c.alpha, one.alpha)
    # a 0-d array or numpy scalar is one lam: the same single curve as a float
    for lam in (np.float64(0.1), np.array(0.1)):
        single = rm.learning_curve(SITE, alpha=GRID, lam=lam)
        assert isinstance(single, rm.LearningCurve) and np.array_equal(single.eg, curves[1].eg)
    # the general engine too
    gen = rm.learning_curve(LIM, alpha=[0.5, 2.0], lam=(0.1, 1.0), loss="absolute")
    assert [c.lam for c in gen] == [0.1, 1.0] and all(c.loss == "absolute" for c in gen)


@pytest.mark.parametrize("lam", [[[0.1]], [], [0.1, -1.0], [0.1, np.nan]])
def test_learning_curve_bad_lam_sequence(lam):
    with pytest.raises(ValueError, match="lam"):
        rm.learning_curve(SITE, alpha=GRID, lam=lam)


def test_simulate_several_alpha_matches_the_cli_seeding():
    sims = rm.simulate(SITE, alpha=[0.5, 2.0], lam=[0.0, 0.1], seeds=3, rng=7)
    assert isinstance(sims, list) and [s.alpha for s in sims] == [20 / 39, 78 / 39]
    # alpha number k uses SeedSequence(rng, spawn_key=(k,)), the generator of the CLI sweep
    for k, a in enumerate((0.5, 2.0)):
        one = rm.simulate(SITE, alpha=a, lam=[0.0, 0.1], seeds=3, rng=point_rng(7, k))
        assert isinstance(one, rm.Simulation)
        assert np.array_equal(one.eg, sims[k].eg) and np.array_equal(one.train_loss, sims[k].train_loss)
    # a Generator works too and a 0-d alpha is one Simulation
    assert isinstance(rm.simulate(SITE, alpha=np.array(2.0), lam=0.1, seeds=2, rng=0), rm.Simulation)
    with pytest.raises(ValueError, match="alpha"):
        rm.simulate(SITE, alpha=[2.0, 0.0], lam=0.1, seeds=2, rng=0)


def test_optimal_lambda_vectorised_equals_pointwise():
    alphas = np.array([0.5, 1.5, 3.0])
    res = rm.optimal_lambda(LIM, alpha=alphas)
    assert isinstance(res, rm.OptimalLambda) and res.lam_opt.shape == (3,) and len(res) == 3
    assert res.converged and not res.at_bound.any()
    for i, a in enumerate(alphas):
        one = rm.optimal_lambda(LIM, alpha=float(a))
        assert one.lam_opt.shape == () and one.alpha.shape == ()
        assert float(one.lam_opt) == res.lam_opt[i] and float(one.eg_opt) == res.eg_opt[i]
        # the optimum beats its neighbours (an independent check of the minimisation)
        for f in (0.98, 1.02):
            assert res.eg_opt[i] < rm.solve(LIM, alpha=float(a), lam=res.lam_opt[i] * f).eg
        assert res.points[i].eg == res.eg_opt[i] and res.points[i].lam == res.lam_opt[i]


def test_optimal_lambda_at_bound_is_flagged():
    # noiseless task at alpha = 3: the smaller lam the better, so the optimum is the lower bound
    spec = rm.Spectrum(omega=[0.5, 2.0], bulk=[0.5, 0.5], teacher=[0.2, 0.3], noise=0.0)
    res = rm.optimal_lambda(spec, alpha=3.0, bounds=(1e-3, 1.0))
    assert bool(res.at_bound) and float(res.lam_opt) == 1e-3
    assert "lower bound" in res.points[0].message


def test_plot_learning_curves_takes_simulation_objects():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = rm.learning_curve(SITE, alpha=GRID, lam=[1e-3, 0.1])
    sims = rm.simulate(SITE, alpha=[0.5, 2.0], lam=[1e-3, 0.1], seeds=3, rng=1)
    fig = rm.plotting.plot_learning_curves(curves, simulations=sims)
    ax = fig.axes[0]
    # one error bar per (alpha, lam), at the Simulation's realised alpha and mean eg
    got = sorted((float(c.lines[0].get_xdata()[0]), float(c.lines[0].get_ydata()[0]))
                 for c in ax.containers)
    want = sorted((s.alpha, float(m)) for s in sims for m in s.eg_mean)
    assert got == want
    plt.close(fig)
    # the tuples of before still work, and mix with Simulations
    fig = rm.plotting.plot_learning_curves(curves, simulations=[sims[0], (2.0, 0.1, 0.5, 0.01)])
    assert len(fig.axes[0].containers) == 3
    plt.close(fig)


# ------------------------------------------------------------------ pandas and rm.load
def _equal_curves(a, b) -> None:
    from dataclasses import fields

    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), f.name
        else:
            assert x == y and type(x) is type(y), f.name


def test_to_frame_of_every_result():
    curve = rm.learning_curve(SITE, alpha=GRID, lam=0.1)
    df = curve.to_frame()
    assert list(df.columns[:3]) == ["lam", "alpha", "eg"] and len(df) == GRID.size
    assert np.array_equal(df["eg"].to_numpy(), curve.eg) and (df["lam"] == 0.1).all()
    assert (df["loss"] == "square").all() and df["iterations"].dtype == curve.iterations.dtype
    sp = rm.solve(SITE, alpha=1.5, lam=0.1)
    one = sp.to_frame()
    assert len(one) == 1 and one.loc[0, "eg"] == sp.eg and one.loc[0, "method"] == sp.method
    sim = rm.simulate(SITE, alpha=2.0, lam=[0.0, 0.1, 1.0], seeds=4, rng=0)
    sf = sim.to_frame()
    assert len(sf) == 12 and set(sf["sample"]) == {0, 1, 2, 3}
    # the frame's (sample, lam) rows are the Simulation's (seed, lam) entries
    assert np.array_equal(sf.pivot(index="sample", columns="lam", values="eg").to_numpy(), sim.eg)
    assert np.allclose(sf.groupby("lam")["eg"].mean().to_numpy(), sim.eg_mean, rtol=1e-14, atol=0)
    opt = rm.optimal_lambda(LIM, alpha=[0.5, 2.0])
    of = opt.to_frame()
    assert np.array_equal(of["lam_opt"].to_numpy(), opt.lam_opt) and (of["converged"]).all()
    assert np.array_equal(of["q"].to_numpy(), [p.q for p in opt.points])


def test_load_learning_curves_round_trip_with_inf_and_nan(tmp_path):
    curves = rm.learning_curve(LIM, alpha=[0.5, 1.0, 2.0], lam=[0.0, 0.1])
    assert np.isinf(curves[0].eg[1])  # the interpolation peak at lam = 0
    from dataclasses import replace

    curves[1] = replace(curves[1], kappa=np.array([np.nan, 1.0, -np.inf]))
    from replica_mlm.theory.studies.curve import curves_to_csv

    curves_to_csv(curves, tmp_path / "c.csv")
    back = rm.load(tmp_path / "c.csv")
    assert len(back) == 2
    for a, b in zip(curves, back, strict=True):
        _equal_curves(a, b)
    gen = rm.learning_curve(LIM, alpha=[0.5, 2.0], lam=0.1, loss="huber")
    gen.to_csv(tmp_path / "g.csv")
    _equal_curves(gen, rm.load(str(tmp_path / "g.csv"))[0])


def test_load_reads_what_the_cli_writes(tmp_path):
    from click.testing import CliRunner

    from replica_mlm.cli import main

    run = CliRunner().invoke
    res = run(main, ["curve", "--L", "30", "--alpha-min", "0.5", "--alpha-max", "1.5", "--points", "3",
                     "--lam", "0", "--lam", "0.01", "--out", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    site = rm.GaussianPotts.random(L=30, shift=3.0, seed=0).masked_site(0)
    fresh = rm.learning_curve(site, alpha=np.linspace(0.5, 1.5, 3), lam=[0.0, 0.01])
    for got, want in zip(rm.load(tmp_path / "c" / "curve.csv"), fresh, strict=True):
        _equal_curves(got, want)
    meta = rm.load(tmp_path / "c" / "curve.json")
    assert meta["parameters"]["lam"] == [0.0, 0.01] and meta["rho"] == site.rho

    res = run(main, ["phase", "--limit", "--points", "4", "--lam-points", "3", "--out", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    pdiag = rm.phase_diagram(LIM, alpha=np.linspace(0.05, 4.0, 4), lam=np.geomspace(1e-4, 10.0, 3))
    frame = rm.load(tmp_path / "p" / "phase.csv")
    assert list(frame.columns) == ["lam", "alpha", "eg", "train_loss", "deg_dalpha"]
    assert np.array_equal(frame["eg"].to_numpy().reshape(3, 4), pdiag.eg)
    assert np.array_equal(frame["deg_dalpha"].to_numpy().reshape(3, 4), pdiag.deg_dalpha)
    lines = rm.load(tmp_path / "p" / "phase_lines.csv")
    assert np.array_equal(lines.loc[lines["line"] == "optimal_lam", "lam"].to_numpy(), pdiag.optimal_lam)

    res = run(main, ["simulate", "--L", "30", "--alpha", "0.5", "--alpha", "2", "--lam", "0.1",
                     "--seeds", "3", "--sample-seed", "5", "--no-progress", "--out", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    table = rm.load(tmp_path / "s" / "simulate.csv")
    sims = rm.simulate(site, alpha=[0.5, 2.0], lam=0.1, seeds=3, rng=5)
    assert np.array_equal(table["eg_mean"].to_numpy(), [s.eg_mean[0] for s in sims])
    assert np.array_equal(table["eg_stderr"].to_numpy(), [s.eg_stderr[0] for s in sims])
    assert table["n"].dtype.kind == "i"
    assert rm.load(tmp_path / "s" / "simulate.json")["parameters"]["seeds"] == 3


@pytest.mark.parametrize("path, error", [(None, TypeError), (3, TypeError), ("x.txt", ValueError),
                                         (b"x.csv", TypeError)])
def test_load_bad_path(path, error):
    with pytest.raises(error, match="path"):
        rm.load(path)


# ------------------------------------------------------------------ one spelling for randomness
@pytest.mark.parametrize("make", [
    lambda **k: rm.GaussianPotts.random(L=6, **k).couplings,
    lambda **k: rm.PottsModel.random(L=4, q=3, **k).couplings,
    lambda **k: rm.PottsModel.random_ising(L=4, beta=0.5, **k).couplings,
])
def test_rng_and_its_seed_alias(make):
    assert np.array_equal(make(rng=3), make(seed=3))
    assert np.array_equal(make(rng=np.random.default_rng(3)), make(seed=3))
    assert not np.array_equal(make(rng=3), make(rng=4))
    with pytest.raises(ValueError, match="rng= or its alias seed=, not both"):
        make(rng=3, seed=3)
    with pytest.raises(TypeError, match="rng"):
        make(rng=1.5)


def test_default_randomness_is_unchanged():
    # PottsModel.random and random_ising default to seed 0, GaussianPotts.random to fresh entropy
    assert np.array_equal(rm.PottsModel.random(L=4, q=3).couplings, rm.PottsModel.random(4, 3, 0).couplings)
    assert np.array_equal(rm.PottsModel.random_ising(L=4, beta=0.5).couplings,
                          rm.PottsModel.random_ising(L=4, beta=0.5, rng=0).couplings)
    assert not np.array_equal(rm.GaussianPotts.random(L=6).couplings, rm.GaussianPotts.random(L=6).couplings)


def test_public_signatures_spell_randomness_rng():
    """Every public callable that takes randomness takes rng= (seed= only as an alias beside it)."""
    import inspect

    names = [getattr(rm, n) for n in rm.__all__ if n not in ("TransformerMLM", "plotting", "losses")]
    callables = []
    for obj in names:
        if inspect.isclass(obj):
            callables += [getattr(obj, m) for m in dir(obj)
                          if not m.startswith("_") and callable(getattr(obj, m))]
            callables.append(obj)
        elif callable(obj):
            callables.append(obj)
    seen = 0
    for fn in callables:
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        assert "random_state" not in params, fn
        if "seed" in params:
            assert "rng" in params, f"{fn.__qualname__} takes seed= without rng="
            seen += 1
    assert seen == 3  # GaussianPotts.random, PottsModel.random, PottsModel.random_ising


def test_load_reads_the_validation_report_with_inf_and_nan(tmp_path):
    from replica_mlm.validation.report import Check, Section, write_report

    section = Section(name="mlm", checks=[Check("mlm.z", True, [np.inf, np.nan, 0.1 + 0.2], 3.0, "z")],
                      data={"eg": np.array([1.0, np.inf])})
    written = write_report(tmp_path, [section], seed=7)
    back = rm.load(tmp_path / "report.json")
    value = back["checks"][0]["value"]
    assert value[0] == np.inf and np.isnan(value[1]) and value[2] == 0.1 + 0.2
    assert back["sections"][0]["data"]["eg"] == [1.0, np.inf] and back["seed"] == 7
    assert back["passed"] is written["passed"] is True
