"""Learning dynamics (docs/dynamics.md): one-pass SGD and gradient flow against simulations at
fixed seeds (tolerances in standard errors), the exact recursion against its p -> infinity limit,
gradient flow against the replica end point and an independent Marchenko-Pastur integral."""

import math

import numpy as np
import pytest
from scipy import integrate

import replica_mlm as rm
from replica_mlm.theory.sides import channels, losses, sgd_fields, sgd_modes


def _site(p: int, rng: int = 2):
    return rm.GaussianPotts.random(p + 1, 3.0, rng=rng).masked_site(0)


@pytest.fixture(scope="module")
def site50():
    return _site(50)


@pytest.fixture(scope="module")
def site300():
    return _site(300, rng=1)


@pytest.fixture(scope="module")
def site1600():
    return _site(1600, rng=1)


@pytest.mark.parametrize("lam, batch", [(0.0, 1), (0.2, 3)])
def test_exact_recursion_matches_simulated_sgd_at_p50(site50, lam, batch):
    grid = np.linspace(0.2, 4.0, 20)
    sim = rm.simulate_sgd(site50, alpha=grid, lr=1.0, lam=lam, batch=batch, seeds=1500, rng=0)
    assert sim.theory.exact and sim.theory.p == 50
    # 20 times of one set of runs: the largest of 20 (correlated) |z| is held to 3.5, a two-sided
    # family-wise bound (Bonferroni: below a 1 % false alarm), on a seed fixed before looking
    assert np.all(np.abs(sim.z) < 3.5), sim.z
    # the other measures too: |w - w*|^2 and q against the same recursion
    for name in ("estimation_error", "q", "m"):
        z = (getattr(sim, f"{name}_mean") - getattr(sim.theory, name)) / getattr(sim, f"{name}_stderr")
        assert np.all(np.abs(z) < 3.5), (name, z)


@pytest.mark.slow
def test_exact_recursion_matches_simulated_sgd_at_p500():
    sim = rm.simulate_sgd(_site(500), alpha=np.linspace(0.2, 4.0, 20), lr=1.0, seeds=400, rng=0)
    assert np.all(np.abs(sim.z) < 3.5), sim.z  # the family-wise bound of the p = 50 test


def test_exact_minus_limit_is_order_one_over_p(site1600):
    grid = np.linspace(0.0, 3.0, 7)
    scaled = []
    for p in (100, 400, 1600):
        site = site1600 if p == 1600 else _site(p, rng=1)
        exact = rm.online_sgd(site, alpha=grid, lr=0.5, exact=True)
        limit = rm.online_sgd(site, alpha=grid, lr=0.5)
        scaled.append(p * np.max(np.abs(exact.eg - limit.eg)))
    # p |difference| settles to a constant: O(1/p), not slower
    assert 0.0 < scaled[2] < 1.3 * scaled[1] and scaled[1] < 1.3 * scaled[0]
    assert abs(scaled[2] / scaled[1] - 1.0) < 0.15


def test_limit_integrator_has_converged(site50):
    spec, grid = site50.spectrum, np.linspace(0.0, 6.0, 13)
    kw = dict(lr=1.5, lam=0.1, batch=2, alpha=grid)
    coarse = sgd_modes.limit_moments(spec.omega, spec.bulk, spec.teacher, spec.noise, **kw)
    fine = sgd_modes.limit_moments(spec.omega, spec.bulk, spec.teacher, spec.noise, steps_per_rate=1600, **kw)
    assert np.max(np.abs(coarse.eg - fine.eg)) < 1e-7


def test_general_odes_reduce_to_the_square_limit(site50):
    grid = np.linspace(0.0, 4.0, 9)
    square = rm.online_sgd(site50, alpha=grid, lr=0.8, lam=0.1, batch=2)
    general = sgd_fields.online_moments(site50.spectrum, losses.resolve("square"),
                                        channels.resolve("gaussian"), lr=0.8, lam=0.1, batch=2, alpha=grid)
    for name in ("eg", "m", "q", "estimation_error"):
        np.testing.assert_allclose(getattr(general, name), getattr(square, name), rtol=1e-7, atol=1e-9)


def test_online_hebb_reproduces_the_classical_curve():
    # isotropic noiseless perceptron learnt by Hebb's rule, the linear loss -y z:
    # eps(alpha) = arccos(sqrt(2 alpha / (2 alpha + pi))) / pi (Vallet 1989)
    y, z = _symbols()
    hebb = rm.losses.Loss.from_sympy(-y * z, y, z, name="hebb")
    spec = rm.Spectrum(omega=np.ones(1), bulk=np.ones(1), teacher=np.ones(1), noise=0.0)
    grid = np.array([0.5, 1.0, 2.0, 5.0, 10.0])
    dyn = rm.online_sgd(spec, alpha=grid, lr=1.0, loss=hebb, channel="sign")
    expect = np.arccos(np.sqrt(2 * grid / (2 * grid + np.pi))) / np.pi
    np.testing.assert_allclose(dyn.eg, expect, rtol=1e-6)


def _symbols():
    import sympy as sp

    return sp.symbols("y z", real=True)


def test_learning_rate_beyond_the_edge_is_refused(site50, site1600):
    limit = rm.online_sgd(site50, alpha=[1.0], lr=0.5)
    exact = rm.online_sgd(site50, alpha=[1.0], lr=0.5, exact=True)
    with pytest.raises(ValueError, match="lr_max = "):
        rm.online_sgd(site50, alpha=[1.0], lr=1.01 * limit.lr_max)
    with pytest.raises(ValueError, match="lr_max = "):
        rm.online_sgd(site50, alpha=[1.0], lr=exact.lr_max * 1.0001, exact=True)
    # the edge is real: just below it the exact recursion settles, just above it grows without bound
    s, t, noise = site50.spectrum.omega, site50.spectrum.teacher, site50.noise
    steps = np.array([10000, 20000])
    below = sgd_modes.exact_moments(s, t, noise, lr=0.98 * exact.lr_max, lam=0.0, batch=1, steps=steps)
    above = sgd_modes.exact_moments(s, t, noise, lr=1.02 * exact.lr_max, lam=0.0, batch=1, steps=steps)
    assert np.all(np.isfinite(below.eg)) and below.eg[1] < 10 * below.eg[0]
    assert above.eg[1] > 100 * above.eg[0] or not np.isfinite(above.eg[1])
    # the exact edge tends to the limit's as p grows
    e1, e2 = (rm.online_sgd(site1600, alpha=[0.1], lr=0.5, exact=ex).lr_max for ex in (True, False))
    assert abs(e1 / e2 - 1) < 5e-3


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("lam", [0.0, 0.1])
def test_gradient_flow_ends_at_the_replica_solution(alpha, lam, site300):
    site = site300
    flow = rm.gradient_flow(site, alpha=alpha, time=[1e-3, 1e4], lam=lam)
    assert abs(flow.eg[0] - site.c_ii) < 1e-3 * site.c_ii  # w(0) = 0
    end = rm.solve(site, alpha=alpha, lam=lam)
    if math.isinf(end.eg):  # alpha = 1, lam = 0: the flow grows without bound
        assert flow.eg[1] > 5 * site.c_ii
        return
    assert abs(flow.eg[1] / end.eg - 1) < 1e-8
    assert abs(flow.m[1] / end.m - 1) < 1e-8
    assert abs(flow.train_loss[1] - end.train_loss) < 1e-8 * max(end.train_loss, site.c_ii)
    assert abs(flow.estimation_error[1] / end.estimation_error - 1) < 1e-7


def _mp_flow(t, alpha, lam, rho, noise):
    """eg(t) of gradient flow for Sigma = I by direct integrals over the Marchenko-Pastur law."""
    mu, g = lam / alpha, 1.0 / alpha
    lo, hi = (1 - math.sqrt(g)) ** 2, (1 + math.sqrt(g)) ** 2

    def density(x):
        return math.sqrt(max((hi - x) * (x - lo), 0.0)) / (2 * math.pi * g * x)

    def h(x):  # the bias filter 1 - x g_t(x)
        return (mu + x * math.exp(-t * (x + mu))) / (x + mu)

    def gain(x):
        return -math.expm1(-t * (x + mu)) / (x + mu)

    bias = integrate.quad(lambda x: h(x) ** 2 * density(x), lo, hi, epsabs=1e-13, epsrel=1e-12, limit=200)[0]
    var = integrate.quad(lambda x: x * gain(x) ** 2 * density(x), lo, hi, epsabs=1e-13, epsrel=1e-12,
                         limit=200)[0]
    bias += max(1 - alpha, 0.0)  # Sigma-hat's zero eigenvalues (alpha < 1), where h = 1
    return noise + rho * bias + noise * g * var


@pytest.mark.parametrize("alpha, lam", [(0.5, 0.0), (2.0, 0.0), (2.0, 0.1), (0.5, 0.1)])
def test_isotropic_flow_matches_marchenko_pastur_integrals(alpha, lam):
    spec = rm.Spectrum(omega=np.ones(1), bulk=np.ones(1), teacher=np.array([0.3]), noise=0.5)
    times = np.array([0.1, 1.0, 5.0, 30.0])
    flow = rm.gradient_flow(spec, alpha=alpha, time=times, lam=lam)
    direct = [_mp_flow(t, alpha, lam, 0.3, 0.5) for t in times]
    np.testing.assert_allclose(flow.eg, direct, rtol=1e-8)


def test_isotropic_early_stopping_is_no_better_than_the_best_ridge():
    # Sigma = I with an isotropic teacher: the optimal ridge is Bayes-optimal, so no stopping time
    # beats it; early stopping comes close (within a few per cent)
    spec = rm.Spectrum(omega=np.ones(1), bulk=np.ones(1), teacher=np.array([0.3]), noise=0.5)
    flow = rm.gradient_flow(spec, alpha=2.0, time=np.logspace(-2, 3, 201))
    assert flow.best.eg >= flow.best.ridge_eg * (1 - 1e-9)
    assert flow.best.eg < 1.05 * flow.best.ridge_eg
    assert math.isfinite(flow.best.time) and flow.best.eg <= flow.eg.min() + 1e-15
    assert flow.best.eg < flow.end.eg


@pytest.mark.parametrize("alpha, lam", [(2.0, 0.0), (0.5, 0.1)])
def test_gradient_flow_matches_simulated_flow_at_p300(alpha, lam, site300):
    site = site300
    sim = rm.simulate_gradient_flow(site, alpha=alpha, time=np.logspace(-1, 3, 6), lam=lam, seeds=24, rng=0)
    assert np.all(np.abs(sim.z) < 3.0), sim.z
    z_train = (sim.train_loss_mean - sim.theory.train_loss) / sim.train_loss_stderr
    assert np.all(np.abs(z_train) < 3.0), z_train


def test_results_and_refusals(site50):
    dyn = rm.online_sgd(site50, alpha=np.array([2.0, 0.0, 1.0]), lr=0.5, exact=True)
    assert dyn.eg[1] == pytest.approx(site50.c_ii) and list(dyn.to_frame().columns[:2]) == ["alpha", "eg"]
    np.testing.assert_allclose(dyn.test_loss, dyn.eg / 2)
    assert dyn.eg[0] < dyn.eg[2] or dyn.eg[0] > dyn.eg[2]  # ordered back to the times given
    np.testing.assert_allclose(dyn.alpha, [2.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="exact=True needs a finite task"):
        rm.online_sgd(rm.GaussianPotts.limit(3.0), alpha=[1.0], lr=0.5, exact=True)
    with pytest.raises(ValueError, match="exact=True is the square loss"):
        rm.online_sgd(site50, alpha=[1.0], lr=0.5, loss="huber", exact=True)
    with pytest.raises(ValueError, match="dynamical mean-field"):
        rm.gradient_flow(site50, alpha=2.0, time=[1.0], loss="huber")
    with pytest.raises(ValueError, match="theory='mixture'"):
        rm.online_sgd(site50, alpha=[1.0], lr=0.5, theory="mixture")
    with pytest.raises(ValueError, match="draws samples"):
        rm.simulate_sgd(site50.spectrum, alpha=[1.0], lr=0.5)
    with pytest.raises(ValueError, match="lr"):
        rm.online_sgd(site50, alpha=[1.0], lr=-1.0)
    with pytest.raises(TypeError, match="did you mean 'batch'"):
        rm.online_sgd(site50, alpha=[1.0], lr=0.5, batch_size=2)


def test_equations_of_the_dynamics_come_from_the_loss():
    import sympy as sp

    from replica_mlm.theory.studies import dynamics_equations as de
    from replica_mlm.theory.symbolic import potentials as P

    eqs = rm.equations(dynamics=True)
    assert str(eqs).startswith("one-pass SGD")
    # sympy's Gaussian moments of the square loss's derivative: A = 1, B = -1, E[l'^2] = eg
    assert eqs["A"].rhs == 1 and eqs["B"].rhs == -1
    assert sp.simplify(eqs["E[l'^2]"].rhs - (P.rho + de.sigma2 - 2 * de.R + de.Q)) == 0
    assert "exact D_k" in eqs and "exact D_k" not in rm.equations(dynamics=True, loss="huber")
    assert r"\begin{aligned}" in rm.equations(dynamics=True, loss="logistic", channel="sign", latex=True)


@pytest.mark.slow
@pytest.mark.parametrize("loss, channel", [("logistic", "sign"), ("logistic", "logit"), ("hinge", "sign")])
def test_general_odes_match_simulated_sgd_at_p400(loss, channel):
    base = _site(400)
    site = rm.MaskedSite(covariance=4 * base.covariance, teacher=np.sqrt(2) * base.teacher, noise=0.0,
                         channel=channel)
    sim = rm.simulate_sgd(site, alpha=np.linspace(0.5, 10, 20), lr=0.5, loss=loss, seeds=200, rng=1)
    assert not sim.theory.exact
    assert np.all(np.abs(sim.z) < 3.0), sim.z


@pytest.mark.slow
def test_huber_odes_match_simulated_sgd_at_p400():
    sim = rm.simulate_sgd(_site(400), alpha=np.linspace(0.5, 10, 20), lr=0.5, loss="huber", seeds=200, rng=1)
    assert np.all(np.abs(sim.z) < 3.0), sim.z


def test_sgd_on_an_ising_models_own_samples():
    model = rm.PottsModel.random_ising(L=9, beta=0.4, seed=1)
    sim = rm.simulate_sgd(model, site=0, alpha=[0.0, 2.0, 6.0], lr=1.0, seeds=12, rng=0, n_test=400)
    site = model.masked_site(0)
    assert sim.loss == "logistic" and sim.channel == "logit" and sim.p == 8
    # w = 0 at alpha = 0: every prediction is a coin flip and |w - w*|^2 = |w*|^2, exactly
    assert np.all(sim.eg[:, 0] == 0.5)
    np.testing.assert_allclose(sim.estimation_error[:, 0], np.sum(site.teacher**2))
    # it learns: below the coin flip by more than 3 SE
    assert np.all(sim.eg_mean[1:] < 0.5 - 3 * sim.eg_stderr[1:])
    np.testing.assert_allclose(sim.eg_theory[0], 0.5)  # the Gaussian theory beside it, at the same times
    with pytest.raises(ValueError, match="needs site="):
        rm.simulate_sgd(model, alpha=[1.0], lr=1.0)
    with pytest.raises(ValueError, match="loss='logistic'"):
        rm.simulate_sgd(model, site=0, alpha=[1.0], lr=1.0, loss="hinge")


def test_mixture_odes_match_sgd_on_the_mixture_itself():
    # theory="mixture": the ODEs of one-pass SGD on an Ising site's two-cluster Gaussian mixture,
    # against SGD simulated on draws of that mixture (x = y mu + S^(1/2) g)
    site = rm.PottsModel.random_ising(L=12, beta=0.4, seed=1).masked_site(0)
    sim = rm.simulate_sgd(site, alpha=[1.0, 3.0, 6.0], lr=1.0, theory="mixture", seeds=3000, rng=0)
    assert sim.channel == "mixture" and sim.theory.channel == "mixture"
    assert np.all(np.abs(sim.z) < 3.0), sim.z
    z = (sim.m_mean - sim.theory.m) / sim.m_stderr
    assert np.all(np.abs(z) < 3.0), z
    # q carries the ODEs' O(1/p) correction, visible at p = 11 (3 %; 0.6 % at p = 40, see the slow test)
    assert np.all(np.abs(sim.q_mean / sim.theory.q - 1) < 0.05)
    with pytest.raises(ValueError, match="two-class Gaussian mixture"):
        rm.online_sgd(_site(50), alpha=[1.0], lr=1.0, theory="mixture")
    with pytest.raises(ValueError, match="gradient flow is solved on Gaussian covariates"):
        rm.gradient_flow(site, alpha=2.0, time=[1.0], theory="mixture")


@pytest.mark.slow
def test_mixture_odes_q_gap_shrinks_as_one_over_p():
    gaps = []
    for L in (12, 41):
        site = rm.PottsModel.random_ising(L=L, beta=0.4, seed=1).masked_site(0)
        sim = rm.simulate_sgd(site, alpha=[1.0, 3.0, 6.0], lr=1.0, theory="mixture", seeds=3000, rng=0)
        assert np.all(np.abs(sim.z) < 3.0), sim.z
        gaps.append(float(np.max(np.abs(sim.q_mean / sim.theory.q - 1))))
    assert gaps[1] < gaps[0] / 2.5, gaps  # p from 11 to 40
