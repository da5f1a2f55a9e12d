"""Ising spins as the two-colour Potts model and the logistic task of one site (discrete theory)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

import replica_mlm as rm
from replica_mlm.learners.pseudo_likelihood import fit_site, site_measures
from replica_mlm.tasks.ising_site import SPINS, spin_covariance, spins


@pytest.fixture(scope="module")
def small():
    return rm.PottsModel.random_ising(L=10, beta=0.4, seed=3)


def test_ising_energy_and_conditional_are_the_spin_forms(small):
    J, beta = small.couplings, small.beta
    seqs = np.random.default_rng(0).integers(0, 2, size=(50, small.L))
    s = spins(seqs)
    assert np.allclose(small.energy(seqs), -0.5 * np.einsum("ni,ij,nj->n", s, J, s), atol=1e-12)
    for i in (0, 4):
        h = s @ J[i]  # J_ii = 0
        p_plus = expit(2 * beta * h)  # P(s_i = +1 | s_-i) = 1 / (1 + exp(-2 beta h_i))
        assert np.allclose(small.conditional(seqs, i)[:, 0], p_plus, atol=1e-14)


def test_masked_site_is_the_logit_task_of_the_pseudo_likelihood(small):
    task = small.masked_site(2)
    keep = np.arange(small.L) != 2
    assert task.channel == "logit" and task.noise == 0
    assert np.allclose(task.teacher, 2 * small.beta * small.couplings[2, keep])
    # the site's logistic loss at w* is its negative log conditional (pseudo-likelihood term)
    seqs = np.random.default_rng(1).integers(0, 2, size=(40, small.L))
    s = spins(seqs)
    nll = -np.log(small.conditional(seqs, 2)[np.arange(40), seqs[:, 2]])
    assert np.allclose(np.log1p(np.exp(-s[:, 2] * (s[:, keep] @ task.teacher))), nll, atol=1e-13)


def test_covariance_exact_against_gibbs_chi_square(small):
    exact = spin_covariance(small)
    assert exact.method == "exact" and np.allclose(np.diag(exact.covariance), 1.0)
    sampled = spin_covariance(small, exact=False, samples=20000, rng=5)
    iu = np.triu_indices(small.L, 1)
    z = (sampled.covariance - exact.covariance)[iu] / sampled.stderr[iu]
    # 45 entries, correlated only weakly: chi-square at the 0.1 % level
    p_value = stats.chi2.sf(np.sum(z**2), z.size)
    assert p_value > 1e-3, (p_value, np.abs(z).max())
    assert sampled.batches.shape == (10, small.L, small.L)


def test_fit_site_matches_an_independent_newton_solve():
    gen = np.random.default_rng(2)
    x = np.where(gen.random((80, 12)) < 0.5, 1.0, -1.0)
    y = np.where(gen.random(80) < expit(x @ gen.normal(size=12) * 0.3), 1.0, -1.0)
    lam, p = 0.01, 12
    w, kkt = fit_site(x, y, lam)
    # Newton's method on the same objective, written out here
    v = np.zeros(p)
    for _ in range(50):
        m = y * (x @ v)
        g = -x.T @ (y * expit(-m)) + lam * p * v
        H = (x.T * (expit(m) * expit(-m))) @ x + lam * p * np.eye(p)
        v -= np.linalg.solve(H, g)
    assert kkt < 1e-7 and np.allclose(w, v, atol=1e-8)


def test_site_measures_are_rao_blackwellised_means():
    gen = np.random.default_rng(4)
    x = np.where(gen.random((5000, 6)) < 0.5, 1.0, -1.0)
    teacher, w = gen.normal(size=6), gen.normal(size=(6, 1))
    out = site_measures(x, teacher, w)
    y = np.where(gen.random(5000) < expit(x @ teacher), 1.0, -1.0)  # draw the labels instead
    ce = np.log1p(np.exp(-y * (x @ w[:, 0])))
    assert abs(out["test_loss"][0] - ce.mean()) < 4 * ce.std() / np.sqrt(5000)


def test_bad_input_is_refused(small):
    potts = rm.PottsModel.random(L=5, q=3, seed=0)
    assert isinstance(potts.masked_site(0), rm.PottsSite)  # q > 2: the multi-class task
    two = rm.PottsModel(couplings=small.couplings, colours=np.eye(2))
    with pytest.raises(ValueError, match="Ising"):
        two.masked_site(0)
    for beta in (0.0, -1.0):
        with pytest.raises(ValueError, match="beta"):
            rm.PottsModel.random_ising(L=5, beta=beta)
    with pytest.raises(ValueError, match="site"):
        small.masked_site(small.L)
    with pytest.raises(ValueError, match="site"):
        rm.simulate(small, site=-1, alpha=1.0, lam=0.1, seeds=2, loss="logistic")
    with pytest.raises(ValueError, match="alpha"):
        rm.simulate(small, site=0, alpha=0.01, lam=0.1, seeds=2, loss="logistic")
    with pytest.raises(ValueError, match="logistic"):
        rm.simulate(small, site=0, alpha=1.0, lam=0.1, seeds=2, loss="square")


def test_spins_of_colours():
    assert np.array_equal(SPINS, [1.0, -1.0])
    assert np.array_equal(rm.PottsModel.ising(couplings=np.zeros((3, 3)), beta=1.0).colours,
                          [[1.0, -1.0], [-1.0, 1.0]])


def test_simulate_nested_largest_n_is_simulate_sites_and_smaller_n_fit_the_first_rows(small):
    from replica_mlm.learners.pseudo_likelihood import fit_site, simulate_nested, simulate_sites
    from replica_mlm.tasks.ising_site import spins

    lam = np.array([0.1, 0.01])
    nested = simulate_nested(small, site=2, ns=[5, 30], lam=lam, seeds=3, rng=7, n_test=200)
    plain = simulate_sites(small, sites=[2], n=30, lam=lam, seeds=3, rng=7, n_test=200)
    for key in ("eg", "test_loss", "train_loss", "estimation_error"):
        assert nested[key].shape == (3, 2, 2)
        assert np.array_equal(nested[key][:, 1], plain[key][:, 0])
    # n = 5: the first 5 rows of the same shuffled pool (rebuilt here with the sampler's own calls)
    gen = np.random.default_rng(7)
    diag = small.gibbs_diagnostics(rng=gen, method="auto")
    child = gen.spawn(3)[0]
    seqs = small.sample(230, rng=child, sweeps_between=diag.sweeps_between, burn_in=diag.burn_in,
                        method=diag.method, n_rungs=diag.ladder.size)
    s = spins(child.permutation(seqs))
    keep = np.arange(small.L) != 2
    teacher = 2 * small.beta * small.couplings[2, keep]
    w, _ = fit_site(s[:5, keep], s[:5, 2], 0.1)
    assert np.allclose(nested["estimation_error"][0, 0, 0], np.sum((w - teacher) ** 2), rtol=1e-6)
    with pytest.raises(ValueError, match="ns"):
        simulate_nested(small, site=2, ns=[0, 3], lam=lam, seeds=2, rng=0, n_test=10)


def test_bad_input_of_issue_11_item_6_every_entry_point(small):
    """q = 2 calls on a non-Ising model, beta <= 0 (or NaN), site out of range, M < 1: ValueError."""
    potts = rm.PottsModel.random(L=5, q=3, seed=0)
    two = rm.PottsModel(couplings=small.couplings, colours=np.eye(2))
    # q = 3 goes to the multi-class route, whose loss is the softmax cross-entropy
    with pytest.raises(ValueError, match="loss must be 'cross_entropy'"):
        rm.simulate(potts, site=0, alpha=1.0, lam=0.1, seeds=2, loss="logistic")
    with pytest.raises(ValueError, match="needs an Ising model"):
        rm.simulate(two, site=0, alpha=1.0, lam=0.1, seeds=2, loss="logistic")
    for model in (potts, two):
        with pytest.raises(ValueError, match="needs an Ising model"):
            spin_covariance(model)
    for beta in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="beta"):
            rm.PottsModel.ising(couplings=small.couplings, beta=beta)
    with pytest.raises(ValueError, match=r"site index i must lie in \[0, L\)"):
        rm.simulate(small, site=small.L, alpha=1.0, lam=0.1, seeds=2, loss="logistic")
    for alpha in (0.0, 0.5 / (small.L - 1) * 0.9):
        with pytest.raises(ValueError, match="alpha"):
            rm.simulate(small, site=0, alpha=alpha, lam=0.1, seeds=2, loss="logistic")
