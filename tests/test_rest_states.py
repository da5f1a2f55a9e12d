"""The ordered states of the rest (docs/discrete.md, "Sparse couplings", paragraph "Ordered states";
:mod:`replica_mlm.tasks.rest_states`), each property held against something independent of it:

* the two-component fit is scikit-learn's maximum-likelihood fit, and weights act as counts;
* on an ordered ferromagnet (exact enumeration) the split data model holds the test loss of linear
  predictors that read the rest's magnetisation several times closer than the unsplit one, and both
  keep the site's Bayes error exactly;
* the Bayes error of a split model is that of its Bayes classifier written directly (in SE);
* the rule does not split a disordered lattice, nor a site with an empty neighbourhood (dense
  couplings), whose local data models stay what they were.
"""

from __future__ import annotations

import numpy as np
import pytest
from local_helpers import dense, square_lattice
from test_validity import bayes_classifier_error

import replica_mlm as rm
from replica_mlm.tasks import rest_states as rs
from replica_mlm.tasks.local_mixture import cluster_mixture
from replica_mlm.theory.sides import losses
from replica_mlm.theory.sides.local_clusters import LocalClusters


def _unsplit(task, model):
    """The local data model of an enumerated Ising site without the split, built from the Boltzmann law."""
    seqs, prob = model.all_sequences(), model.boltzmann_probabilities()
    return cluster_mixture(task._inputs(seqs, prob), seqs[:, task._site].astype(np.int64),
                           seqs[:, list(task.neighbourhood)], classes=2, fixed=task._fixed_coordinates(),
                           teacher=task.teacher, probabilities=prob)


def test_two_gaussians_is_the_maximum_likelihood_fit():
    # against scikit-learn's EM (another implementation of the same estimator), and weights as counts
    from sklearn.mixture import GaussianMixture

    gen = np.random.default_rng(4)
    n = 40_000
    t = np.where(gen.random(n) < 0.3, gen.normal(-2.0, 0.5, n), gen.normal(1.0, 1.5, n))
    pi, mu, var = rs.two_gaussians(t, np.full(n, 1.0 / n))
    ref = GaussianMixture(2, tol=1e-12, max_iter=5000, random_state=0).fit(t[:, None])
    order, ref_order = np.argsort(mu), np.argsort(ref.means_.ravel())
    np.testing.assert_allclose(pi[order], ref.weights_[ref_order], atol=1e-5)
    np.testing.assert_allclose(mu[order], ref.means_.ravel()[ref_order], atol=1e-5)
    np.testing.assert_allclose(var[order], ref.covariances_.ravel()[ref_order], atol=1e-5)
    counts = gen.integers(1, 4, 2000)
    small = t[:2000]
    by_weight = rs.two_gaussians(small, counts / counts.sum())
    repeated = rs.two_gaussians(np.repeat(small, counts), np.full(counts.sum(), 1.0 / counts.sum()))
    for a, b in zip(by_weight, repeated, strict=True):
        np.testing.assert_allclose(np.sort(a), np.sort(b), rtol=1e-8)


def test_rule_on_drawn_states_and_on_one_gaussian():
    gen = np.random.default_rng(1)
    n, d = 20_000, 30
    clusters = gen.integers(0, 4, n)
    state = gen.random(n) < 0.45
    x = gen.normal(size=(n, d)) + clusters[:, None] * 0.1
    x[:, :] += np.where(state, 1.0, -1.0)[:, None] * 0.8  # two states along the all-ones direction
    split = rs.rest_states(x, clusters, np.arange(d))
    assert split.split and split.separation > rs.SEPARATION and split.coefficient > rs.BIMODALITY
    agree = np.mean(split.states == state)
    assert max(agree, 1 - agree) > 0.999
    one = rs.rest_states(gen.normal(size=(n, d)), clusters, np.arange(d))
    assert not one.split and one.states is None and one.coefficient < rs.BIMODALITY


@pytest.mark.parametrize("side, beta", [(4, 0.6), (4, 0.44), (3, 0.6)])
def test_split_model_holds_linear_predictors_on_an_ordered_lattice(side, beta):
    model = rm.PottsModel.ising(couplings=square_lattice(side), beta=beta)
    task = model.masked_site(0, rng=0)
    split, whole = task.local_mixture, _unsplit(task, model)
    assert task.rest_states.split and split.states is not None and split.C == 2 * whole.C
    # both keep the site's Bayes error (the label is independent of the rest given the neighbourhood)
    assert split.bayes_error() == pytest.approx(task._bayes_site[0], rel=1e-9)
    assert whole.bayes_error() == pytest.approx(task._bayes_site[0], rel=1e-9)
    # the test loss of w = teacher + t u (u: uniform on the rest), exact by enumeration against the
    # data models' (the logit Gaussian given the cluster): the split model is >= 4 times closer
    seqs, prob = model.all_sequences(), model.boltzmann_probabilities()
    x, y = task._inputs(seqs, prob), np.where(seqs[:, 0] == 0, 1.0, -1.0)
    u = np.zeros(x.shape[1])
    u[split.free] = 1.0 / np.sqrt(split.free.size)
    loss = losses.resolve("logistic")
    for t in (0.5, 1.0, 2.0):
        w = task.teacher + t * u
        exact = float(prob @ np.logaddexp(0.0, -y * (x @ w)) / prob.sum())
        gap = []
        for mix in (whole, split):
            side_ = LocalClusters(loss, mix.weights, np.where(mix.labels == 0, 1.0, -1.0))
            gap.append(abs(side_.test_loss(np.array([[w @ mix.covariance @ w]]), (mix.means @ w)[None, :])
                           - exact))
        assert gap[1] < gap[0] / 4, (t, gap)


def test_split_bayes_error_against_the_bayes_classifier():
    task = rm.PottsModel.ising(couplings=square_lattice(3), beta=0.3).masked_site(4, rng=0, neighbours=2)
    mix = cluster_mixture(*_inputs_labels(task), classes=2, fixed=task._fixed_coordinates(),
                          teacher=task.teacher, probabilities=task._model.boltzmann_probabilities(),
                          states=_magnetisation_states(task))
    assert mix.states is not None and np.unique(mix.states).size == 2
    rate, se = bayes_classifier_error(mix, 100_000, rng=5)
    assert 0.05 < rate < 0.5
    assert abs(mix.bayes_error() - rate) < 3 * se, (mix.bayes_error(), rate, se)


def _inputs_labels(task):
    model = task._model
    seqs, prob = model.all_sequences(), model.boltzmann_probabilities()
    return (task._inputs(seqs, prob), seqs[:, task._site].astype(np.int64), seqs[:, list(task.neighbourhood)])


def _magnetisation_states(task):
    """A split by the sign of the magnetisation beyond the neighbourhood (forced: this site is not
    ordered), ties to state 0."""
    seqs = task._model.all_sequences()
    rest = np.setdiff1d(np.arange(task._model.L), [task._site, *task.neighbourhood])
    return (np.sum(1 - 2 * seqs[:, rest], axis=1) > 0).astype(np.int64)


def test_rule_does_not_split_a_disordered_lattice():
    model = rm.PottsModel.ising(couplings=square_lattice(4), beta=0.3)
    task = model.masked_site(0, rng=0)
    assert not task.rest_states.split and task.local_mixture.states is None
    whole = _unsplit(task, model)
    np.testing.assert_array_equal(task.local_mixture.means, whole.means)
    np.testing.assert_array_equal(task.local_mixture.covariance, whole.covariance)
    sampled = rm.PottsModel.ising(couplings=square_lattice(10), beta=0.3).masked_site(0, rng=0)
    assert not sampled.rest_states.split and sampled.local_mixture.C == 32


@pytest.mark.filterwarnings("ignore:theory=:RuntimeWarning")
def test_empty_neighbourhood_is_never_split():
    task = rm.PottsModel.ising(couplings=dense(12), beta=1.5).masked_site(0, rng=0)
    assert task.neighbourhood == () and task.rest_states is None
    assert task.local_mixture.C == 2 and task.local_mixture.states is None
