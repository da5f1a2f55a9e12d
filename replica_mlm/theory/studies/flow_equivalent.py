"""Gradient flow of the square loss on a fixed training set, in the proportional limit
(docs/dynamics.md, section "Gradient flow").

On n = alpha p samples the flow ``dw/dt = -(X^T (X w - y) / n + mu w)``, ``mu = lam / alpha``,
from w = 0 has the Laplace transform ``w_hat(s) = R(mu + s) X^T y / (n s)`` with the resolvent
``R(z) = (X^T X / n + z)^-1``. Every quantity of the flow is then a resolvent quantity at one
or two complex arguments, whose deterministic equivalents are (kappa(z) solves
``z = kappa (1 - (1/alpha) sum_k b_k w_k / (w_k + kappa))``, ``tau = z / kappa``,
``a_k(z) = 1 / (tau w_k + z)``, for eigenvalues ``w_k`` of Sigma with bulk weights ``b_k`` and
teacher weights ``t_k``):

* ``w*^T R(z1) Sigma R(z2) w*  ~  sum_k t_k w_k a_k(z1) a_k(z2) / (1 - gamma)``,
  ``gamma = (tau1 tau2 / alpha) sum_k b_k w_k^2 a_k(z1) a_k(z2)`` (a leave-one-out argument;
  at z1 = z2 it is the ridge bias of the replica theory);
* ``(1/n) tr(R(z1) Sigma R(z2) X^T X / n)`` and ``(1/n) y^T (X X^T / n + z1)^-1 (...)^-1 y`` by
  the resolvent identity ``R1 R2 = (R1 - R2) / (z2 - z1)`` from one-point traces.

The error ``eg(t) = sigma^2 + e(t)^T Sigma e(t)`` is a product of two Laplace transforms; it is
inverted on the diagonal ``t1 = t2 = t`` by the fixed Talbot rule in each variable (Abate and
Valko 2004), with M and M + 1 nodes so that the two grids never share a point. Its accuracy is
about 1e-10 relative (the test suite checks the late-time value against the replica solution).
"""

from __future__ import annotations

import numpy as np

from replica_mlm._base.errors import ConvergenceError

#: Talbot nodes per variable of the two-variable inversions (eg, training loss)
NODES_2D = 14
#: Talbot nodes of the one-variable inversion (the overlap m)
NODES_1D = 20


def _mv(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``a @ v`` for complex ``a`` and real ``v`` in real products (complex BLAS products of this
    size are slow, or pathologically so, on some builds)."""
    return a.real @ v + 1j * (a.imag @ v)


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T`` for complex ``a`` and ``b`` in four real products."""
    ar, ai, br, bi = a.real, a.imag, b.real.T, b.imag.T
    return (ar @ br - ai @ bi) + 1j * (ar @ bi + ai @ br)


def _pair(e1: np.ndarray, f: np.ndarray, e2: np.ndarray) -> float:
    """``Re e1^T f e2``, the two-variable Talbot sum."""
    return float(np.real(np.sum(e1[:, None] * f * e2[None, :])))


def talbot(t: float, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed Talbot rule at time ``t``: points ``s`` and weights with
    ``f(t) ~ Re sum w_j exp(s_j t) F(s_j)`` for a Laplace transform F with singularities on
    the negative real axis."""
    k = np.arange(-(nodes - 1), nodes)
    theta = k * np.pi / nodes
    r = 2.0 * nodes / (5.0 * t)
    inner = theta != 0
    cot = np.zeros_like(theta)
    cot[inner] = 1.0 / np.tan(theta[inner])
    s = np.where(inner, r * theta * (cot + 1j), r + 0j)
    sigma = np.where(inner, theta + (theta * cot - 1.0) * cot, 0.0)
    return s, (r / (2.0 * nodes)) * (1.0 + 1j * sigma)


def kappa(z: np.ndarray, omega: np.ndarray, bulk: np.ndarray, alpha: float) -> np.ndarray:
    """kappa(z) of the resolvent's deterministic equivalent at complex ``z`` (Newton's method,
    vectorised, from kappa = z + (1/alpha) sum b w; residual checked to 1e-12 relative)."""
    k = z + float(np.dot(bulk, omega)) / alpha
    active = np.arange(k.size)
    for _ in range(200):
        d = omega / (omega + k[active, None])
        f = k[active] - k[active] * _mv(d, bulk) / alpha - z[active]
        step = f / (1.0 - _mv(d * d, bulk) / alpha)
        k[active] -= step
        active = active[np.abs(step) > 1e-13 * np.abs(k[active])]
        if active.size == 0:
            break
    d = omega / (omega + k[..., None])
    resid = np.abs(k - k * _mv(d, bulk) / alpha - z) / np.maximum(np.abs(z), 1e-300)
    if not np.all(resid < 1e-12):
        raise ConvergenceError("the deterministic equivalent's kappa(z) did not converge on the "
                               "Talbot contour", last={}, residual=float(np.max(resid)), iterations=200)
    return k


def _side(z: np.ndarray, omega, bulk, alpha):
    """``tau`` and ``a_k(z)`` at each point of ``z``, shape (N,) and (N, K)."""
    k = kappa(z, omega, bulk, alpha)
    tau = z / k
    return tau, 1.0 / (tau[:, None] * omega + z[:, None])


def flow_curves(times: np.ndarray, omega: np.ndarray, bulk: np.ndarray, teacher: np.ndarray,
                noise: float, *, alpha: float, mu: float) -> dict[str, np.ndarray]:
    """``eg``, ``train_loss`` (|y - X w|^2 / n), ``m`` and ``estimation_error`` (|w - w*|^2) of
    the flow at each time > 0."""
    out = {key: np.empty(times.size) for key in ("eg", "train_loss", "m", "estimation_error")}
    rho, norm2 = float(np.dot(teacher, omega)), float(np.sum(teacher))
    for i, t in enumerate(times):
        s1, w1 = talbot(float(t), NODES_2D)
        s2, w2 = talbot(float(t), NODES_2D + 1)
        z1, z2 = mu + s1, mu + s2
        tau1, a1 = _side(z1, omega, bulk, alpha)
        tau2, a2 = _side(z2, omega, bulk, alpha)
        gamma = np.outer(tau1, tau2) / alpha * _mm(a1 * (bulk * omega * omega), a2)
        bias = _mm(a1 * (teacher * omega), a2) / (1.0 - gamma)
        tr1, tr2 = _mv(a1, bulk * omega), _mv(a2, bulk * omega)
        zz1, zz2 = z1[:, None], z2[None, :]
        var = noise / alpha * (tr2[None, :] - zz1 * (tr1[:, None] - tr2[None, :]) / (zz2 - zz1))
        e1, e2 = w1 * np.exp(s1 * t), w2 * np.exp(s2 * t)
        ss = np.outer(s1, s2)
        out["eg"][i] = noise + _pair(e1, (zz1 * zz2 * bias + var) / ss, e2)
        # |w - w*|^2: the identity between the resolvents, R1 R2 ~ Rb1 Rb2 + c (R1 Sigma R2)
        cross = np.outer(tau1, tau2) / alpha * _mm(a1 * (bulk * omega), a2)
        plain = _mm(a1 * teacher, a2) + cross * bias
        u1, u2 = _mv(a1, bulk), _mv(a2, bulk)
        var_e = noise / alpha * (u2[None, :] - zz1 * (u1[:, None] - u2[None, :]) / (zz2 - zz1))
        out["estimation_error"][i] = _pair(e1, (zz1 * zz2 * plain + var_e) / ss, e2)

        def gram(z, a):  # (1/n) y^T (X X^T / n + z)^-1 y
            return norm2 - z * _mv(a, teacher) + noise * (_mv(a, bulk) / alpha + (1.0 - 1.0 / alpha) / z)

        g1, g2 = gram(z1, a1), gram(z2, a2)
        train = zz1 * zz2 * (g1[:, None] - g2[None, :]) / ((zz2 - zz1) * ss)
        out["train_loss"][i] = _pair(e1, train, e2)
        s, w = talbot(float(t), NODES_1D)
        z = mu + s
        _, a = _side(z, omega, bulk, alpha)
        out["m"][i] = float(np.real(np.sum(w * np.exp(s * t) * (rho - z * _mv(a, teacher * omega)) / s)))
    return out
