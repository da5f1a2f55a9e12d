"""The channel side of a q-cluster Gaussian mixture learnt with the softmax cross-entropy (K = q - 1).

docs/multiclass.md, section "The site as a Gaussian mixture". A Potts site's reduced inputs are
``x = mu_c + S^{1/2} g`` given its colour ``c`` (probability ``pi_c``); the student's K logit
directions ``W`` (d x K) see on a sample of class ``c`` the field ``h = M_c + L xi`` with
``M_c = W^T mu_c`` (column ``c`` of the K x q overlap ``M``), ``Q = W^T S W = L L^T`` and
``xi ~ N(0, I_K)``. With the proximal point of the cross-entropy (:func:`.multiclass_channel.prox`:
``f = V^{-1}(z* - h)``, ``D = -df/dh``) the conjugates are (Loureiro et al., NeurIPS 2021,
arXiv:2106.03791)

    Q_hat = alpha sum_c pi_c E f f^T,   V_hat = alpha sum_c pi_c E D,   M_hat[:, c] = alpha pi_c E f,

and the prior side is :func:`.prior.ridge_matrices` with the K x q "teacher" ``theta_{k,c} =
mu_{c,k} / omega_k`` per mode of ``S`` (then the mean term ``omega_k M_hat theta_k`` is
``sum_c mu_{c,k} M_hat[:, c]``). The expectations over ``xi`` use the tensor Gauss-Hermite rule of
:func:`.multiclass_channel.hermite_rule`; the error rate (an indicator) scrambled Sobol' points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax

from replica_mlm.theory.sides import multiclass_channel as mc


def _fields(xi: np.ndarray, Q: np.ndarray, M: np.ndarray, c: int) -> np.ndarray:
    L = np.linalg.cholesky(Q)
    return M[:, c][None, :] + xi @ L.T


def hats(rule: mc.Rule, *, alpha: float, Q, M, V, weights, P) -> dict:
    """``Q_hat, V_hat`` (K x K), ``M_hat`` (K x q) and the mean training loss."""
    K, q = M.shape
    out = {"Q_hat": np.zeros((K, K)), "M_hat": np.zeros((K, q)), "V_hat": np.zeros((K, K)),
           "train_loss": 0.0}
    for c in range(q):
        h = _fields(rule.xi, Q, M, c)
        z, f, D = mc.prox(h, np.full(h.shape[0], c), V, P)
        w = rule.w_xi * weights[c]
        out["Q_hat"] += alpha * np.einsum("n,na,nb->ab", w, f, f)
        out["V_hat"] += alpha * np.einsum("n,nab->ab", w, D)
        out["M_hat"][:, c] = alpha * (w @ f)
        out["train_loss"] += float(w @ (-log_softmax(z @ P.T, axis=1)[:, c]))
    out["Q_hat"] = (out["Q_hat"] + out["Q_hat"].T) / 2
    out["V_hat"] = (out["V_hat"] + out["V_hat"].T) / 2
    return out


def test_loss(rule: mc.Rule, *, Q, M, weights, P) -> float:
    """``sum_c pi_c E CE(c, P h)`` on a fresh sample."""
    total = 0.0
    for c in range(M.shape[1]):
        h = _fields(rule.xi, Q, M, c)
        total += weights[c] * float(rule.w_xi @ (-log_softmax(h @ P.T, axis=1)[:, c]))
    return total


def error(rule: mc.Rule, *, Q, M, weights, P) -> float:
    """``sum_c pi_c P(argmax P h != c)``."""
    total = 0.0
    for c in range(M.shape[1]):
        h = _fields(rule.xi, Q, M, c)
        total += weights[c] * float(rule.w_xi @ (np.argmax(h @ P.T, axis=1) != c))
    return total


@dataclass(frozen=True, eq=False)
class MixtureClasses:
    """The channel side of a q-cluster mixture learnt with the softmax cross-entropy
    (:class:`.interfaces.MatrixChannelSide`): integration rule, class weights, simplex basis ``P``."""

    rule: mc.Rule
    weights: np.ndarray
    P: np.ndarray

    def hats(self, alpha: float, V, Q, M) -> dict:
        return hats(self.rule, alpha=alpha, Q=Q, M=M, V=V, weights=self.weights, P=self.P)

    def cold_hats(self, alpha: float) -> dict:
        """The hats of the cold start: those of the square loss's size, ``M_hat`` along the means."""
        K, q = self.P.shape[1], self.P.shape[0]
        return {"V_hat": alpha / 2 * np.eye(K), "Q_hat": alpha / 4 * np.eye(K),
                "M_hat": alpha / 2 * (self.P.T / q)}
