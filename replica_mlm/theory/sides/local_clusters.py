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
        """The nodes of every cluster, concatenated cluster by cluster: fields, labels, weights,
        cluster indices and where each cluster's nodes start. Without edges of the loss's own (a
        smooth loss) every cluster shares one standardised rule, shifted by its ``M_c``."""
        C = self.weights.size
        kinks = [self.loss.thresholds(label, V) if at == "prox" else self.loss.kink_points(label)
                 for label in (np.array([1.0]), np.array([-1.0]))]
        if not any(kinks):
            x, cw = panels(math.sqrt(q), [], self.order)
            n = x.size
            return ((M[0][:, None] + x).ravel(), np.repeat(self.signs, n),
                    (self.weights[:, None] * cw).ravel(), np.repeat(np.arange(C), n), np.arange(0, C * n, n))
        fields, labels, weights, index = [], [], [], []
        for c, y in enumerate(self.signs):
            breaks = kinks[0] if y > 0 else kinks[1]
            x, cw = panels(math.sqrt(q), [b[0] - M[0, c] for b in breaks], self.order)
            fields.append(M[0, c] + x)
            labels.append(np.full(x.shape, y))
            weights.append(cw * self.weights[c])
            index.append(np.full(x.shape, c))
        starts = np.cumsum([0] + [a.size for a in fields[:-1]])
        return (np.concatenate(fields), np.concatenate(labels), np.concatenate(weights),
                np.concatenate(index), starts)

    def hats(self, alpha: float, V, Q, M) -> dict:
        """``V_hat``, ``Q_hat`` (1 x 1), ``M_hat`` (1 x C) and the mean training loss (one proximal
        step over the nodes of all clusters at once)."""
        return self._hats(alpha, V, Q, M, jacobian=False)[0]

    def hats_jacobian(self, alpha: float, V, Q, M) -> tuple[dict, np.ndarray]:
        """The hats of :meth:`hats` and their Jacobian from the same proximal step: the
        (C + 2) x (C + 2) derivatives of ``(V_hat, Q_hat, M_hat_1..C)`` in ``(V, Q, M_1..C)``.

        Every entry is a Gaussian integral of the same nodes, by ``d/dV f = f d_w f`` at fixed
        ``w`` and integration by parts on ``w = M_c + sqrt(Q) xi`` (``d/dM_c E g = E[xi g] /
        sqrt(Q)``, ``d/dQ E g = E[(xi^2 - 1) g] / (2 Q)``), so no second derivative of ``f`` is
        needed and a kink of the loss needs no special case (docs/discrete.md, "Cost of a local
        solve")."""
        return self._hats(alpha, V, Q, M, jacobian=True)

    def _hats(self, alpha: float, V, Q, M, *, jacobian: bool):
        v, q = float(V[0, 0]), float(Q[0, 0])
        w, y, cw, index, starts = self._all_nodes(v, q, M, "prox")
        px = self.loss.prox(y, w, v)
        f, fw = px.f, px.dfdw
        C = self.weights.size

        def per_cluster(g):  # alpha sum over each cluster's nodes of its weight times g
            return alpha * np.add.reduceat(cw * g, starts)

        m_hat = per_cluster(f)
        hats = {"V_hat": np.array([[-alpha * float(np.sum(cw * fw))]]),
                "Q_hat": np.array([[alpha * float(np.sum(cw * f * f))]]), "M_hat": m_hat[None, :],
                "train_loss": float(np.sum(cw * self.loss.value(y, px.z)))}
        if not jacobian:
            return hats, None
        root = math.sqrt(q)
        xi = (w - M[0, index]) / root
        by_q = (xi * xi - 1.0) / (2.0 * q)
        f_fw = per_cluster(f * fw)  # d M_hat_c / d V, and half of d Q_hat / d M_c
        J = np.empty((C + 2, C + 2))
        # rows: V_hat, Q_hat, M_hat_c; columns: V, Q, M_c
        J[0, 0] = -float(np.sum(per_cluster(xi * f * fw))) / root
        J[1, 0] = 2.0 * float(np.sum(per_cluster(f * f * fw)))
        J[2:, 0] = f_fw
        J[0, 1] = -float(np.sum(per_cluster(by_q * fw)))
        J[1, 1] = float(np.sum(per_cluster(by_q * f * f)))
        J[2:, 1] = per_cluster(by_q * f)
        J[0, 2:] = -per_cluster(xi * fw) / root
        J[1, 2:] = 2.0 * f_fw
        J[2:, 2:] = np.diag(per_cluster(fw))
        return hats, J

    def cold_hats(self, alpha: float) -> dict:
        """The hats of the cold start: those of the square loss's size, ``M_hat`` along the labels."""
        return {"V_hat": np.array([[alpha]]), "Q_hat": np.array([[alpha / 4]]),
                "M_hat": alpha / 2 * (self.weights * self.signs)[None, :]}

    def test_loss(self, Q, M) -> float:
        """``sum_c pi_c E loss(y_c, M_c + sqrt(Q) xi)`` on a fresh sample."""
        q = float(Q[0, 0])
        if q <= 0.0:
            return float(self.weights @ self.loss.value(self.signs, M[0]))
        w, y, cw, _, _ = self._all_nodes(1.0, q, M, "loss")
        return float(cw @ self.loss.value(y, w))

    def error(self, Q, M) -> float:
        """``sum_c pi_c P(y_c != sign(M_c + sqrt(Q) xi)) = sum_c pi_c Phi(-y_c M_c / sqrt(Q))``."""
        q = float(Q[0, 0])
        if q <= 0.0:
            return float(self.weights @ np.where(self.signs * M[0] > 0, 0.0, np.where(M[0] == 0, 0.5, 1.0)))
        return float(self.weights @ ndtr(-self.signs * M[0] / math.sqrt(q)))
