"""A Potts site (q > 2 colours) as a q-cluster Gaussian mixture and the multi-class mixture theory
(docs/multiclass.md, "The site as a Gaussian mixture"), held against enumeration and against
multinomial fits on data drawn from the mixture itself (standard errors over fixed seeds)."""

from __future__ import annotations

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.learners.logistic import fit
from replica_mlm.tasks.mixture import GaussianMixture
from replica_mlm.tasks.potts_site import simplex_basis
from replica_mlm.theory.sides import mixture_classes as side
from replica_mlm.theory.sides import multiclass_channel as mc


def _potts(L=7, q=3, beta=1.5):
    J = rm.PottsModel.random_ising(L=L, beta=1.0, seed=3).couplings
    return rm.PottsModel(couplings=J, colours=np.eye(q), beta=beta)


def test_potts_mixture_is_exact_by_enumeration():
    task = _potts().masked_site(0)
    mix = task.mixture
    assert mix.K == 3 and mix.method == "exact" and mix.p == task.d
    np.testing.assert_allclose(mix.weights, np.full(3, 1 / 3), atol=1e-12)  # all colours alike
    np.testing.assert_allclose(mix.weights @ mix.means, 0.0, atol=1e-13)  # centred inputs
    np.testing.assert_allclose(mix.total_covariance(), task.covariance, atol=1e-13)
    chk = mix.cavity_check()
    assert chk.method == "exact" and np.isfinite(chk.covariance_distance)


class _Site:
    """A multi-class task that is nothing but a mixture."""

    channel, default_loss, K, symmetric, modes = "softmax", "cross_entropy", 2, False, None

    def __init__(self, mixture, p):
        self.mixture, self.p, self.basis = mixture, p, simplex_basis(3)


def _mixture(d=60, scale=1.0, seed=2):
    gen = np.random.default_rng(seed)
    a = gen.standard_normal((d, 2 * d)) / np.sqrt(2 * d)
    S = 0.8 * a @ a.T + 0.2 * np.eye(d)
    raw = scale * gen.standard_normal((3, d)) / np.sqrt(d)
    w = np.array([0.3, 0.3, 0.4])
    means = raw - w @ raw
    P = simplex_basis(3)
    teacher = np.linalg.solve(S, means.T) @ P  # the Bayes logit directions of the mixture
    return GaussianMixture.from_moments(weights=w, means=means, covariance=S, teacher=teacher), P


def test_multinomial_fits_on_the_mixture_agree_with_the_theory():
    mix, P = _mixture()
    p = mix.p // 2  # the normalisation: d = p K
    task = _Site(mix, p)
    rule = mc.hermite_rule(2, 30)
    eg_rule = mc.sobol_rule(2, 15, 7)
    for alpha, lam, seeds in ((1.0, 0.1, 12), (4.0, 0.05, 12)):
        sp = rm.solve(task, alpha=alpha, lam=lam, theory="mixture")
        assert sp.converged and sp.residual <= 1e-10 and sp.method == "mixture"
        n = round(alpha * p)
        vals = []
        for s in range(seeds):
            x, c = mix.sample(n, rng=100 + s)
            W, kkt = fit(x, c, P, lam * p)
            assert kkt < 1e-7
            Q, M = W.T @ mix.covariance @ W, W.T @ mix.means.T
            args = {"Q": Q, "M": M, "weights": mix.weights, "P": P}
            vals.append([side.test_loss(rule, **args), side.error(eg_rule, **args),
                         np.sum((W - mix.teacher) ** 2)])
        vals = np.array(vals)
        mean, se = vals.mean(axis=0), vals.std(axis=0, ddof=1) / np.sqrt(seeds)
        z = (mean - [sp.test_loss, sp.eg, sp.estimation_error]) / se
        assert np.all(np.abs(z) < 3), (alpha, lam, z)


def test_mixture_theory_of_a_potts_site_refuses_other_losses():
    task = _potts(L=5).masked_site(0)
    with pytest.raises(ValueError, match="loss='cross_entropy'"):
        rm.solve(task, alpha=1.0, lam=0.1, loss="square", theory="mixture")
