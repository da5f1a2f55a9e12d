"""The API composes: several lam, several alpha, vectorised optimal lambda, pandas, load, rng=."""

from __future__ import annotations

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.sweep import point_rng

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
