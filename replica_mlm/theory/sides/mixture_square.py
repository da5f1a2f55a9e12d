"""The channel side of the square loss on a C-cluster Gaussian mixture, in closed form.

docs/multiclass.md, section "The square loss on the mixture". The data are a class ``c`` with
probability ``pi_c``, an input ``x = mu_c + S^{1/2} g`` and a scalar target ``t_c`` that depends on
the class only. The student's field on a sample of class ``c`` is ``h = m_c + sqrt(q) xi`` with
``m_c = w . mu_c`` and ``q = w^T S w`` (Loureiro et al., NeurIPS 2021, arXiv:2106.03791). For the
loss ``(y - z)^2 / 2`` the proximal point is linear, ``f = (t_c - h) / (1 + V)`` and ``-df/dh = 1 /
(1 + V)``, so every Gaussian average over ``xi`` is a polynomial:

    V_hat = alpha / (1 + V),   m_hat_c = alpha pi_c (t_c - m_c) / (1 + V),
    q_hat = alpha (e + q) / (1 + V)^2,   e = sum_c pi_c (t_c - m_c)^2,

the test loss is ``(e + q) / 2`` and the training loss ``(e + q) / (2 (1 + V)^2)``. ``e`` is a
quadratic form in the class indicator: these formulas depend on the law of the class only through
its covariance, which is why the square loss cannot tell the mixture from its Gaussian equivalent
(docs/multiclass.md).
"""

from __future__ import annotations

import numpy as np


def class_error(*, m, targets, weights) -> np.ndarray:
    """``e = sum_c pi_c (t_c - m_c)^2``, per output (``m`` and ``targets``: (C,) or (C, A))."""
    r = np.asarray(targets, dtype=float) - np.asarray(m, dtype=float)
    return np.asarray(np.tensordot(np.asarray(weights, dtype=float), r * r, axes=1))


def hats(*, alpha: float, V: float, q, m, targets, weights) -> dict:
    """``V_hat`` (scalar), ``m_hat`` (as ``m``), ``q_hat`` and the training loss (per output)."""
    e = class_error(m=m, targets=targets, weights=weights)
    w = np.asarray(weights, dtype=float)
    r = np.asarray(targets, dtype=float) - np.asarray(m, dtype=float)
    scale = 1.0 + V
    return {"V_hat": alpha / scale,
            "m_hat": alpha * (w if r.ndim == 1 else w[:, None]) * r / scale,
            "q_hat": alpha * (e + q) / scale**2,
            "train_loss": (e + q) / (2.0 * scale**2)}


def test_loss(*, q, m, targets, weights):
    """``E (t_c - w . x)^2 / 2 = (e + q) / 2`` on a fresh sample of the mixture (per output)."""
    return (class_error(m=m, targets=targets, weights=weights) + q) / 2.0
