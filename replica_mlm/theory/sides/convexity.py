"""Convexity in ``z`` of a loss ``loss(y, z)``: what the general engine needs, proven or checked.

The replica-symmetric saddle point of empirical risk minimisation assumes a loss convex in the
student's field ``z`` for every label ``y`` (the proximal point is then unique and the hat
equations describe the minimiser). A loss that is not convex is solved without complaint but
describes no estimator, so it is refused:

* :func:`check_expression` refuses what cannot be a loss: no sympy expression, the imaginary
  unit ``I``, infinities (``oo``, ``zoo``, ``nan``), discontinuous functions (``floor``,
  ``ceiling``, ``frac``, ``Mod``, ``sign``, ``Heaviside``, ``DiracDelta``, ...) and undefined
  functions;
* :func:`prove` proves convexity with sympy where it can: the loss is split into smooth pieces
  (``Abs``, ``Max``, ``Min`` rewritten as ``Piecewise`` and folded), the second derivative of
  each piece must be non-negative for all real ``y, z`` as sympy decides (after rewriting the
  stable softplus and sigmoid in exponentials), and every kink (the real roots in ``z`` of the
  pieces' conditions, of degree at most 2 in ``z``) must be convex: the loss continuous there
  and its one-sided derivatives jumping upwards. The piece active on each side of a kink is
  found from the leading Taylor coefficient of each condition (for all real ``y``, else
  separately for ``y > 0``, ``y < 0`` and ``y = 0``). Anything sympy cannot decide is
  "not proven";
* a loss not proven convex is checked numerically: on a grid when it is built
  (:func:`check_grid`, ``(y, z)`` in ``[-5, 5]^2``) and, on every call of the proximal
  operator, at every node the solver evaluates (:func:`refuse_curvature`: ``loss''`` is
  computed there anyway by the Newton steps; :func:`refuse_kinks`: the one-sided derivatives
  and values at each kink). A failure raises :class:`NonConvexLoss` (a ValueError) naming the
  loss and a point ``(y, z)``.

The built-in losses are convex by construction and never checked per call. sympy is imported
only inside the functions that need it. See docs/theory.md, section "The general engine".
"""

from __future__ import annotations

import numpy as np

#: relative tolerance of the numerical checks: ``loss'' < -TOL (1 + |loss'|)`` at a node, or a
#: downward jump of ``loss'`` at a kink beyond ``TOL (1 + |loss'(k-)| + |loss'(k+)|)``, is refused
TOL = 1e-9
#: relative size of a jump of the loss's value at a kink that is refused (a discontinuity)
JUMP = 1e-6
#: sympy classes that make a loss discontinuous (or undefined) as a function of real arguments
_DISCONTINUOUS = ("floor", "ceiling", "frac", "Mod", "sign", "Heaviside", "DiracDelta",
                  "KroneckerDelta", "arg")
#: unevaluated operators: the engine differentiates and evaluates closed forms only
_UNEVALUATED = ("Integral", "Derivative", "Sum", "Product", "Limit", "Subs")
#: highest Taylor order used to decide on which side of a kink a condition holds
_ORDER = 3


class NonConvexLoss(ValueError):
    """A loss found not convex in ``z`` (at construction or at a node the solver evaluates).

    A ValueError; the general engine lets it through instead of treating it as a failed step.
    """


def check_expression(expr) -> None:
    """Refuse an expression that cannot be a real, continuous loss (TypeError / ValueError)."""
    import sympy as sp
    from sympy.core.function import AppliedUndef

    if isinstance(expr, str | bytes):
        raise TypeError("expr must be a sympy expression, got a string: pass a sympy expression "
                        "built from sympy symbols (text is never evaluated)")
    if not isinstance(expr, sp.Expr):
        raise TypeError(f"expr must be a sympy expression in the label and the field, got "
                        f"{type(expr).__name__} {expr!r:.60}")
    if expr.has(sp.I):
        raise ValueError(f"expr must be real: {expr} contains the imaginary unit I")
    bad = [s for s in (sp.S.ComplexInfinity, sp.S.Infinity, sp.S.NegativeInfinity, sp.S.NaN) if expr.has(s)]
    if bad:
        raise ValueError(f"expr must be finite: {expr} contains {', '.join(map(str, bad))}")
    found = sorted({type(node).__name__ for node in sp.preorder_traversal(expr)
                    if type(node).__name__ in _DISCONTINUOUS + _UNEVALUATED})
    if found:
        raise ValueError(f"expr must be continuous and in closed form: {expr} contains {', '.join(found)} "
                         "(allowed: smooth functions, Abs, Max, Min and continuous Piecewise)")
    undefined = expr.atoms(AppliedUndef)
    if undefined:
        raise ValueError(f"expr must use known functions only; it contains {sorted(map(str, undefined))}")


def user_expression(expr, y_symbol, z_symbol):
    """``expr`` checked (:func:`check_expression`; its free symbols ``y_symbol`` and ``z_symbol``
    only) and written in the symbols ``y``, ``z`` of :mod:`.symbolic`."""
    import sympy as sp

    from replica_mlm.theory.symbolic.expressions import y, z

    for s, what in ((y_symbol, "y_symbol"), (z_symbol, "z_symbol")):
        if not isinstance(s, sp.Symbol):
            raise TypeError(f"{what} must be a sympy Symbol, got {type(s).__name__}")
    if y_symbol == z_symbol:
        raise ValueError(f"y_symbol and z_symbol must be two different symbols, got {y_symbol} twice")
    check_expression(expr)
    extra = expr.free_symbols - {y_symbol, z_symbol}
    if extra:
        raise ValueError(f"expr must depend on y and z only (y_symbol={y_symbol}, z_symbol={z_symbol}); "
                         f"it also has {sorted(map(str, extra))}")
    dummy_y, dummy_z = sp.Dummy("y"), sp.Dummy("z")
    return expr.subs({y_symbol: dummy_y, z_symbol: dummy_z}).subs({dummy_y: y, dummy_z: z})


# --- the symbolic proof ------------------------------------------------------------------------


def prove(expr) -> bool:
    """True if sympy proves ``expr`` (in the symbols ``y``, ``z`` of :mod:`.symbolic`) convex in
    ``z`` for every real ``y``; False if it cannot (which is no proof of the contrary)."""
    import sympy as sp

    from replica_mlm.theory.symbolic.expressions import z

    nonsmooth = (sp.Abs, sp.Max, sp.Min, sp.Piecewise)
    folded = sp.piecewise_fold(expr.rewrite(sp.Piecewise)) if expr.has(*nonsmooth) else expr
    pieces = [e for e, _ in folded.args] if isinstance(folded, sp.Piecewise) else [folded]
    if any(p.has(*nonsmooth) for p in pieces):
        return False
    if not all(_nonnegative(sp.diff(p, z, 2)) for p in pieces):
        return False
    if not isinstance(folded, sp.Piecewise):
        return True
    if folded.args[-1].cond != sp.true:
        return False  # undefined where no condition holds
    kinks = _switch_points(folded)
    return kinks is not None and all(_convex_kink(folded, k) for k in kinks)


def _exponential(expr):
    """The stable softplus and sigmoid written with exp and log (for sympy's sign reasoning)."""
    import sympy as sp

    from replica_mlm.theory.symbolic.expressions import Sigmoid, Softplus

    expr = expr.replace(lambda e: isinstance(e, Sigmoid), lambda e: 1 / (1 + sp.exp(-e.args[0])))
    return expr.replace(lambda e: isinstance(e, Softplus), lambda e: sp.log(1 + sp.exp(e.args[0])))


def _nonnegative(expr) -> bool:
    """True if sympy proves ``expr >= 0`` (hence finite) for all values of its real symbols."""
    import sympy as sp

    expr = _exponential(expr)
    for form in (lambda e: e, sp.together, lambda e: sp.factor(sp.together(e))):
        verdict = form(expr).is_nonnegative
        if verdict is not None:
            return bool(verdict)
    return False


def _switch_points(folded) -> list | None:
    """The roots in ``z`` of the pieces' conditions (None if a condition is not a polynomial in z
    of degree 1, or of degree 2 with a leading coefficient that never vanishes: then sympy's
    roots are all the roots, for every y)."""
    import sympy as sp

    from replica_mlm.theory.symbolic.expressions import z

    points = []
    for _, cond in folded.args:
        for rel in sp.preorder_traversal(cond):
            if not isinstance(rel, sp.core.relational.Relational):
                continue
            gap = rel.lhs - rel.rhs
            if not gap.has(z):
                continue
            try:
                poly = sp.Poly(gap, z)
            except sp.PolynomialError:
                return None
            if poly.degree() > 2 or (poly.degree() == 2 and not poly.LC().is_nonzero):
                return None
            points += [r for r in sp.solve(gap, z) if r not in points]
    return points


def _convex_kink(folded, k) -> bool:
    """The loss is continuous at ``z = k(y)`` and its derivative jumps upwards, for every real y."""
    import sympy as sp

    from replica_mlm.theory.symbolic.expressions import y

    verdict = _kink_case(folded, k)
    if verdict is not None:
        return verdict
    # undecided for a general real y: y > 0, y < 0 and y = 0 one by one
    pos, neg = sp.Symbol("y_pos", positive=True), sp.Symbol("y_neg", negative=True)
    for value in (pos, neg, sp.S.Zero):
        case = _kink_case(folded.subs(y, value), k.subs(y, value))
        if not case:
            return False
    return True


def _kink_case(folded, k) -> bool | None:
    """True/False: the kink at ``k`` is convex/not proven; None: a side could not be decided."""
    import sympy as sp

    from replica_mlm.theory.symbolic.expressions import z

    if not isinstance(folded, sp.Piecewise):
        return True  # one smooth piece for these labels
    if k.is_real is False or k.is_finite is False or k.has(sp.S.ComplexInfinity):
        return True  # no real kink for these labels
    sides = [_active(folded, k, s) for s in (-1, 1, 0)]
    if any(s is None for s in sides):
        return None
    left, right, at = sides
    values = [e.subs(z, k) for e in (left, right, at)]
    slopes = [sp.diff(e, z).subs(z, k) for e in (left, right)]
    if not all(v.is_finite for v in values + slopes):
        return False
    if any(sp.simplify(v - values[0]) != 0 for v in values[1:]):
        return False
    return _nonnegative(sp.simplify(slopes[1] - slopes[0]))


def _active(folded, k, side: int):
    """The piece of ``folded`` active just left (side -1) or right (+1) of ``z = k``, or at it
    (0); None if undecided."""
    for expr, cond in folded.args:
        holds = _holds(cond, k, side)
        if holds is None:
            return None
        if holds:
            return expr
    return None


def _holds(cond, k, side: int) -> bool | None:
    """Whether ``cond`` holds at ``z = k + side * t`` for all small t > 0 (None: undecided)."""
    import sympy as sp

    from replica_mlm.theory.symbolic.expressions import z

    if cond in (sp.true, True):
        return True
    if cond in (sp.false, False):
        return False
    if isinstance(cond, sp.And | sp.Or):
        parts = [_holds(c, k, side) for c in cond.args]
        if isinstance(cond, sp.And):
            return False if False in parts else (None if None in parts else True)
        return True if True in parts else (None if None in parts else False)
    if isinstance(cond, sp.Not):
        inner = _holds(cond.args[0], k, side)
        return None if inner is None else not inner
    if not isinstance(cond, sp.core.relational.Relational):
        return None
    t = sp.Symbol("t", positive=True)
    gap = sp.expand((cond.lhs - cond.rhs).subs(z, k + side * t))
    sign = 0
    for order in range(_ORDER + 1 if side else 1):
        coeff = sp.simplify(sp.diff(gap, t, order).subs(t, 0))
        if coeff.is_zero:
            continue
        if coeff.is_positive:
            sign = 1
        elif coeff.is_negative:
            sign = -1
        else:
            return None
        break
    else:
        if side and sp.simplify(gap) != 0:
            return None
    return bool(type(cond)(sign, 0))


# --- the numerical checks -----------------------------------------------------------------------


def _refuse(loss, what: str, yv, zv, where) -> None:
    i = np.unravel_index(int(np.flatnonzero(where)[0]), np.shape(where))
    yy, zz = float(np.broadcast_to(yv, np.shape(where))[i]), float(np.broadcast_to(zv, np.shape(where))[i])
    raise NonConvexLoss(f"the loss {loss.name!r} ({loss.expr}) is not convex in z: {what} at (y, z) = "
                        f"({yy:.6g}, {zz:.6g}); the replica theory of ERM needs a loss convex in z "
                        "for every label y")


def refuse_curvature(loss, yv, zv, d1, d2) -> None:
    """NonConvexLoss if ``loss'' < -TOL (1 + |loss'|)`` at a node (NaN is left to the solver)."""
    with np.errstate(invalid="ignore"):
        bad = d2 < -TOL * (1.0 + np.abs(d1))
    if bad.any():
        i = np.flatnonzero(bad)[0]
        _refuse(loss, f"loss'' = {np.ravel(d2)[i]:.3g} < 0", yv, zv, bad)


def refuse_kinks(loss, yv, k, ok, left, right, h) -> None:
    """NonConvexLoss at a kink ``k`` (where ``ok``) whose one-sided derivatives ``left, right``
    jump downwards, or where the loss itself jumps (values at ``k -+ h``)."""
    with np.errstate(invalid="ignore"):
        down = ok & (right - left < -TOL * (1.0 + np.abs(left) + np.abs(right)))
    if down.any():
        _refuse(loss, "loss' jumps downwards (a concave kink)", yv, k, down)
    with np.errstate(all="ignore"):
        lo, hi = loss.value(yv, k - h), loss.value(yv, k + h)
        jump = ok & (np.abs(hi - lo) > JUMP * (1.0 + np.abs(lo)) + 4 * h * (np.abs(left) + np.abs(right)))
    if jump.any():
        _refuse(loss, "the loss itself jumps (a discontinuity)", yv, k, jump)


def check_grid(loss, *, grid: int = 41) -> None:
    """ValueError if the loss is not finite, or :class:`NonConvexLoss` if it is not convex, on a
    grid of ``(y, z)`` in ``[-5, 5]^2`` (``loss''`` and the kinks at each grid label)."""
    yy, zz = np.meshgrid(np.linspace(-5, 5, grid), np.linspace(-5, 5, grid))
    with np.errstate(all="ignore"):
        d2 = loss.d2(yy, zz)
        val = loss.value(yy, zz)
    if not np.all(np.isfinite(val)) or not np.all(np.isfinite(d2)):
        raise ValueError(f"the loss {loss.expr} is not finite on the grid (y, z) in [-5, 5]^2")
    scale = max(1.0, float(np.abs(d2).max()))
    bad = d2 < -1e-9 * scale
    if bad.any():
        _refuse(loss, f"loss'' = {d2.min():.3g} < 0", yy, zz, bad)
    labels = np.linspace(-5, 5, grid)
    for k in loss.kink_points(labels):
        ok = ~np.isnan(k)
        kk = np.where(ok, k, 0.0)
        left, right = loss._one_sided(labels, kk)
        refuse_kinks(loss, labels, kk, ok, left, right, 1e-9 * np.maximum(1.0, np.abs(kk)))
