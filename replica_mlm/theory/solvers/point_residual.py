"""The raw-equation residual of one point on numbers: :func:`.root.raw_residual` for the scalar
path of :mod:`.one_point` (``root.raw_residual(..., point=True)``), without arrays of one point."""

from __future__ import annotations

import math

import numpy as np

#: relative residuals are taken against max(|a|, |b|, FLOOR) (as in :mod:`.root`)
FLOOR = float(np.finfo(float).tiny)
_total = np.add.reduce


def _rel(a: float, b: float, scale: float = 0.0) -> float:
    """``root._rel`` of two numbers (``|a - b|`` over the largest size, 0 if equal; inf if NaN)."""
    if a == b:
        return 0.0
    big = max(abs(a), abs(b), abs(scale), FLOOR)
    out = abs(a - b) / big
    return math.inf if math.isnan(out) else out


def raw_residual_point(spec, alpha: float, lam: float, x: dict, products: tuple) -> float:
    """:func:`.root.raw_residual` of one point (scale 1) whose numbers are finite Python floats,
    in the same floating-point operations (the same bits; ``tests/test_one_point.py``), on
    numbers instead of arrays of one point. ``products`` are ``(b w, c w^2, c w^3, b w^2)``
    (``root._mode_products``); see :func:`.root.raw_residual` for the equations
    (docs/theory.md, section "One scalar equation")."""
    one_plus_v = 1.0 + x["V"]
    share = alpha / one_plus_v
    eg = spec.rho + spec.noise - 2.0 * x["m"] + x["q"]
    eg_scale = spec.rho + spec.noise + 2.0 * abs(x["m"]) + abs(x["q"])
    bw, cw2, cw3, bw2 = products
    g = 1.0 / (lam + x["V_hat"] * spec.omega)
    mg = x["m_hat"] * g
    rows = np.empty((3, g.size))  # the summands of V, m and q, summed row by row in one call
    np.multiply(bw, g, out=rows[0])
    np.multiply(cw2, mg, out=rows[1])
    np.add(cw3 * mg**2, bw2 * (share * g) * (eg / one_plus_v) * g, out=rows[2])
    total_v, total_m, total_q = _total(rows, axis=1).tolist()
    return max(_rel(x["V_hat"], share), _rel(x["m_hat"], share),
               _rel(x["q_hat"], share * (eg / one_plus_v), share * (eg_scale / one_plus_v)),
               _rel(x["V"], total_v), _rel(x["m"], total_m), _rel(x["q"], total_q))
