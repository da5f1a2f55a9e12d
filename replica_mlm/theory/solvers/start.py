"""Where Newton's method on the reduced scalar equation starts, for many points at once and
for one point on numbers (docs/theory.md, section "One scalar equation").

``G(kappa) = lam/kappa - S_1c(kappa) + 1 - alpha`` (:func:`g_exact`, in the form exact for each alpha)
is convex and decreasing, so Newton's method started left of its root climbs to it
monotonically. :func:`bounds` brackets the root from the spectrum's moments; the start is the
last node with G >= 0 of a geometric table over the bracket (:data:`.backend.Backend.table`
nodes), found by :func:`count_bisect` (few points) or by the whole table (many points, in
:func:`.root.solve_reduced`). :func:`point_bounds` and :func:`point_start` find the same node,
to the bit, for one point on Python floats, deciding most signs of the bisection without a sum.
"""

from __future__ import annotations

import math

import numpy as np

from replica_mlm.theory.solvers.backend import NUMPY, Backend, pick, ratios
from replica_mlm.theory.solvers.residual import _mode_products
from replica_mlm.theory.symbolic.compiled import compiled, sum_terms

EPS = np.finfo(float).eps
#: a node's cheap G decides its sign where ``|G| > SLACK (p + 8) eps`` times the size of G's terms
SLACK = 4.0
#: a tangent of G decides a node's sign where it clears TRUST times that rounding bound
TRUST = 64.0


def bounds(B: Backend, spec, alpha: np.ndarray, lam: np.ndarray):
    """A start ``lo`` with G(lo) >= 0 (left of the root) and ``hi`` with G(hi) <= 0, per point.

    ``G = lam/kappa + S_1 - alpha >= lam/kappa - alpha`` gives ``lo >= lam/alpha``; since
    ``S_1c <= kappa B_{-1}`` (``B_{-1} = sum b / omega``), ``G >= lam/kappa - kappa B_{-1} + delta``,
    whose positive root (written without cancellation for either sign of delta) is a second lower
    bound, sharp at the peak (kappa ~ sqrt(lam / B_{-1})); a third one (sharp at small alpha)
    comes from ``S_1 >= B_1 / (kappa + omega_max)``. ``S_1 <= B_1 / kappa`` gives ``hi``.
    Where a bound is not finite (float64 overflow, or 0/0 at lam = 0) it is dropped.
    """
    inv_mean = B.moment(spec, "bulk", -1)
    top = spec.omega.max()
    delta = 1.0 - alpha
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        disc = B.hypot(delta, 2.0 * B.sqrt(inv_mean * lam))
        kq = pick(delta > 0, lambda d, s: (d + s) / (2.0 * inv_mean), 0.0, delta, disc)
        kq = pick(~(delta > 0) & (disc > delta), lambda d, s, lm: 2.0 * lm / (s - d), kq,
                   delta, disc, lam)
        # S_1 >= B_1 / (kappa + omega_max): G >= lam/kappa + B_1/(kappa + omega_max) - alpha,
        # whose positive root is sharp at small alpha or large lam
        t = lam + spec.mean_omega - alpha * top
        disc = B.hypot(t, 2.0 * B.sqrt(alpha * lam * top))
        kb = pick(t > 0, lambda t_, s, a: (t_ + s) / (2.0 * a), 0.0, t, disc, alpha)
        kb = pick(~(t > 0) & (disc > t), lambda t_, s, lm: 2.0 * lm * top / (s - t_), kb,
                   t, disc, lam)
        kb = np.where(B.isfinite(kb), kb, 0.0)
        lo = np.maximum(np.maximum(lam / alpha, kq), kb)
        hi = (lam + spec.mean_omega) / alpha
    return lo, hi


def count_bisect(B: Backend, spec, nodes: np.ndarray, direct, alpha, lam) -> np.ndarray:
    """Per point, the number of ``nodes`` (shared, 1-d, or one row per point) at which G >= 0, by
    bisection: G decreases, so it is the first node where G < 0. The same G at the same nodes as
    the full table (the same sums, node by node), evaluated at ``ceil(log2(len(nodes) + 1))``
    nodes per point."""
    left = np.zeros(alpha.size, dtype=int)  # G >= 0 on nodes[:left]
    right = np.full(alpha.size, nodes.shape[-1])  # G < 0 on nodes[right:]
    while True:
        open_ = np.flatnonzero(left < right)
        if open_.size == 0:
            return left
        mid = (left[open_] + right[open_]) // 2
        k = nodes[open_, mid] if nodes.ndim == 2 else nodes[mid]
        sums = B.sums(spec, ["S_1", "S_1c"], k)
        with np.errstate(over="ignore"):
            g = g_exact(B, direct[open_], k, sums["S_1"], sums["S_1c"], alpha[open_], lam[open_])
        up = g >= 0
        left[open_] = np.where(up, mid + 1, left[open_])
        right[open_] = np.where(up, right[open_], mid)


def g_exact(B: Backend, direct, kappa, s1, s1c, alpha, lam):
    """G(kappa) in the form exact for each alpha (see :func:`.root._newton`)."""
    fns = B.fns
    return np.where(direct, B.call(fns.newton_direct, kappa=kappa, S_1=s1, alpha=alpha, lam=lam),
                    B.call(fns.newton, kappa=kappa, S_1c=s1c, delta=1.0 - alpha, lam=lam))


def point_bounds(spec, alpha: float, lam: float, top: float) -> tuple[float, float]:
    """:func:`bounds` at one point (lam > 0) in the same operations, on numbers (sqrt is
    correctly rounded in both; hypot is numpy's)."""
    inv_mean = spec.moment("bulk", -1)
    delta = 1.0 - alpha
    disc = float(np.hypot(delta, 2.0 * math.sqrt(inv_mean * lam)))
    kq = (delta + disc) / (2.0 * inv_mean) if delta > 0 else (2.0 * lam / (disc - delta)
                                                               if disc > delta else 0.0)
    t = lam + spec.mean_omega - alpha * top
    disc = float(np.hypot(t, 2.0 * math.sqrt(alpha * lam * top)))
    kb = (t + disc) / (2.0 * alpha) if t > 0 else (2.0 * lam * top / (disc - t) if disc > t else 0.0)
    lo = lam / alpha
    for v in (kq, kb if math.isfinite(kb) else 0.0):
        lo = lo if (lo >= v or lo != lo) else v  # np.maximum on numbers (NaN propagates)
    return lo, (lam + spec.mean_omega) / alpha


def table(lo: float, hi: float) -> np.ndarray:
    """``np.geomspace(lo, hi, NUMPY.table)``: the same numbers, without its general set-up."""
    ls, le = np.log10(lo), np.log10(hi)
    step = (le - ls) / (NUMPY.table - 1)
    if step == 0:
        return np.geomspace(lo, hi, NUMPY.table)
    y = np.arange(0, NUMPY.table, dtype=float)
    y *= step
    y += ls
    y[-1] = le
    nodes = np.power(10.0, y)
    nodes[0], nodes[-1] = lo, hi
    return nodes


def point_start(spec, lo: float, hi: float, direct: bool, alpha: float, lam: float):
    """The start of Newton's method at one point: :func:`count_bisect`'s node, to the bit.

    The bisection visits the same nodes of the same table and sees the same sign at each. A
    node's sign is decided, in this order, by (1) the tangents of G at the nodes evaluated so far,
    (2) a cheap form of the needed sum, (3) the compiled sums (as :func:`count_bisect`). (1): G is
    convex and decreasing in kappa and concave and increasing in u = 1/kappa (b >= 0, omega > 0),
    so at an evaluated node e, with ``D = lam/kappa_e + S_12(kappa_e)`` (``-kappa G'``), every
    kappa has ``G >= g_e - D (kappa/kappa_e - 1)`` (the tangent in kappa lies below G) and
    ``G <= g_e + D (kappa_e/kappa - 1)`` (the tangent in u lies above G). Past a margin of
    :data:`TRUST` times the rounding bound ``SLACK (p + 8) eps`` of the size of their terms these
    bounds decide the sign of G as any evaluation would; a Newton probe from the tangents lands
    left of the root, after which the rest of the bisection is mostly decided without a sum.
    (2): the cheap and the compiled sums of positive terms differ by at most ~(p + log2 p + 10)
    eps of the sum, G's two forms by a few eps more of its terms: where the cheap G is beyond
    ``SLACK (p + 8) eps`` of them its sign is the compiled one's.
    """
    nodes = table(lo, hi)
    fns, w, b = compiled(), spec.omega, spec.bulk
    bw = _mode_products(spec)[0]  # b w
    slack = SLACK * (w.size + 8) * EPS
    trust = TRUST * slack
    const = 2.0 + alpha + abs(1.0 - alpha)  # bounds S_1, S_1c (<= sum b = 1) and the constants
    tangents, seen = [], {}  # (kappa_e, g_e, D_e, size of the terms at e); kappa -> (G, size)
    buf, tmp = np.empty(w.shape), np.empty(w.shape)

    def cheap(k: float) -> tuple:
        """G at k and the size of its terms from one division per mode and dot products; its
        tangent is kept."""
        near = lam / k
        inv = np.divide(1.0, np.add(w, k, out=buf), out=buf)  # 1 / (omega + kappa)
        s = float(np.dot(bw, inv)) if direct else k * float(np.dot(b, inv))  # S_1 or S_1c
        g, size = (near + s - alpha, near + s + alpha) if direct else (near - s + 1.0 - alpha,
                                                                       near + s + abs(1.0 - alpha))
        d = near + k * float(np.dot(np.multiply(bw, inv, out=tmp), inv))  # lam/kappa + S_12
        if math.isfinite(g) and math.isfinite(d) and d > 0:  # (D <= lam/kappa + S_1 <= size + 1)
            tangents.append((k, g, d, size + 2.0))
        seen[k] = g, size
        return g, size

    def decided(k: float):
        """G(k) >= 0 (True) or < 0 (False) if a tangent clears the margin, else None."""
        for ke, ge, de, se in reversed(tangents):  # the last is usually the nearest to the root
            r = k / ke
            below, above = ge - de * (r - 1.0), ge + de * (1.0 / r - 1.0)  # G lies between
            if below > 0.0 or above < 0.0:  # else neither clears the margin (>= 0): skip it
                margin = trust * (lam / k + const + se * (1.0 + abs(r - 1.0) + abs(1.0 / r - 1.0)))
                if below > margin:
                    return True
                if above < -margin:
                    return False
        return None

    values = nodes.tolist()
    left, right = 0, len(values)
    while left < right:
        mid = (left + right) // 2
        k = values[mid]
        up = decided(k)
        if up is None and tangents:  # first a Newton probe (it lands left of the root) for a tangent there
            probe = max(lo, max(ke + ke * (ge / de) for ke, ge, de, _ in tangents))
            if probe < hi and probe not in seen:
                cheap(probe)
                up = decided(k)
        if up is None:
            g, size = seen[k] if k in seen else cheap(k)
            if not abs(g) > slack * size:  # too close to call (or not finite): the compiled sums
                s1, s1c = (float(np.add.reduce(t)) for t in
                           sum_terms(("S_1", "S_1c"))(w, b, spec.teacher, *ratios(spec, k)))
                g = fns.newton_direct(k, s1, alpha, lam) if direct else fns.newton(k, s1c, 1.0 - alpha, lam)
            up = g >= 0
        left, right = (mid + 1, right) if up else (left, mid)
    return max(nodes[left - 1] if left > 0 else lo, lo)
