"""Bayes errors of a discrete site and of its theories' data models, and the validity check built on
them (docs/discrete.md, "When a theory holds"), each against something computed independently:
direct simulations of the Bayes classifier, Monte Carlo of the channel, and the transfer matrix of
an Ising ring (the site's exact Bayes error in closed form)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from local_helpers import boltzmann_draws, constructed, mixture_of_draws, potts3, ring, square_lattice
from scipy.special import expit, log_softmax, logsumexp

import replica_mlm as rm
from replica_mlm.tasks import bayes_error, validity
from replica_mlm.tasks.potts_site import simplex_basis


def ring_site_error(L: int, beta: float) -> float:
    """Exact Bayes error of a site of a ferromagnetic Ising ring (unit couplings) by its transfer
    matrix: the field is h = s_(i-1) + s_(i+1), and P(s_i | h) = expit(2 beta s_i h)."""
    T = np.array([[math.exp(beta), math.exp(-beta)], [math.exp(-beta), math.exp(beta)]])
    rest = np.linalg.matrix_power(T, L - 2)  # from s_(i+1) round the ring back to s_(i-1)
    spins = (1.0, -1.0)
    total = z = 0.0
    for a in range(2):
        for b in range(2):
            pair = sum(T[a, s] * T[s, b] for s in range(2)) * rest[b, a]
            h = spins[a] + spins[b]
            total += pair * (1.0 - expit(2 * beta * abs(h)))
            z += pair
    return total / z


def bayes_classifier_error(mixture, n: int, rng: int) -> tuple[float, float]:
    """Error rate and its standard error of the Bayes classifier on ``n`` draws of a cluster
    mixture, written directly: clusters whose neighbourhood coordinates match the draw, their
    Gaussian likelihoods on the other coordinates, summed per label."""
    x, clusters = mixture.sample(n, rng=rng)
    y = mixture.labels[clusters]
    free, fixed = mixture.free, mixture.fixed
    Sinv = np.linalg.inv(mixture.covariance[np.ix_(free, free)])
    logp = np.full((n, mixture.C), -np.inf)
    for c in range(mixture.C):
        match = np.all(np.isclose(x[:, fixed], mixture.means[c, fixed]), axis=1)
        r = x[match][:, free] - mixture.means[c, free]
        logp[match, c] = math.log(mixture.weights[c]) - 0.5 * np.einsum("ni,ij,nj->n", r, Sinv, r)
    per_label = np.stack([logsumexp(logp[:, mixture.labels == a], axis=1) for a in range(mixture.classes)],
                         axis=1)
    miss = np.argmax(per_label, axis=1) != y
    return float(miss.mean()), float(miss.std(ddof=1) / math.sqrt(n))


# ------------------------------------------------------------------ Bayes errors

@pytest.mark.parametrize("q, m", [(2, 3), (3, 2)])
def test_cluster_mixture_bayes_error_against_the_bayes_classifier(q, m):
    mix = constructed(d=20, q=q, m=m, seed=2)
    rate, se = bayes_classifier_error(mix, 100_000, rng=11)
    assert 0.02 < rate < 0.6  # neither trivial nor hopeless
    assert abs(mix.bayes_error() - rate) < 3 * se, (mix.bayes_error(), rate, se)


def test_channel_error_against_monte_carlo():
    gen = np.random.default_rng(4)
    n = 400_000
    # Ising: nu ~ N(0.3, 2.2), P(y = +1 | nu) = expit(nu)
    nu = 0.3 + math.sqrt(2.2) * gen.standard_normal(n)
    y = np.where(gen.random(n) < expit(nu), 1.0, -1.0)
    miss = np.sign(nu) != y
    exact = bayes_error.channel_error(np.array([0.3]), np.array([[2.2]]), np.array([[0.5], [-0.5]]))
    assert abs(exact - miss.mean()) < 3 * miss.std(ddof=1) / math.sqrt(n)
    # three classes: nu ~ N(b, R) in 2 dims, P(y | nu) = softmax(P nu)
    P = simplex_basis(3)
    b, A = np.array([0.4, -0.2]), gen.normal(size=(2, 2))
    R = A @ A.T + 0.5 * np.eye(2)
    nu = b + gen.standard_normal((n, 2)) @ np.linalg.cholesky(R).T
    prob = np.exp(log_softmax(nu @ P.T, axis=1))
    y = (gen.random(n)[:, None] > np.cumsum(prob, axis=1)).sum(axis=1)
    miss = np.argmax(prob, axis=1) != y
    exact = bayes_error.channel_error(b, R, P)
    assert abs(exact - miss.mean()) < 3 * miss.std(ddof=1) / math.sqrt(n)


def test_site_bayes_error_exact_sampled_and_by_transfer_matrix():
    model = rm.PottsModel.ising(couplings=ring(12), beta=0.5)
    task = model.masked_site(0, rng=0)
    v = task.validity(theory="local")
    assert v.bayes_error_site_stderr == 0.0
    assert v.bayes_error_site == pytest.approx(ring_site_error(12, 0.5), rel=1e-12)
    # the sampled site error, on independent draws of the enumerated law, within 3 SE of the exact one
    seqs, prob = model.all_sequences(), model.boltzmann_probabilities()
    draws = seqs[np.random.default_rng(1).choice(len(prob), size=20_000, p=prob / prob.sum())]
    mean, se = bayes_error.site_error(model.logits(draws)[:, 0, :], None)
    assert se > 0 and abs(mean - v.bayes_error_site) < 3 * se


@pytest.mark.slow
def test_site_bayes_error_from_the_sampler_against_the_transfer_matrix():
    # L = 20 is beyond enumeration: the site's error is the mean over the sampler's sequences
    task = rm.PottsModel.ising(couplings=ring(20), beta=0.5).masked_site(0, rng=1, samples=20_000)
    v = task.validity(theory="mixture")
    assert v.bayes_error_site_stderr > 0
    assert abs(v.bayes_error_site - ring_site_error(20, 0.5)) < 3 * v.bayes_error_site_stderr


def test_full_markov_blanket_gives_the_site_bayes_error_exactly():
    # given its Markov blanket the label is independent of the rest: the local model's Bayes error
    # is the site's, by enumeration (ring and periodic lattice)
    for model, site in [(rm.PottsModel.ising(couplings=ring(12), beta=0.5), 0),
                        (rm.PottsModel.ising(couplings=square_lattice(4), beta=0.4), 5)]:
        task = model.masked_site(site, rng=0)
        v = task.validity(theory="local")
        assert v.bayes_error_site == pytest.approx(task.local_mixture.bayes_error(), rel=1e-12, abs=1e-14)
        assert v.ok and v.ratio == pytest.approx(1.0, abs=1e-12)
    assert task.neighbourhood == (1, 4, 6, 9)


@pytest.mark.xfail(strict=True, reason="the local mixture measured from samples is still biased low after "
                   "its means' noise d / n_c is taken off the Gram matrix (the weights' noise remains: "
                   "ring L = 12, beta = 0.5, full Markov blanket, n = 2000: -0.015 (was -0.025); n = 2e4: "
                   "-0.002 to -0.004)")
def test_sampled_local_mixture_bayes_error_is_unbiased():
    model = rm.PottsModel.ising(couplings=ring(12), beta=0.5)
    task = model.masked_site(0, rng=0)
    draws = boltzmann_draws(model, 2000, 2)
    mix = mixture_of_draws(task, draws)
    mean, se = bayes_error.site_error(model.logits(draws)[:, 0, :], None)
    assert abs(mix.bayes_error() - mean) < 3 * se


# ------------------------------------------------------------------ the check and where it shows

def test_judge_fields_and_threshold():
    v = validity.judge("mixture", 0.2, 0.25, 0.0)
    assert (v.theory, v.bayes_error_model, v.bayes_error_site, v.ratio) == ("mixture", 0.2, 0.25, 0.2 / 0.25)
    assert not v.ok and v.threshold == validity.TOLERANCE
    assert validity.judge("local", 0.25 * (1 + 0.99 * validity.TOLERANCE), 0.25, 0.0).ok
    assert not validity.judge("local", 0.25 * (1 + 1.01 * validity.TOLERANCE), 0.25, 0.0).ok
    wide = validity.judge("local", 0.25 * 1.15, 0.25, 0.01)  # two standard errors widen the band
    assert wide.ratio_stderr == pytest.approx(1.15 * 0.01 / 0.25) and wide.ok
    assert validity.judge("gaussian", 0.0, 0.0, 0.0).ok
    zero_site = validity.judge("gaussian", 0.1, 0.0, 0.0)
    assert zero_site.ratio == math.inf and not zero_site.ok
    assert list(v.to_frame().columns)[:3] == ["theory", "bayes_error_model", "bayes_error_site"]


def test_validity_of_each_theory_on_a_lattice():
    task = rm.PottsModel.ising(couplings=square_lattice(4), beta=0.4).masked_site(5, rng=0)
    checks = {t: task.validity(theory=t) for t in ("gaussian", "mixture", "local")}
    site = checks["local"].bayes_error_site
    assert all(c.bayes_error_site == site for c in checks.values())
    assert checks["local"].ok and not checks["mixture"].ok  # the failure of the mixture, flagged
    assert checks["mixture"].bayes_error_model < site  # easier than the site: below what anyone reaches
    with pytest.raises(ValueError, match="theory"):
        task.validity(theory="exact")


def test_results_carry_valid_and_an_invalid_theory_warns_once():
    task = rm.PottsModel.ising(couplings=square_lattice(3), beta=0.4).masked_site(4, rng=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = rm.solve(task, alpha=1.0, lam=0.1, loss="logistic", theory="mixture")
        again = rm.solve(task, alpha=2.0, lam=0.1, loss="logistic", theory="mixture")
        curve = rm.learning_curve(task, alpha=[0.5, 1.0], lam=0.1, loss="logistic", theory="mixture")
        local = rm.solve(task, alpha=1.0, lam=0.1, loss="logistic", theory="local")
    invalid = [w for w in caught if issubclass(w.category, RuntimeWarning) and "validity" in str(w.message)]
    assert len(invalid) == 1 and "theory='mixture'" in str(invalid[0].message)
    assert first.valid == again.valid == curve.valid and not first.valid.ok
    assert local.valid.theory == "local" and local.valid.ok
    with pytest.warns(rm.ValidityWarning, match="theory='gaussian'"):  # ratio 1.74 on this site
        gaussian = rm.solve(task, alpha=1.0, lam=0.1, loss="logistic")
    assert gaussian.valid.theory == "gaussian" and not gaussian.valid.ok
    assert rm.solve(rm.GaussianPotts.random(L=31, shift=3.0, seed=1).masked_site(0), alpha=1.0,
                    lam=0.1).valid is None


def test_potts_results_carry_valid():
    task = potts3().masked_site(0, rng=0)
    assert task.neighbourhood == (1, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the full Markov blanket: valid, no warning
        point = rm.solve(task, alpha=1.0, lam=0.1, theory="local")
        curve = rm.learning_curve(task, alpha=[1.0], lam=0.1, theory="local")
    assert point.valid.theory == "local" and point.valid.ok and curve.valid == point.valid
    np.testing.assert_allclose(np.asarray(curve.test_loss)[0], point.test_loss, rtol=1e-7)
    assert point.valid.bayes_error_model == pytest.approx(point.valid.bayes_error_site, rel=1e-12)
