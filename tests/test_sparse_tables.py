"""The sparse-coupling tables' machinery (replica_mlm.validation.sparse_tables; docs/discrete.md,
"Sparse couplings"): the rows, the own-model simulation at small L, the checks and the markdown."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from local_helpers import as_task

import replica_mlm as rm
from replica_mlm.potts import graphs
from replica_mlm.theory.sides import losses
from replica_mlm.theory.solvers import local_engine
from replica_mlm.validation import sparse_tables as st


@pytest.fixture(scope="module")
def ring_rows():
    # a periodic ring of 10 spins: exact enumeration, every theory and the own-model column
    J = np.zeros((10, 10))
    for i in range(10):
        J[i, (i + 1) % 10] = J[(i + 1) % 10, i] = 1.0
    inst = st.SparseInstance("ring", "L = 10, beta = 0.5", rm.PottsModel.ising(couplings=J, beta=0.5),
                             alphas=(2.0,), seeds=40)
    return st.measure(inst, rng=0)


def test_a_row_holds_every_theory_and_measure_with_its_z(ring_rows):
    (row,) = ring_rows
    assert row["sampler"] == "exact enumeration" and row["neighbours"] == 2
    for k in st.MEASURES:
        for t in st.ISING_THEORIES:  # an Ising site: also each cluster's own covariance
            assert row[f"{k}_z_{t}"] == pytest.approx((row[f"{k}_sim"] - row[f"{k}_{t}"]) / row[f"{k}_se"])
        assert row[f"{k}_own_se"] > 0
    assert row["ratio_local"] == pytest.approx(1.0, abs=1e-12)  # the whole Markov blanket
    assert row["cpu_local_s"] > 0 and row["cpu_local_own_s"] > 0


@pytest.mark.slow  # about 35 s: the sampler at L = 400
def test_own_model_simulation_is_the_local_theory_at_large_p():
    # ERM on the local data model of a sparse site at p = 399: the local theory is its
    # p -> infinity limit, so they agree within 3 SE (the split of the small-L gap rests on this).
    # The data model is the mixture as measured, taken as exact (counts=None): ERM draws from its
    # sampled means, so the theory must not take their noise out (docs/discrete.md, "Sampled
    # cluster means")
    J = graphs.banded(400, rng=3)
    model = rm.PottsModel.ising(couplings=J, beta=0.5)
    task = model.masked_site(200, rng=0, samples=4000)
    with pytest.warns(RuntimeWarning, match="sampled sequences"):  # 4000 are short of the floor
        measured = as_task(dataclasses.replace(task.local_mixture, counts=None), task.p)
    own = st.own_model_point(measured, alpha=2.0, lam=0.1, seeds=8, rng=1)
    sp = local_engine.solve(measured, alpha=2.0, lam=0.1, loss=losses.resolve("logistic"))
    for k in st.MEASURES:
        mean, se = own[k]
        assert abs(mean - getattr(sp, k)) <= 3 * se, (k, mean, se, getattr(sp, k))


def test_the_checks_hold_the_local_theory_and_need_the_gaussian_one_off(ring_rows):
    row = dict(ring_rows[0])
    agreement, matters = st.checks([row])
    assert agreement.name == "discrete.local_agreement" and matters.name == "discrete.local_matters"
    assert agreement.value == max(abs(row[f"{k}_z_local"]) for k in st.MEASURES)
    assert agreement.passed is (agreement.value <= 3)
    bad = dict(row, eg_z_local=7.0)
    assert not st.checks([bad])[0].passed


def test_markdown_has_one_table_per_measure_and_the_validity_table(ring_rows):
    text = st.markdown(ring_rows)
    assert text.count("| instance | alpha | simulation |") == 3
    assert "| L = 10, beta = 0.5 | 2 |" in text and "exact enumeration" in text
    assert text.count("| local, each cluster's covariance (z) |") == 3
    # a row without the own-covariance theory (more colours) shows a dash in its column
    row = {k: v for k, v in ring_rows[0].items() if "local_own" not in k}
    assert st.markdown([row]).count("| - |") == 3


def test_a_site_short_of_sequences_is_measured_again_on_what_its_local_mixture_needs(monkeypatch):
    # the tables hold the theories, not their sampled means' noise: a site whose 20 000 sequences
    # fall short of samples_needed is measured again on that many plus 10 %, rounded up
    import warnings

    from replica_mlm.potts.graphs import banded
    from replica_mlm.tasks import local_site

    model = rm.PottsModel.ising(couplings=banded(24, width=1, rng=0), beta=0.3)  # sampled: L > 22
    enough = st.measured_site(model, 10, rng=0, sequences=20000)  # 8 clusters x 21 inputs x 3 suffice
    assert enough.local_mixture.n_samples == 20000
    monkeypatch.setattr(local_site, "SAMPLES_PER_CLUSTER_INPUT", 150)
    short = model.masked_site(10, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        need = local_site.samples_needed(short.local_mixture)
    assert need > 20000
    again = st.measured_site(model, 10, rng=0, sequences=20000)
    assert again.local_mixture.n_samples == -(-int(1.1 * need) // 1000) * 1000 > need
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # enough now: no warning
        assert local_site.samples_needed(again.local_mixture) <= again.local_mixture.n_samples
