"""The channel side of a two-class cluster mixture learnt with any convex loss (the local theory of
an Ising site).

docs/discrete.md, section "Sparse couplings". The data are clusters ``c`` (the label and the
neighbourhood's configuration) with weights ``pi_c``, labels ``y_c = +-1`` and means ``mu_c``; the
student's field on a sample of cluster ``c`` is ``omega = M_c + sqrt(Q) xi`` with ``M_c = w . mu_c``
and ``Q = w^T S w`` (``S`` the pooled covariance, zero on the neighbourhood's coordinates). With
``f`` and ``d_w f`` from the loss's proximal operator (as :mod:`.mixture_side`),

    M_hat_c = alpha pi_c E_xi f(y_c, omega, V)
    Q_hat   = alpha sum_c pi_c E_xi f(y_c, omega, V)^2
    V_hat   = - alpha sum_c pi_c E_xi d_w f(y_c, omega, V)

in the K x K form of :class:`.interfaces.MatrixChannelSide` with ``K = 1`` (``V``, ``Q`` 1 x 1,
``M`` and ``M_hat`` 1 x C), so that the multi-class driver solves it with the ridge prior on the
modes of ``S`` written in the cluster means (:class:`.prior.RidgeMeansPrior`). Two clusters at
``+-mu`` with labels ``+-1`` are the two-cluster mixture of :mod:`.mixture_side`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from replica_mlm.theory.sides.energetic import ORDER, panels
from replica_mlm.theory.sides.losses import Loss


@dataclass(frozen=True, eq=False)
class LocalClusters:
    """The channel side of clusters with labels ``+-1`` and any convex loss
    (:class:`.interfaces.MatrixChannelSide` with ``K = 1``).

    Attributes
    ----------
    loss : Loss
    weights : ndarray (C,)
        ``pi_c``.
    signs : ndarray (C,)
        ``y_c`` (+1 for colour 0, -1 for colour 1).
    order : int
        Gauss-Legendre nodes per panel.
    """

    loss: Loss
    weights: np.ndarray
    signs: np.ndarray
    order: int = ORDER

    def _all_nodes(self, V: float, q: float, M, at: str):
        """The nodes of every cluster, concatenated: fields, labels, weights and cluster indices.
        Panels without edges of their own (a smooth loss) are built once and shifted."""
        fields, labels, weights, index = [], [], [], []
        shared = None
        for c, y in enumerate(self.signs):
            lab = np.array([y])
            breaks = self.loss.thresholds(lab, V) if at == "prox" else self.loss.kink_points(lab)
            if not breaks and shared is None:
                shared = panels(math.sqrt(q), [], self.order)
            x, cw = shared if not breaks else panels(math.sqrt(q), [b[0] - M[0, c] for b in breaks],
                                                     self.order)
            fields.append(M[0, c] + x)
            labels.append(np.full(x.shape, y))
            weights.append(cw * self.weights[c])
            index.append(np.full(x.shape, c))
        return (np.concatenate(fields), np.concatenate(labels), np.concatenate(weights),
                np.concatenate(index))

    def hats(self, alpha: float, V, Q, M) -> dict:
        """``V_hat``, ``Q_hat`` (1 x 1), ``M_hat`` (1 x C) and the mean training loss (one proximal
        step over the nodes of all clusters at once)."""
        v, q = float(V[0, 0]), float(Q[0, 0])
        w, y, cw, index = self._all_nodes(v, q, M, "prox")
        px = self.loss.prox(y, w, v)
        cf = cw * px.f
        m_hat = alpha * np.bincount(index, weights=cf, minlength=self.weights.size)
        return {"V_hat": np.array([[-alpha * float(np.sum(cw * px.dfdw))]]),
                "Q_hat": np.array([[alpha * float(np.sum(cf * px.f))]]), "M_hat": m_hat[None, :],
                "train_loss": float(np.sum(cw * self.loss.value(y, px.z)))}

    def cold_hats(self, alpha: float) -> dict:
        """The hats of the cold start: those of the square loss's size, ``M_hat`` along the labels."""
        return {"V_hat": np.array([[alpha]]), "Q_hat": np.array([[alpha / 4]]),
                "M_hat": alpha / 2 * (self.weights * self.signs)[None, :]}

    def test_loss(self, Q, M) -> float:
        """``sum_c pi_c E loss(y_c, M_c + sqrt(Q) xi)`` on a fresh sample."""
        q = float(Q[0, 0])
        if q <= 0.0:
            return float(self.weights @ self.loss.value(self.signs, M[0]))
        w, y, cw, _ = self._all_nodes(1.0, q, M, "loss")
        return float(cw @ self.loss.value(y, w))

    def error(self, Q, M) -> float:
        """``sum_c pi_c P(y_c != sign(M_c + sqrt(Q) xi)) = sum_c pi_c Phi(-y_c M_c / sqrt(Q))``."""
        q = float(Q[0, 0])
        if q <= 0.0:
            return float(self.weights @ np.where(self.signs * M[0] > 0, 0.0, np.where(M[0] == 0, 0.5, 1.0)))
        return float(self.weights @ ndtr(-self.signs * M[0] / math.sqrt(q)))
