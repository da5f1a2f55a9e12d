"""The local theory of a discrete site (docs/discrete.md, "Sparse couplings"), each property held
against something independent of it:

* an empty neighbourhood is the label-only mixture theory, a different solver (to solver precision);
* the theory solves its own data model: fits of the package's objective on data drawn from a cluster
  mixture built by hand with known moments (p = 400; one point here, ten behind ``--runslow``);
* the ridge prior written in the cluster means is the matrix ridge prior where both apply;
* the neighbourhood rule of :mod:`replica_mlm.tasks.neighbourhood` and its refusals;
* the planning of ``theory="local"`` and the learning curve point by point.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from local_helpers import as_task, constructed, dense, erm_point, potts3, ring, square_lattice

import replica_mlm as rm
from replica_mlm.theory.sides import losses, prior
from replica_mlm.theory.solvers import local_engine

#: the two theories solve to a residual of 1e-10 (relative) in different unknowns; their measured
#: quantities agree to a few 1e-13 on these points, so 1e-8 relative is solver precision with room
SOLVER_RTOL = 1e-8


def _same(a, b, names=("eg", "test_loss", "estimation_error", "train_loss")):
    for name in names:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=SOLVER_RTOL, atol=1e-12,
                                   err_msg=name)


# ------------------------------------------------------------------ empty neighbourhood = mixture

@pytest.mark.filterwarnings("ignore:theory=:RuntimeWarning")  # the ring is sparse: both are invalid
@pytest.mark.parametrize("loss, points", [
    ("logistic", [(0.5, 0.01), (3.0, 1.0)]),
    ("hinge", [(1.0, 0.1), (2.5, 0.5)]),
])
def test_empty_neighbourhood_is_the_mixture_theory_ising(loss, points):
    task = rm.PottsModel.ising(couplings=ring(12), beta=0.6).masked_site(0, rng=0, neighbours=0)
    assert task.neighbourhood == ()
    assert task.local_mixture.C == 2 and task.local_mixture.fixed.size == 0
    for alpha, lam in points:
        local = rm.solve(task, alpha=alpha, lam=lam, loss=loss, theory="local")
        mixture = rm.solve(task, alpha=alpha, lam=lam, loss=loss, theory="mixture")
        assert local.converged and mixture.converged
        _same(local, mixture)


def test_empty_neighbourhood_is_the_mixture_theory_potts():
    task = potts3().masked_site(0, rng=0, neighbours=0)
    assert task.neighbourhood == () and task.local_mixture.C == 3
    for alpha, lam in [(0.5, 0.05), (2.0, 0.2)]:
        local = rm.solve(task, alpha=alpha, lam=lam, theory="local")
        mixture = rm.solve(task, alpha=alpha, lam=lam, theory="mixture")
        assert local.method == "local" and mixture.method != "local"
        # the error rate of both is a mean over the same scrambled Sobol' points
        _same(local, mixture, names=("test_loss", "estimation_error", "train_loss", "eg"))
        np.testing.assert_allclose(local.Q, mixture.Q, rtol=1e-7, atol=1e-12)


# ------------------------------------------------------------------ the local data model of a site

@pytest.mark.parametrize("which", ["lattice", "potts"])
def test_local_mixture_of_a_site_by_enumeration(which):
    if which == "lattice":
        model, site = rm.PottsModel.ising(couplings=square_lattice(3), beta=0.4), 4
    else:
        model, site = potts3(), 0
    task = model.masked_site(site, rng=0)
    mix = task.local_mixture
    nb = list(task.neighbourhood)
    # the lattice at beta = 0.4 is split by the ordered states of its rest (docs/discrete.md, "Ordered
    # states"): a cluster per label, configuration and state
    states = 2 if which == "lattice" else 1
    assert (mix.states is not None) == (states == 2)
    assert mix.C == states * model.q ** (len(nb) + 1) and mix.method == "exact"
    # the weights are the joint law of the label and the neighbourhood (summed over the states),
    # summed here from the Boltzmann law
    seqs, prob = model.all_sequences(), model.boltzmann_probabilities()
    for c in range(mix.C):
        mask = (seqs[:, site] == mix.labels[c]) & np.all(seqs[:, nb] == mix.configurations[c], axis=1)
        same = (mix.labels == mix.labels[c]) & np.all(mix.configurations == mix.configurations[c], axis=1)
        assert mix.weights[same].sum() == pytest.approx(prob[mask].sum() / prob.sum(), rel=1e-10)
    # the neighbourhood is constant within a cluster, and the law of total covariance gives the
    # site's covariance back
    assert mix.fixed.size == len(nb) * (model.q - 1)
    np.testing.assert_array_equal(mix.covariance[mix.fixed], 0.0)
    np.testing.assert_array_equal(mix.covariance[:, mix.fixed], 0.0)
    centred = mix.means - mix.weights @ mix.means
    np.testing.assert_allclose(mix.covariance + (centred.T * mix.weights) @ centred, task.covariance,
                               atol=1e-12)


# ------------------------------------------------------------------ its own data model

def test_mixture_sample_has_the_mixture_moments():
    # the sampler is what the ERM checks draw from: its moments against the fields it is built from
    mix = constructed(d=40, q=2, m=2, seed=1)
    x, clusters = mix.sample(200_000, rng=3)
    counts = np.bincount(clusters, minlength=mix.C) / clusters.size
    np.testing.assert_allclose(counts, mix.weights, atol=4 * np.sqrt(mix.weights / clusters.size).max())
    resid = x - mix.means[clusters]
    np.testing.assert_array_equal(resid[:, mix.fixed], 0.0)  # the neighbourhood is constant per cluster
    S = resid.T @ resid / clusters.size
    se = np.sqrt((np.outer(np.diag(mix.covariance), np.diag(mix.covariance)) + mix.covariance**2)
                 / clusters.size)
    assert np.max(np.abs(S - mix.covariance) / np.maximum(se, 1e-300)) < 5.0


def _theory_vs_erm(q, alpha, lam, seeds):
    mix = constructed(d=400, q=q, m=3 if q == 2 else 2)
    th = local_engine.solve(as_task(mix, 400), alpha=alpha, lam=lam,
                            loss=losses.resolve("logistic") if q == 2 else None)
    sim = erm_point(mix, 400, alpha, lam, seeds, kkt_tol=1e-8 if q == 2 else 1e-9)
    z = {k: (sim[k] - getattr(th, k)) / sim[k + "_se"] for k in ("eg", "test_loss", "estimation_error")}
    return th, sim, z


def test_local_theory_solves_its_own_data_model_one_point():
    # 16 clusters (label x 3 neighbours), p = 400, 20 fits of the package's objective: within 3 SE
    th, sim, z = _theory_vs_erm(2, 1.0, 0.1, range(20))
    assert th.residual <= 1e-10
    assert all(abs(v) < 3.0 for v in z.values()), (th, sim, z)


ISING_POINTS = [(0.5, 0.1), (0.5, 1.0), (1.0, 0.01), (1.0, 0.1), (1.0, 1.0), (2.0, 0.01), (2.0, 0.1),
                (3.0, 0.05), (4.0, 0.01), (4.0, 0.5)]


@pytest.mark.slow
@pytest.mark.parametrize("k", range(len(ISING_POINTS)))
def test_local_theory_solves_its_own_data_model_ising(k):
    alpha, lam = ISING_POINTS[k]
    _, sim, z = _theory_vs_erm(2, alpha, lam, range(1000 * k, 1000 * k + 100))
    assert all(abs(v) < 3.0 for v in z.values()), (sim, z)


POTTS_POINTS = [(0.5, 0.1), (1.0, 0.01), (1.0, 0.1), (2.0, 0.05), (3.0, 0.5)]


@pytest.mark.slow
@pytest.mark.parametrize("k", range(len(POTTS_POINTS)))
def test_local_theory_solves_its_own_data_model_potts(k):
    alpha, lam = POTTS_POINTS[k]
    _, sim, z = _theory_vs_erm(3, alpha, lam, range(1000 * k, 1000 * k + 60))
    assert all(abs(v) < 3.0 for v in z.values()), (sim, z)


# ------------------------------------------------------------------ the prior in the means

def test_ridge_means_prior_is_the_matrix_ridge_prior_when_all_modes_vary():
    gen = np.random.default_rng(7)
    d, C, K, p, lam = 30, 5, 2, 40, 0.3
    omega = gen.uniform(0.2, 3.0, d)
    means = gen.normal(size=(d, C))  # the modes a_k of the cluster means
    target = gen.normal(size=(d, K))
    A = gen.normal(size=(K, K))
    h = {"V_hat": A @ A.T + np.eye(K), "Q_hat": A.T @ A + 0.5 * np.eye(K), "M_hat": gen.normal(size=(K, C))}
    by_means = prior.RidgeMeansPrior(omega, means, p, lam, target)
    by_teacher = prior.RidgeMatrixPrior(omega, means / omega[:, None], p, lam, target=target)
    for a, b in zip(by_means.overlaps(h), by_teacher.overlaps(h), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(by_means.estimation_error(h), by_teacher.estimation_error(h), rtol=1e-12)


# ------------------------------------------------------------------ the neighbourhood rule

def test_neighbourhood_rule():
    lattice = rm.PottsModel.ising(couplings=square_lattice(4), beta=0.3)
    assert lattice.masked_site(5, rng=0).neighbourhood == (1, 4, 6, 9)
    assert lattice.masked_site(0, rng=0).neighbourhood == (1, 3, 4, 12)
    sk = rm.PottsModel.ising(couplings=dense(12), beta=0.5)
    assert sk.masked_site(3, rng=0).neighbourhood == ()
    # a count takes the strongest couplings (ties by the lower index), a list is taken as given
    J = np.abs(dense(12)[3])
    J[3] = -1.0  # not a neighbour of itself
    strongest = tuple(sorted(np.argsort(-J, kind="stable")[:3]))
    assert sk.masked_site(3, rng=0, neighbours=3).neighbourhood == strongest
    assert lattice.masked_site(5, rng=0, neighbours=2).neighbourhood == (1, 4)
    assert lattice.masked_site(5, rng=0, neighbours=[11, 0, 7]).neighbourhood == (0, 7, 11)
    assert lattice.masked_site(5, rng=0, neighbours=np.array([2])).neighbourhood == (2,)


@pytest.mark.parametrize("bad, error", [
    (-1, ValueError), (16, ValueError), (True, TypeError), (1.5, TypeError), ("ab", TypeError),
    ([1, 1], ValueError), ([5, 1], ValueError), ([20], ValueError), ([1.5], TypeError),
    (list(range(16)[:5]) + list(range(6, 16)), ValueError), (15, ValueError),
])
def test_bad_neighbours_are_refused_by_name(bad, error):
    lattice = rm.PottsModel.ising(couplings=square_lattice(4), beta=0.3)
    with pytest.raises(error, match="neighbours"):
        lattice.masked_site(5, rng=0, neighbours=bad)


# ------------------------------------------------------------------ planning and curves

def test_local_theory_refuses_what_it_does_not_solve():
    with pytest.raises(ValueError, match="theory='local' needs a site of a Potts model"):
        rm.solve(rm.GaussianPotts.random(L=31, shift=3.0, seed=1).masked_site(0), alpha=1.0, lam=0.1,
                 theory="local")
    task = rm.PottsModel.ising(couplings=square_lattice(3), beta=0.3).masked_site(4, rng=0)
    with pytest.raises(ValueError, match="Bayes-optimal error has no local theory"):
        rm.bayes_optimal(task, alpha=1.0, theory="local")
    with pytest.raises(ValueError, match="cross_entropy"):
        rm.solve(potts3().masked_site(0, rng=0), alpha=1.0, lam=0.1, loss="square", theory="local")


def test_learning_curve_is_solve_point_by_point_and_carries_validity():
    task = rm.PottsModel.ising(couplings=square_lattice(3), beta=0.4).masked_site(4, rng=0)
    assert task.neighbourhood == (1, 3, 5, 7)
    grid = [0.5, 1.0, 2.0]
    curve = rm.learning_curve(task, alpha=grid, lam=0.1, loss="logistic", theory="local")
    for k, alpha in enumerate(grid):
        point = rm.solve(task, alpha=alpha, lam=0.1, loss="logistic", theory="local")
        assert point.valid is not None and point.valid.theory == "local"
        for name in ("eg", "test_loss", "estimation_error"):
            np.testing.assert_allclose(np.asarray(getattr(curve, name))[k], getattr(point, name),
                                       rtol=1e-7, err_msg=name)
    assert curve.valid is not None and curve.valid == point.valid


@pytest.mark.parametrize("stalled", [("_newton",), ("_newton", "_anderson")])
def test_the_driver_hands_over_where_newton_or_anderson_stalls(monkeypatch, stalled):
    """Where Newton's method stalls, Anderson mixing takes over from its best point, and where that
    stalls too, Powell's hybrid method: forced here, the local solve finds the same point to solver
    precision, and counts every run's evaluations."""
    from replica_mlm.theory.solvers import fixed_point

    task, logistic = as_task(constructed(d=100, q=2, m=3), 100), losses.resolve("logistic")
    reference = local_engine.solve(task, alpha=2.0, lam=0.1, loss=logistic)

    def stalls(first, residual, x, **kw):
        for k in range(1, 8):  # seven evaluations at distinct points (the last one is not recomputed)
            first(x + 1e-6 * k)
        raise fixed_point.FixedPointFailure("tolerance", last=x, best=x, residual=math.inf)

    for name in stalled:
        monkeypatch.setattr(fixed_point, name, stalls)
    fallback = local_engine.solve(task, alpha=2.0, lam=0.1, loss=logistic)
    _same(reference, fallback)
    assert fallback.converged and fallback.residual < 1e-10 and fallback.iterations > 7 * len(stalled)


def test_sampled_local_mixture_warns_below_three_samples_per_cluster_and_input():
    """A sampled site whose local clusters get fewer than 3 sequences per cluster and Gaussian input
    warns and names the sample size that would do (the band at L = 400 needed about 3); with enough,
    no warning."""
    import warnings

    from replica_mlm.potts.graphs import banded
    from replica_mlm.tasks.local_site import SAMPLES_PER_CLUSTER_INPUT

    model = rm.PottsModel.ising(couplings=banded(30, width=2, rng=0), beta=0.3)
    few = model.masked_site(10, rng=0, samples=300, neighbours=2)
    with pytest.warns(RuntimeWarning, match=r"300 sampled sequences for 8 clusters in 27 Gaussian inputs"
                                            r".*samples=648\)"):
        mix = few.local_mixture
    assert SAMPLES_PER_CLUSTER_INPUT * mix.C * mix.free.size == 648 > mix.n_samples
    enough = model.masked_site(10, rng=0, samples=700, neighbours=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert enough.local_mixture.n_samples == 700
