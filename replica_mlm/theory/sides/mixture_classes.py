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


def _labels(labels, C: int) -> np.ndarray:
    return np.arange(C) if labels is None else labels


def hats(rule: mc.Rule, *, alpha: float, Q, M, V, weights, P, labels=None) -> dict:
    """``Q_hat, V_hat`` (K x K), ``M_hat`` (K x C, one column per cluster) and the mean training
    loss; cluster ``c`` has the class ``labels[c]`` (default: cluster ``c`` is class ``c``)."""
    K, C = M.shape
    labels = _labels(labels, C)
    out = {"Q_hat": np.zeros((K, K)), "M_hat": np.zeros((K, C)), "V_hat": np.zeros((K, K)),
           "train_loss": 0.0}
    n = rule.xi.shape[0]
    # one proximal solve over the nodes of every cluster (Newton's method runs node by node, so
    # each node's result is that of a solve of its cluster alone); the sums stay per cluster
    h_all = np.concatenate([_fields(rule.xi, Q, M, c) for c in range(C)])
    z_all, f_all, D_all = mc.prox(h_all, np.repeat(labels, n), V, P)
    for c in range(C):
        z, f, D = (a[c * n:(c + 1) * n] for a in (z_all, f_all, D_all))
        w = rule.w_xi * weights[c]
        out["Q_hat"] += alpha * np.einsum("n,na,nb->ab", w, f, f)
        out["V_hat"] += alpha * np.einsum("n,nab->ab", w, D)
        out["M_hat"][:, c] = alpha * (w @ f)
        out["train_loss"] += float(w @ (-log_softmax(z @ P.T, axis=1)[:, labels[c]]))
    out["Q_hat"] = (out["Q_hat"] + out["Q_hat"].T) / 2
    out["V_hat"] = (out["V_hat"] + out["V_hat"].T) / 2
    return out


def test_loss(rule: mc.Rule, *, Q, M, weights, P, labels=None) -> float:
    """``sum_c pi_c E CE(y_c, P h)`` on a fresh sample."""
    labels = _labels(labels, M.shape[1])
    total = 0.0
    for c in range(M.shape[1]):
        h = _fields(rule.xi, Q, M, c)
        total += weights[c] * float(rule.w_xi @ (-log_softmax(h @ P.T, axis=1)[:, labels[c]]))
    return total


def error(rule: mc.Rule, *, Q, M, weights, P, labels=None) -> float:
    """``sum_c pi_c P(argmax P h != y_c)``."""
    labels = _labels(labels, M.shape[1])
    total = 0.0
    for c in range(M.shape[1]):
        h = _fields(rule.xi, Q, M, c)
        total += weights[c] * float(rule.w_xi @ (np.argmax(h @ P.T, axis=1) != labels[c]))
    return total


@dataclass(frozen=True, eq=False)
class MixtureClasses:
    """The channel side of a cluster mixture learnt with the softmax cross-entropy
    (:class:`.interfaces.MatrixChannelSide`): integration rule, cluster weights, simplex basis ``P``
    and each cluster's class (None: the q clusters are the q classes; the local theory's clusters
    are the label times the neighbourhood's configuration)."""

    rule: mc.Rule
    weights: np.ndarray
    P: np.ndarray
    labels: np.ndarray | None = None

    def hats(self, alpha: float, V, Q, M) -> dict:
        return hats(self.rule, alpha=alpha, Q=Q, M=M, V=V, weights=self.weights, P=self.P, labels=self.labels)

    def cold_hats(self, alpha: float) -> dict:
        """The hats of the cold start: those of the square loss's size, ``M_hat`` along the means
        (of each cluster's class, in proportion to its weight when clusters are not classes)."""
        K, q = self.P.shape[1], self.P.shape[0]
        M_hat = self.P.T / q if self.labels is None else self.P.T[:, self.labels] * self.weights[None, :]
        return {"V_hat": alpha / 2 * np.eye(K), "Q_hat": alpha / 4 * np.eye(K), "M_hat": alpha / 2 * M_hat}

    def test_loss(self, Q, M) -> float:
        return test_loss(self.rule, Q=Q, M=M, weights=self.weights, P=self.P, labels=self.labels)
