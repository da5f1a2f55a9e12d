"""The local theory with each cluster's own covariance: its channel side, prior side and packing.

docs/discrete.md, section "Each cluster's own covariance". The data are clusters ``c`` with weights
``pi_c``, labels ``y_c = +-1``, means ``mu_c`` and covariances ``S_c`` (zero on the neighbourhood's
coordinates). The student's field on a sample of cluster ``c`` is ``M_c + sqrt(Q_c) xi`` with
``M_c = w . mu_c`` and ``Q_c = w^T S_c w``, and the proximal step of cluster ``c`` has its own
``V_c``. With ``f`` and ``d_w f`` from the loss's proximal operator (as :mod:`.local_clusters`),

    M_hat_c = alpha pi_c E_xi f,   Q_hat_c = alpha pi_c E_xi f^2,   V_hat_c = - alpha pi_c E_xi d_w f,

and the ridge prior ``(lam p / 2) |w|^2`` gives, with ``A = lam I + sum_c V_hat_c S_c``,
``T = sum_c Q_hat_c S_c`` and the estimator's mean ``w_bar = A^{-1} sum_c M_hat_c mu_c``,

    V_c = tr(S_c A^{-1}) / p,   Q_c = w_bar^T S_c w_bar + tr(S_c A^{-1} T A^{-1}) / p,   M_c = mu_c . w_bar,

and the estimation error ``|w_bar - w*|^2 + tr(A^{-1} T A^{-1}) / p`` (Loureiro et al., NeurIPS
2021, arXiv:2106.03791, for clusters with their own covariances). With one covariance ``S_c = S``
these are the equations of :class:`.prior.RidgeMeansPrior` and :class:`.local_clusters.LocalClusters`
summed over the clusters. The order parameters are rows (1 x C), one entry per cluster, in the
result's ``V``, ``Q``, ``M`` and their hats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import ndtr

from replica_mlm.theory.sides.energetic import panels
from replica_mlm.theory.sides.local_clusters import LocalClusters


class OwnCovarianceClusters(LocalClusters):
    """The channel side of clusters with labels ``+-1``, each with its own ``V_c`` and ``Q_c``
    (:class:`.interfaces.MatrixChannelSide`, order parameters 1 x C); the attributes of
    :class:`.local_clusters.LocalClusters` (loss, weights ``pi_c``, signs ``y_c``, nodes per panel)."""

    #: not written for one ``V_c``, ``Q_c`` per cluster: the pooled side's Jacobian would be wrong here
    hats_jacobian = None

    def _nodes(self, c: int, V: float, q: float, M_c: float, at: str):
        """Fields and weights of ``E_xi`` for cluster ``c``, panel edges at the prox's kink
        thresholds (``at="prox"``) or the loss's kinks (``at="loss"``)."""
        lab = np.array([self.signs[c]])
        breaks = self.loss.thresholds(lab, V) if at == "prox" else self.loss.kink_points(lab)
        x, cw = panels(math.sqrt(q), [b[0] - M_c for b in breaks], self.order)
        return M_c + x, cw

    def hats(self, alpha: float, V, Q, M) -> dict:
        """``V_hat``, ``Q_hat``, ``M_hat`` (1 x C each) and the mean training loss (one proximal
        step over the nodes of all clusters, each node with its cluster's ``V_c``)."""
        C = self.weights.size
        nodes = [self._nodes(c, float(V[0, c]), float(Q[0, c]), float(M[0, c]), "prox") for c in range(C)]
        index = np.concatenate([np.full(w.size, c) for c, (w, _) in enumerate(nodes)])
        w = np.concatenate([w for w, _ in nodes])
        cw = np.concatenate([cw for _, cw in nodes]) * self.weights[index]
        y = self.signs[index]
        px = self.loss.prox(y, w, V[0, index])

        def per_cluster(values):
            return alpha * np.bincount(index, weights=cw * values, minlength=C)[None, :]

        return {"M_hat": per_cluster(px.f), "Q_hat": per_cluster(px.f * px.f), "V_hat": -per_cluster(px.dfdw),
                "train_loss": float(cw @ self.loss.value(y, px.z))}

    def cold_hats(self, alpha: float) -> dict:
        """The cold start's hats: those of the square loss's size, shared out by the weights (their
        sums are :meth:`.local_clusters.LocalClusters.cold_hats`)."""
        pi = self.weights[None, :]
        return {"V_hat": alpha * pi, "Q_hat": alpha / 4 * pi, "M_hat": alpha / 2 * pi * self.signs[None, :]}

    def test_loss(self, Q, M) -> float:
        """``sum_c pi_c E loss(y_c, M_c + sqrt(Q_c) xi)`` on a fresh sample."""
        total = 0.0
        for c in range(self.weights.size):
            w, cw = self._nodes(c, 1.0, float(Q[0, c]), float(M[0, c]), "loss")
            total += self.weights[c] * float(cw @ self.loss.value(np.full(w.shape, self.signs[c]), w))
        return total

    def error(self, Q, M) -> float:
        """``sum_c pi_c Phi(-y_c M_c / sqrt(Q_c))``."""
        return float(self.weights @ ndtr(-self.signs * M[0] / np.sqrt(Q[0])))


@dataclass(frozen=True, eq=False)
class OwnCovarianceRidge:
    """The ridge prior side of clusters with their own covariances
    (:class:`.interfaces.MatrixPriorSide`, order parameters 1 x C).

    Attributes
    ----------
    means : ndarray (C, d)
        ``mu_c``.
    covariances : ndarray (C, d, d)
        ``S_c`` (symmetric, positive semi-definite).
    p : int
        The normalisation of ``V`` and of the variances (the site's inputs).
    lam : float
    teacher : ndarray (d,)
        ``w*``, for the estimation error.
    noise : ndarray (C,) or None
        ``1 / n_c`` of means sampled ``n_c`` times each (None: exact means). A sampled mean's noise
        ``S_c / n_c`` is taken out where the overlaps read its square: ``T`` is summed with
        ``Q_hat_c - p M_hat_c^2 noise_c`` and ``M_c`` loses ``p V_c M_hat_c noise_c``
        (docs/discrete.md, "Sampled cluster means").
    """

    means: np.ndarray
    covariances: np.ndarray
    p: int
    lam: float
    teacher: np.ndarray
    noise: np.ndarray | None = None

    def _estimator(self, h: dict):
        """``A^{-1}``, ``w_bar`` and ``A^{-1} T A^{-1}`` at the hats."""
        C, d = self.means.shape
        # one pass over the covariances for both sums (they are C d^2 numbers: memory-bound)
        q_hat = h["Q_hat"][0]
        if self.noise is not None:  # sampled means: their noise out of T
            q_hat = q_hat - self.p * h["M_hat"][0] ** 2 * self.noise
        hats = np.stack([h["V_hat"][0], q_hat])
        A, T = (hats @ self.covariances.reshape(C, d * d)).reshape(2, d, d)
        A[np.diag_indices_from(A)] += self.lam
        inv = cho_solve(cho_factor(A), np.eye(d))
        w_bar = inv @ (self.means.T @ h["M_hat"][0])
        return inv, w_bar, inv @ T @ inv

    def overlaps(self, h: dict):
        """``(V, Q, M)`` (1 x C each) at the hats ``h``."""
        inv, w_bar, noise = self._estimator(h)
        C, d = self.means.shape
        # tr(S_c X) = <S_c, X> for symmetric X: both traces in one pass over the covariances
        X = np.stack([inv.ravel() / self.p, (np.outer(w_bar, w_bar) + noise / self.p).ravel()], axis=1)
        V, Q = (self.covariances.reshape(C, d * d) @ X).T
        M = self.means @ w_bar
        if self.noise is not None:
            M = M - self.p * V * h["M_hat"][0] * self.noise
        return V[None, :], Q[None, :], M[None, :]

    def estimation_error(self, h: dict) -> float:
        """``E |w_hat - w*|^2 = |w_bar - w*|^2 + tr(A^{-1} T A^{-1}) / p`` at the hats ``h``."""
        _, w_bar, noise = self._estimator(h)
        return float(np.sum((w_bar - self.teacher) ** 2) + np.trace(noise) / self.p)


@dataclass(frozen=True)
class ClusterPacking:
    """The unknowns of ``(V, Q, M)`` (1 x C each): ``log V_c``, ``log Q_c``, then ``M_c``."""

    C: int

    def pack(self, V, Q, M) -> np.ndarray:
        """A ``V_c`` or ``Q_c`` that is not positive packs to NaN, which the driver refuses as outside
        the domain (no warning of numpy's on the way)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.concatenate([np.log(V[0]), np.log(Q[0]), M[0]])

    def unpack(self, x):
        x = np.asarray(x, dtype=float)
        C = self.C
        return np.exp(x[:C])[None, :], np.exp(x[C:2 * C])[None, :], x[2 * C:][None, :].copy()
