"""Sparse coupling families (replica_mlm.potts.graphs; docs/discrete.md, "Sparse couplings") and
the Bayes error of a local data model of teacher-field bins (docs/discrete.md, "When a theory holds")."""

from __future__ import annotations

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.potts import graphs


def test_square_lattice_has_four_distinct_neighbours_per_site_and_periodic_bonds():
    J = graphs.square_lattice(5)
    assert J.shape == (25, 25) and np.array_equal(J, J.T) and not np.any(np.diag(J))
    assert np.all((J != 0).sum(axis=1) == 4) and set(np.unique(J)) == {0.0, 1.0}
    assert J[0, 4] == 1.0 and J[0, 20] == 1.0  # the wrap-around bonds of site (0, 0)
    glass = graphs.square_lattice(5, signs="glass", rng=1)
    assert np.array_equal(glass != 0, J != 0) and set(np.unique(glass)) == {-1.0, 0.0, 1.0}


def test_random_regular_is_simple_and_regular():
    for seed in range(5):
        J = graphs.random_regular(30, degree=3, rng=seed)
        assert np.array_equal(J, J.T) and not np.any(np.diag(J))
        assert np.all((J != 0).sum(axis=1) == 3)
    assert not np.array_equal(graphs.random_regular(30, rng=0), graphs.random_regular(30, rng=1))


def test_banded_couples_the_band_and_about_one_long_range_contact_per_site():
    L, width = 200, 2
    J = graphs.banded(L, width=width, contacts=1.0, rng=0)
    i, j = np.nonzero(np.triu(J))
    near = (j - i) <= width
    assert near.sum() == sum(L - k for k in range(1, width + 1))  # every pair of the band
    assert (~near).sum() == L // 2  # round(contacts * L / 2) long-range contacts
    assert np.array_equal(J, J.T)


@pytest.mark.parametrize("call, match", [
    (lambda: graphs.square_lattice(2), "side must be >= 3"),
    (lambda: graphs.square_lattice(4, signs="anti"), "signs"),
    (lambda: graphs.random_regular(5, degree=3), "L \\* degree even"),
    (lambda: graphs.random_regular(4, degree=4), "degree < L"),
    (lambda: graphs.banded(5, width=2), "L must be >= 2 width \\+ 2 = 6"),
    (lambda: graphs.banded(20, contacts=-1.0), "contacts"),
])
def test_bad_sizes_are_refused_with_the_allowed_range(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_binned_local_model_has_the_sites_bayes_error_up_to_its_bins():
    # 10 neighbours (a count: the rule would call 10 of 11 coupled sites dense): 2^10 configurations
    # > 256, so the local data model bins the teacher field; L = 12 is enumerated exactly, so both
    # Bayes errors are exact
    gen = np.random.default_rng(4)
    J = np.zeros((12, 12))
    J[0, 1:11] = gen.normal(size=10)
    J = J + J.T
    J[5, 6] = J[6, 5] = 0.5
    task = rm.PottsModel.ising(couplings=J, beta=0.8).masked_site(0, rng=0, neighbours=10)
    assert len(task.neighbourhood) == 10 and task.local_mixture.binned
    v = task.validity(theory="local")
    # the bins merge teacher fields of different conditionals only through their width: the bin
    # oracle is at least the site's Bayes error and within 2 % of it here (64 bins, 1024 fields)
    assert v.bayes_error_site <= v.bayes_error_model <= 1.02 * v.bayes_error_site
    assert v.ok
