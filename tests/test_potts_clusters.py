"""Swendsen-Wang cluster updates (replica_mlm.potts.clusters; docs/potts.md, "Cluster updates").

The sampler is held against the exact Boltzmann law by enumeration: the counts of every energy
level in thinned samples against their exact probabilities (a chi-square test at p > 0.001, fixed
seeds), for Ising spins on a periodic 3 x 3 lattice in the ordered phase and a q = 3 Potts
ferromagnet with unequal couplings on a random graph. The global flip that single-site Gibbs
cannot make in the ordered phase is checked on a 10 x 10 lattice.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

import replica_mlm as rm
from replica_mlm.potts import clusters, graphs


def _energy_counts(model, seqs):
    """(observed counts, exact probabilities) of the energy levels of ``model``."""
    bonds = clusters.ClusterBonds(model)
    exact_E = np.round(bonds.energies(model.all_sequences()), 9)
    levels, where = np.unique(exact_E, return_inverse=True)
    P = np.bincount(where, weights=model.boltzmann_probabilities(), minlength=levels.size)
    seen = np.searchsorted(levels, np.round(bonds.energies(seqs), 9))
    return np.bincount(seen, minlength=levels.size), P


def _energy_pvalue(model, seqs) -> float:
    """Chi-square p-value of the energy levels of ``seqs`` against the exact law (cells with fewer
    than 5 expected pooled)."""
    counts, P = _energy_counts(model, seqs)
    big = P * counts.sum() >= 5
    obs = np.r_[counts[big], counts[~big].sum()]
    exp = np.r_[P[big], P[~big].sum()] * counts.sum()
    return chisquare(obs[exp > 0], exp[exp > 0]).pvalue


@pytest.mark.parametrize("model", [
    rm.PottsModel.ising(couplings=graphs.square_lattice(3), beta=0.6),
    rm.PottsModel(couplings=graphs.random_regular(8, degree=3, rng=2), colours=np.eye(3), beta=1.2),
], ids=["ising-3x3-ordered", "potts-q3-random-graph"])
def test_cluster_samples_follow_the_boltzmann_law(model):
    assert _energy_pvalue(model, model.sample(4000, rng=0, method="cluster")) > 1e-3


def test_unequal_ferromagnetic_couplings_are_sampled_exactly():
    J = np.abs(graphs.random_regular(8, degree=3, rng=2)) * np.random.default_rng(4).uniform(0.3, 1.7, (8, 8))
    model = rm.PottsModel.ising(couplings=np.triu(J, 1) + np.triu(J, 1).T, beta=0.9)
    assert _energy_pvalue(model, model.sample(4000, rng=1, method="cluster")) > 1e-3


def test_the_ordered_lattice_visits_both_states():
    """At beta = 0.6 > beta_c the 10 x 10 lattice is ordered (|m| near 0.9); the clusters flip the
    ordered domain, so the mean magnetisation over samples is 0 within 4 SE."""
    model = rm.PottsModel.ising(couplings=graphs.square_lattice(10), beta=0.6)
    seqs, d = model.sample(2000, rng=3, method="cluster", return_diagnostics=True)
    m = (1 - 2 * seqs).mean(axis=1)
    assert d.method == "cluster" and d.mixing and d.tau_int < 10
    assert np.mean(np.abs(m)) > 0.8
    assert abs(m.mean()) < 4 * m.std(ddof=1) / np.sqrt(m.size / (2 * d.tau_int))
    more = model.sample(500, rng=4, resume=d)  # the pilot's chains continue by cluster updates
    assert abs((1 - 2 * more).mean()) < 0.5


def test_auto_takes_clusters_on_a_ferromagnet_and_gibbs_elsewhere():
    """At beta = 0.6 Gibbs does not mix on the 6 x 6 lattice within 400 sweeps; the clusters do."""
    model = rm.PottsModel.ising(couplings=graphs.square_lattice(6), beta=0.6)
    assert not model.gibbs_diagnostics(rng=0, method="gibbs", max_sweeps=400).mixing
    d = model.gibbs_diagnostics(rng=0, method="auto", max_sweeps=400)
    assert d.method == "cluster" and d.mixing
    glass = rm.PottsModel.ising(couplings=graphs.square_lattice(6, signs="glass", rng=0), beta=0.3)
    assert glass.gibbs_diagnostics(rng=0, method="auto").method == "gibbs"


@pytest.mark.parametrize("model", [
    rm.PottsModel.ising(couplings=graphs.square_lattice(4, signs="glass", rng=0), beta=0.5),
    rm.PottsModel(couplings=np.abs(graphs.square_lattice(3)), colours=np.array([[1.0, 0.2], [0.2, 0.5]]),
                  beta=0.5),
], ids=["glass", "colours"])
def test_models_without_a_cluster_form_are_refused(model):
    with pytest.raises(ValueError, match='method="cluster" needs ferromagnetic couplings'):
        model.sample(10, rng=0, method="cluster")
    with pytest.raises(ValueError, match="method"):
        model.tune_beta(0.3, rng=0, method="cluster")
