"""The prior side of the saddle point: the ridge penalty ``(lam p / 2) |w|^2``, in closed form.

In the eigenbasis of Sigma (eigenvalues ``omega_k``) the estimator's row ``k`` is Gaussian given
the hats. For a scalar overlap (one output; :func:`ridge`, :func:`estimation_error`) the per-mode
summands are those sympy derives in :func:`.potentials.derive` and :func:`.potentials.estimation`
(compiled by :mod:`.compiled`). For K x K overlaps (K outputs, teacher rows ``theta_k`` in R^K;
:func:`ridge_matrices`, :func:`estimation_error_matrices`), with ``G_k = (lam I + omega_k V_hat)^{-1}``,

    w_k = G_k (omega_k M_hat theta_k + sqrt(omega_k / p) Q_hat^{1/2} z_k),

so that ``V = (1/p) sum_k omega_k G_k``, ``M = sum_k omega_k E[w_k] theta_k^T``,
``Q = sum_k omega_k E[w_k w_k^T]`` and ``E |W - W*|_F^2 = sum_k |omega_k G_k M_hat theta_k -
theta_k|^2 + (omega_k / p) tr(G_k Q_hat G_k)``; at K = 1 these are the scalar forms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.symbolic.compiled import compiled, compiled_estimation


@dataclass(frozen=True)
class RidgePrior:
    """The ridge prior side of a scalar saddle point (:class:`.interfaces.PriorSide`): the penalty
    ``(lam p / 2) |w|^2`` on the modes of ``spec``."""

    spec: Spectrum
    lam: float

    def overlaps(self, V_hat: float, q_hat: float, m_hat: float) -> tuple[float, float, float]:
        """``(V, q, m)`` at the hats (:func:`ridge`)."""
        return ridge(self.spec, self.lam, V_hat, q_hat, m_hat)

    def estimation_error(self, V_hat: float, q_hat: float, m_hat: float) -> float:
        """``E |w_hat - w*|^2`` at the hats (:func:`estimation_error`)."""
        return estimation_error(self.spec, self.lam, V_hat, q_hat, m_hat)


def ridge(spec: Spectrum, lam: float, V_hat: float, q_hat: float, m_hat: float) -> tuple[float, float, float]:
    """``(V, q, m)`` of the ridge prior at the hats: the sums over the modes of ``spec``."""
    terms = compiled().modes_together(spec.omega, spec.bulk, spec.teacher, lam, V_hat, q_hat, m_hat)
    V, q, m = (float(np.sum(np.broadcast_to(t, spec.omega.shape))) for t in terms)
    return V, q, m


def estimation_error(spec: Spectrum, lam: float, V_hat: float, q_hat: float, m_hat: float) -> float:
    """E |w_hat - w*|^2 from the hats (any loss and channel: :func:`.potentials.estimation_mode`).

    At huge lam the square ``(lam + V_hat omega)^2`` overflows to inf and the noise term is 0,
    which is its value to double precision; that overflow is not reported.
    """
    with np.errstate(over="ignore"):
        est = compiled_estimation()[0](spec.omega, spec.bulk, spec.teacher, lam, V_hat, q_hat, m_hat)
    return float(np.sum(np.broadcast_to(est, spec.omega.shape)))


def ridge_matrices(omega: np.ndarray, theta: np.ndarray, p: int, lam: float, V_hat, Q_hat, M_hat):
    """``(V, Q, M)`` of the ridge prior at K x K hats, and the per-mode ``G_k`` and
    ``G_k M_hat theta_k`` (``theta`` holds the teacher rows, one per mode)."""
    K = V_hat.shape[0]
    G = np.linalg.inv(lam * np.eye(K) + omega[:, None, None] * V_hat)
    G = (G + np.swapaxes(G, 1, 2)) / 2
    gm = np.einsum("kab,kb->ka", G, theta @ M_hat.T)  # G_k M_hat theta_k
    V = np.einsum("k,kab->ab", omega, G) / p
    M = np.einsum("k,ka,kb->ab", omega**2, gm, theta)
    Q = (np.einsum("k,ka,kb->ab", omega**3, gm, gm)
         + np.einsum("k,kab,bc,kdc->ad", omega**2 / p, G, Q_hat, G))
    return (V + V.T) / 2, (Q + Q.T) / 2, M, G, gm


def estimation_error_matrices(omega, theta, p: int, lam: float, V_hat, Q_hat, M_hat, target=None) -> float:
    """``E |W - W*|_F^2`` from K x K hats (mode by mode, see the module docstring); the teacher's
    rows are ``target`` (default ``theta``; a mixture's site has its own teacher beside the rows
    ``theta = S^{-1} mu`` its means define)."""
    _, _, _, G, gm = ridge_matrices(omega, theta, p, lam, V_hat, Q_hat, M_hat)
    bias = np.sum((omega[:, None] * gm - (theta if target is None else target)) ** 2)
    var = np.einsum("k,kab,bc,kac->", omega / p, G, Q_hat, G)
    return float(bias + var)


@dataclass(frozen=True, eq=False)
class RidgeMatrixPrior:
    """The ridge prior side of a K x K saddle point (:class:`.interfaces.MatrixPriorSide`): modes
    ``omega`` with teacher rows ``theta`` (``target``: the rows the estimation error is measured
    against, default ``theta``); ``symmetric`` projects the overlaps onto multiples of I (a
    colour-symmetric task, where that projection is exact)."""

    omega: np.ndarray
    theta: np.ndarray
    p: int
    lam: float
    symmetric: bool = False
    target: np.ndarray | None = None

    def overlaps(self, h: dict):
        """``(V, Q, M)`` at the hats ``h`` (keys ``V_hat``, ``Q_hat``, ``M_hat``)."""
        V, Q, M, _, _ = ridge_matrices(self.omega, self.theta, self.p, self.lam, h["V_hat"], h["Q_hat"],
                                       h["M_hat"])
        if self.symmetric:  # exact projection onto multiples of I
            eye = np.eye(V.shape[0])
            V, Q, M = (np.trace(X) / V.shape[0] * eye for X in (V, Q, M))
        return V, Q, M

    def estimation_error(self, h: dict) -> float:
        """``E |W - W*|_F^2`` at the hats ``h``."""
        return estimation_error_matrices(self.omega, self.theta, self.p, self.lam, h["V_hat"], h["Q_hat"],
                                         h["M_hat"], target=self.target)


def ridge_means(omega: np.ndarray, means: np.ndarray, p: int, lam: float, V_hat, Q_hat, M_hat, noise=None):
    """``(V, Q, M)`` of the ridge prior when the hats meet cluster means rather than a teacher:
    ``means`` (d x C) holds the modes ``a_k = omega_k theta_k`` of the C means, so that a mode of
    zero variance (a coordinate fixed within each cluster) is allowed; also ``G_k`` and
    ``E[w_k] = G_k M_hat a_k``. ``M = sum_k E[w_k] a_k^T`` is K x C.

    ``noise`` (C,): ``1 / n_c`` of means averaged over ``n_c`` samples each. Such a mean's modes
    carry the noise ``omega_k / n_c`` in their squares, so ``a_k a_k^T`` is replaced by its unbiased
    ``a_k a_k^T - omega_k diag(noise)`` wherever the overlaps read it: ``M`` loses ``p V M_hat
    diag(noise)`` and ``Q`` loses ``sum_k omega_k^2 G_k B G_k`` with ``B = M_hat diag(noise)
    M_hat^T`` (docs/discrete.md, "Sampled cluster means")."""
    K = V_hat.shape[0]
    G = np.linalg.inv(lam * np.eye(K) + omega[:, None, None] * V_hat)
    G = (G + np.swapaxes(G, 1, 2)) / 2
    mean_w = np.einsum("kab,kb->ka", G, means @ M_hat.T)
    V = np.einsum("k,kab->ab", omega, G) / p
    M = mean_w.T @ means
    Q = (np.einsum("k,ka,kb->ab", omega, mean_w, mean_w)
         + np.einsum("k,kab,bc,kdc->ad", omega**2 / p, G, Q_hat, G))
    if noise is not None:
        M = M - (p * V) @ (M_hat * noise)
        Q = Q - np.einsum("k,kab,bc,kdc->ad", omega**2, G, (M_hat * noise) @ M_hat.T, G)
    return (V + V.T) / 2, (Q + Q.T) / 2, M, G, mean_w


@dataclass(frozen=True, eq=False)
class RidgeMeansPrior:
    """The ridge prior side of a cluster mixture (:class:`.interfaces.MatrixPriorSide`): modes
    ``omega`` of the pooled covariance (zeros allowed), the means' modes ``means`` (d x C), the
    teacher's rows ``target`` (d x K) for the estimation error, and ``noise`` (C,), ``1 / n_c`` of
    means sampled ``n_c`` times each (None: exact means) (:func:`ridge_means`)."""

    omega: np.ndarray
    means: np.ndarray
    p: int
    lam: float
    target: np.ndarray
    noise: np.ndarray | None = None

    def _ridge(self, h: dict):
        return ridge_means(self.omega, self.means, self.p, self.lam, h["V_hat"], h["Q_hat"], h["M_hat"],
                           self.noise)

    def overlaps(self, h: dict):
        """``(V, Q, M)`` at the hats ``h``."""
        V, Q, M, _, _ = self._ridge(h)
        return V, Q, M

    def overlaps_jacobian(self, h: dict):
        """``(V, Q, M)`` at the hats ``h`` of one logit direction (K = 1) and their Jacobian: the
        (C + 2) x (C + 2) derivatives of ``(V, Q, M_1..C)`` in ``(V_hat, Q_hat, M_hat_1..C)``, in
        closed form from :func:`ridge_means` (``G_k = 1 / (lam + omega_k V_hat)``, ``b_k = a_k .
        M_hat``: ``V = sum omega_k G_k / p``, ``M_c = sum_k G_k b_k a_kc``, ``Q = sum_k omega_k G_k^2
        b_k^2 + Q_hat sum_k omega_k^2 G_k^2 / p``; with ``noise``, ``M_c`` loses ``sum_k omega_k G_k
        M_hat_c noise_c`` and ``Q`` loses ``sum_k omega_k^2 G_k^2 sum_c M_hat_c^2 noise_c``)."""
        K = h["V_hat"].shape[0]
        if K != 1:
            raise ValueError(f"the Jacobian of the ridge prior is written for K = 1, got K = {K}")
        V, Q, M, G, _ = self._ridge(h)
        om, a = self.omega, self.means
        q_hat = float(h["Q_hat"][0, 0])
        G = G[:, 0, 0]
        b = a @ h["M_hat"][0]
        spread = om * om * G * G / self.p
        C = a.shape[1]
        J = np.zeros((C + 2, C + 2))
        J[0, 0] = -float(np.sum(spread))
        J[1, 0] = -2.0 * float(np.sum(om * om * G**3 * (b * b + om * q_hat / self.p)))
        J[1, 1] = float(np.sum(spread))
        J[1, 2:] = 2.0 * (om * G * G * b) @ a
        J[2:, 0] = -(om * G * G * b) @ a
        J[2:, 2:] = (a.T * G) @ a
        if self.noise is not None:
            m_hat, nu = h["M_hat"][0], self.noise
            g1, g2 = float(np.sum(om * G)), float(np.sum(om * om * G * G))
            J[1, 0] += 2.0 * float(np.sum(om**3 * G**3)) * float(np.sum(m_hat * m_hat * nu))
            J[1, 2:] -= 2.0 * g2 * m_hat * nu
            J[2:, 0] += g2 * m_hat * nu
            J[2:, 2:] -= np.diag(g1 * nu)
        return (V, Q, M), J

    def estimation_error(self, h: dict) -> float:
        """``E |W - W*|_F^2`` at the hats ``h``: the bias of each mode's mean against the teacher's
        row, and the variance ``(omega_k / p) tr(G_k Q_hat G_k)``; with ``noise``, less the means'
        noise in the bias, ``sum_k omega_k tr(G_k B G_k)`` (:func:`ridge_means`)."""
        _, _, _, G, mean_w = self._ridge(h)
        var = np.einsum("k,kab,bc,kac->", self.omega / self.p, G, h["Q_hat"], G)
        if self.noise is not None:
            B = (h["M_hat"] * self.noise) @ h["M_hat"].T
            var -= np.einsum("k,kab,bc,kac->", self.omega, G, B, G)
        return float(np.sum((mean_w - self.target) ** 2) + var)
