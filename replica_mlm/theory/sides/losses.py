"""Convex losses for the general replica engine, and their proximal operator.

A :class:`Loss` is a sympy expression ``loss(y, z)`` in the label ``y`` and the student's field
``z = w . x``, convex in ``z``. Its first and second derivatives in ``z`` are taken by sympy and
lambdified once (cached per instance); everything the engine needs from the loss follows:

* the proximal point ``z* = argmin_z (z - w)^2 / (2V) + loss(y, z)`` (:meth:`Loss.prox`), by a
  safeguarded Newton method vectorised over all quadrature nodes: a bracket ``[lo, hi]`` that
  contains the root of the monotone stationarity condition ``g(z) = (z - w)/V + loss'(y, z)``,
  Newton steps that are replaced by bisection whenever they leave the bracket;
* non-differentiable points (kinks) are found by sympy: the zeros in ``z`` of the arguments of
  ``Abs``, ``sign``, ``Heaviside``, ``Max``, ``Min`` and of ``Piecewise`` conditions. At a kink
  ``k`` the subdifferential is ``[loss'(k-), loss'(k+)]``; if it contains ``(w - k)/V`` the
  proximal point sits exactly on the kink, ``dz*/dw = 0``. Otherwise the kink tightens the
  bracket, so that Newton's method works on one smooth piece;
* ``f = (z* - w)/V`` (computed as ``-loss'(y, z*)`` off kinks, which does not cancel) and
  ``d_w f = (dz*/dw - 1)/V`` with ``dz*/dw = 1 / (1 + V loss''(y, z*))`` (0 on a kink).

``log(1 + exp(u))`` in a user's expression is evaluated as a stable softplus (and its derivatives as
logistic sigmoids), so a hand-written logistic loss equals :class:`Logistic`. See docs/theory.md, section
"The general engine". sympy is imported (with :mod:`.symbolic`, e.g. ``losses.y``) only when a loss is
derived: the built-in losses are names until then, and their numerical functions, once derived, are read
from the disk cache (:func:`.compiled_cache.cached_functions`) later on, without sympy.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.theory.sides import proximal

if TYPE_CHECKING:  # pragma: no cover
    import sympy as sp

#: names of :mod:`.symbolic` also reachable here (``losses.y``), imported on first use
_SYMBOLIC = ("y", "z", "w", "V", "Softplus", "Sigmoid", "NUMERIC", "stable", "lambdify")


def __getattr__(name: str):  # the sympy symbols and helpers, without importing sympy with this module
    if name in _SYMBOLIC:
        from replica_mlm.theory.symbolic import expressions as symbolic
        return getattr(symbolic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Prox:
    """The proximal point and the quantities the hat equations need, per node.

    Attributes
    ----------
    z : ndarray
        ``z* = argmin_z (z - w)^2/(2V) + loss(y, z)``.
    f : ndarray
        ``(z* - w) / V``.
    dfdw : ndarray
        ``d f / d w = (dz*/dw - 1) / V``.
    at_kink : ndarray of bool
        Where ``z*`` sits on a kink of the loss (``dz*/dw = 0``).
    """

    z: np.ndarray
    f: np.ndarray
    dfdw: np.ndarray
    at_kink: np.ndarray


class Loss:
    """A loss ``loss(y, z)`` convex in ``z``, given as a sympy expression in :data:`y`, :data:`z`.

    Use the built-in instances (:class:`Square`, :class:`Absolute`, :class:`Huber`,
    :class:`Logistic`, :class:`Hinge`) or :meth:`from_sympy` for any other convex loss.

    Parameters
    ----------
    expr : sympy.Expr
        The loss in the module's symbols ``y`` and ``z`` (real, finite, continuous; a loss not
        :attr:`convex_proven` is checked at every node the proximal operator evaluates).
    name : str
        Short name (shown in results).
    labels : {None, "binary", "real"}
        The labels the loss needs (None: any); see :func:`.channels.check_pair`.

    Notes
    -----
    The built-in losses build their expression (and import sympy) only when first needed (the
    square loss, e.g. ``rm.solve(..., loss="square")``, needs no sympy); they are convex by construction.
    """

    labels: str | None = None

    def __init__(self, expr: sp.Expr, *, name: str = "custom", labels: str | None = None) -> None:
        from replica_mlm.theory.sides import convexity
        from replica_mlm.theory.symbolic.expressions import stable, y, z

        convexity.check_expression(expr)
        extra = expr.free_symbols - {y, z}
        if extra:
            raise ValueError(f"expr may depend on y and z only; it also has {sorted(map(str, extra))}")
        if not expr.has(z):
            raise ValueError(f"expr must depend on z (the student's field), got {expr}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if labels not in (None, "binary", "real"):
            raise ValueError(f"labels must be None (any), 'binary' or 'real', got {labels!r}")
        self.expr = stable(expr)
        self.name, self.labels = name, labels

    @cached_property
    def expr(self) -> sp.Expr:
        """The loss, a sympy expression in ``y`` and ``z`` (built-in losses: built on first use)."""
        from replica_mlm.theory.symbolic.expressions import stable

        return stable(self._expression())

    def _expression(self) -> sp.Expr:
        """The built-in loss's sympy expression (a loss given to ``__init__`` never calls this)."""
        raise NotImplementedError(f"{type(self).__name__} must pass its expression to Loss.__init__ "
                                  "or define _expression()")

    @classmethod
    def from_sympy(cls, expr, y_symbol: sp.Symbol, z_symbol: sp.Symbol, *, name: str = "custom",
                   labels: str | None = None) -> Loss:
        """A loss from any sympy expression in a label symbol and a field symbol.

        Parameters
        ----------
        expr : sympy.Expr
            ``loss(y, z)``: real, finite, continuous (no ``I``, ``oo``, ``zoo``, ``nan``, ``floor``,
            ``sign``, ``Heaviside``, ...; a string is refused, never evaluated), convex in ``z``
            for every ``y``: proven by sympy where it can, else checked on a grid now and at every
            node the solver evaluates (:mod:`replica_mlm.theory.sides.convexity`).
        y_symbol, z_symbol : sympy.Symbol
            The symbols of the label and of the field used in ``expr`` (its only free symbols).
        name : str
            Shown in results.
        labels : {None, "binary", "real"}
            The labels the loss needs (None: any); e.g. ``"binary"`` (y = -1 or +1) pairs it
            with the ``"sign"`` and ``"logit"`` channels only.

        Raises
        ------
        TypeError
            If ``expr`` is no sympy expression (a string, None, a number) or a symbol no Symbol.
        ValueError
            If ``expr`` is complex, infinite, discontinuous, has other free symbols, or is not
            convex in z (:class:`~.convexity.NonConvexLoss`, naming a point (y, z)).

        Examples
        --------
        >>> import sympy as sp
        >>> a, b = sp.symbols("a b", real=True)
        >>> pseudo_huber = Loss.from_sympy(sp.sqrt(1 + (a - b) ** 2) - 1, a, b)
        """
        from replica_mlm.theory.sides import convexity
        expr = convexity.user_expression(expr, y_symbol, z_symbol)
        loss = cls(expr, name=name, labels=labels)
        loss.check_convex()
        return loss

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}: {self.expr})"

    # --- compiled pieces -----------------------------------------------------------------

    @cached_property
    def derivatives(self) -> tuple[sp.Expr, sp.Expr]:
        """``(d loss/dz, d^2 loss/dz^2)`` by sympy."""
        import sympy as sp

        from replica_mlm.theory.symbolic.expressions import z

        d1 = sp.diff(self.expr, z)
        return d1, sp.diff(d1, z)

    @cached_property
    def kinks(self) -> tuple[sp.Expr, ...]:
        """Candidate non-differentiable points ``z = k(y)`` found by sympy."""
        from replica_mlm.theory.symbolic.expressions import kinks_of
        return kinks_of(self.expr, self.derivatives[0])

    def _cache_key(self) -> str | None:
        """The name of a built-in loss's functions in the disk cache (None: derived each process)."""
        if type(self) in (Square, Absolute, Logistic, Hinge, Huber):  # not a subclass
            return f"loss:{self.name}" + (f":{self.delta!r}" if type(self) is Huber else "")
        return None

    @cached_property
    def _fns(self):
        """The numerical functions: a built-in loss's from the disk cache, any other's lambdified."""
        from replica_mlm.theory.symbolic import compiled_cache
        def sources(compile_now: bool = False) -> dict:
            from replica_mlm.theory.symbolic.expressions import loss_sources
            return loss_sources(self.expr, *self.derivatives, self.kinks, compile_now=compile_now)

        key = self._cache_key()
        f = sources(compile_now=True) if key is None else compiled_cache.cached_functions(key, sources)
        return f["value"], f["d1"], f["d2"], f["kinks"], f["d12"]

    @cached_property
    def shift_invariant(self) -> bool:
        """Whether the loss is a function of ``y - z`` only (regression losses)."""
        if self._cache_key() is not None:  # a built-in loss: known by construction
            return isinstance(self, Square | Absolute | Huber)
        import sympy as sp

        from replica_mlm.theory.symbolic.expressions import y, z

        t = sp.Dummy("t")
        return sp.simplify(self.expr.subs({y: y + t, z: z + t}, simultaneous=True) - self.expr) == 0

    @cached_property
    def is_square(self) -> bool:
        """Whether the loss is ``(y - z)^2 / 2`` exactly (the fast path's loss).

        A loss whose value at a point is a number clearly different from it (by more than 1e-9
        relative: equal expressions cannot differ so) is not; otherwise sympy decides
        (``simplify`` of a piecewise loss costs a second, the point costs nothing).
        """
        if self._cache_key() is not None:  # a built-in loss other than Square: not, by construction
            return False
        import sympy as sp

        from replica_mlm.theory.symbolic.expressions import y, z

        square = (y - z) ** 2 / 2
        for point in ({y: sp.Rational(3, 7), z: sp.Rational(-5, 11)},
                      {y: sp.Integer(-2), z: sp.Rational(1, 3)}):
            value, target = self.expr.subs(point), float(square.subs(point))
            try:
                different = abs(complex(value) - target) > 1e-9 * target
            except TypeError:  # a function sympy cannot evaluate: let simplify decide
                different = False
            if different:
                return False
        return sp.simplify(self.expr - square) == 0

    def value(self, yv, zv) -> np.ndarray:
        """``loss(y, z)`` elementwise."""
        return _full(self._fns[0](yv, zv), yv, zv)

    def d1(self, yv, zv) -> np.ndarray:
        """``d loss / dz`` elementwise (at a kink: some element of the subdifferential)."""
        return _full(self._fns[1](yv, zv), yv, zv)

    def d2(self, yv, zv) -> np.ndarray:
        """``d^2 loss / dz^2`` elementwise (0 on the kinks' Dirac masses)."""
        return _full(self._fns[2](yv, zv), yv, zv)

    def _d12(self, yv, zv) -> tuple[np.ndarray, np.ndarray]:
        """``(d1, d2)`` elementwise in one call (common subexpressions evaluated once).

        Under ``errstate(all="ignore")``, as ``d2`` was evaluated alone before: ``prox`` guards
        every use (a non-finite Newton step falls back to bisection; non-finite hats are an error
        in the engine), so an overflow here is not silent.
        """
        with np.errstate(all="ignore"):
            d1, d2 = self._fns[4](yv, zv)
        return _full(d1, yv, zv), _full(d2, yv, zv)

    def kink_points(self, yv) -> list[np.ndarray]:
        """The kinks ``k(y)`` at each label (NaN where a kink does not exist, e.g. 1/y at y = 0)."""
        yv = np.asarray(yv, dtype=float)
        out = []
        for fn in self._fns[3]:
            with np.errstate(divide="ignore", invalid="ignore"):
                k = np.broadcast_to(np.asarray(fn(yv), dtype=float), yv.shape).copy()
            k[~np.isfinite(k)] = np.nan
            out.append(k)
        return out

    def _one_sided(self, yv, k) -> tuple[np.ndarray, np.ndarray]:
        h = 1e-9 * np.maximum(1.0, np.abs(k))
        return self.d1(yv, k - h), self.d1(yv, k + h)

    def thresholds(self, yv, vv: float) -> list[np.ndarray]:
        """Values of ``w`` where the proximal point enters or leaves a kink (for quadrature panels).

        For each kink ``k(y)``: ``k + V loss'(k-)`` and ``k + V loss'(k+)``.
        """
        out = []
        for k in self.kink_points(yv):
            left, right = self._one_sided(yv, np.nan_to_num(k))
            out += [np.where(np.isnan(k), np.nan, k + vv * left),
                    np.where(np.isnan(k), np.nan, k + vv * right)]
        return out

    @cached_property
    def convex_proven(self) -> bool:
        """Whether convexity in z is proven: by construction for the built-in losses, else by
        sympy (:func:`.convexity.prove`). A loss not proven convex is checked at every node the
        proximal operator evaluates."""
        from replica_mlm.theory.sides import convexity
        return convexity.prove(self.expr)

    def check_convex(self, *, grid: int = 41) -> None:
        """Nothing if :attr:`convex_proven`; else ValueError if the loss is not finite, or
        :class:`.convexity.NonConvexLoss` if ``loss''`` is negative or a kink is concave or
        discontinuous, somewhere on a grid of (y, z) in [-5, 5]^2."""
        from replica_mlm.theory.sides import convexity
        if not self.convex_proven:
            convexity.check_grid(self, grid=grid)

    # --- the proximal operator -----------------------------------------------------------

    def prox(self, yv, wv, vv, *, max_iter: int = 200) -> Prox:
        """Proximal point of the loss at labels ``y`` and fields ``w`` (broadcast), ``V > 0`` (a
        number, or an array of the nodes' shape: one ``V`` per node).

        Safeguarded Newton on ``g(z) = (z - w)/V + loss'(y, z)`` (increasing in z), exact on
        kinks (see the module docstring). Converges to a few ulps of ``z*``. A loss not
        :attr:`convex_proven` is checked at every node evaluated (``loss''`` at each Newton
        point, the one-sided derivatives and values at each kink):
        :class:`.convexity.NonConvexLoss` where it is not convex.
        """
        yv, wv = np.broadcast_arrays(np.asarray(yv, dtype=float), np.asarray(wv, dtype=float))
        vv = float(vv) if np.ndim(vv) == 0 else np.broadcast_to(np.asarray(vv, dtype=float), yv.shape)
        check = None if self.convex_proven else importlib.import_module("replica_mlm.theory.sides.convexity")
        d, d2w = self._d12(yv, wv)
        if check:
            check.refuse_curvature(self, yv, wv, d, d2w)
        lo, hi, at_kink, z_kink = proximal.kink_bracket(self, yv, wv, vv, d, check)
        zv = proximal.safeguarded_newton(self, yv, wv, vv, d, d2w, lo, hi, at_kink, check, max_iter)
        zv = np.where(at_kink, z_kink, zv)
        d1z, d2z = self._d12(yv, zv)
        if check:
            check.refuse_curvature(self, yv, zv, d1z, d2z)
        with np.errstate(all="ignore"):
            # d_w f = (dz*/dw - 1)/V = -loss''/(1 + V loss''): no cancellation at small V
            dfdw = np.where(at_kink, -1.0 / vv, -d2z / (1.0 + vv * d2z))
        f = np.where(at_kink, (zv - wv) / vv, -d1z)
        return Prox(z=zv, f=f, dfdw=dfdw, at_kink=at_kink)


def _full(value, yv, zv) -> np.ndarray:
    shape = np.broadcast_shapes(np.shape(yv), np.shape(zv))
    return np.broadcast_to(np.asarray(value, dtype=float), shape)


class Square(Loss):
    """``(y - z)^2 / 2``: ridge regression (the fast path with the gaussian channel)."""

    convex_proven = True  # by construction: a quadratic in z

    def __init__(self) -> None:
        self.name = "square"

    def _expression(self):
        from replica_mlm.theory.symbolic.expressions import y, z

        return (y - z) ** 2 / 2

    @property
    def is_square(self) -> bool:
        """True: the square loss by construction (decided without sympy)."""
        return True


class Absolute(Loss):
    """``|y - z|``: least absolute deviations."""

    convex_proven = True  # by construction: the absolute value of an affine function of z

    def __init__(self) -> None:
        self.name = "absolute"

    def _expression(self):
        import sympy as sp

        from replica_mlm.theory.symbolic.expressions import y, z

        return sp.Abs(y - z)


class Huber(Loss):
    """Huber loss: ``(y - z)^2 / 2`` for ``|y - z| <= delta``, ``delta |y - z| - delta^2/2`` beyond."""

    convex_proven = True  # by construction: convex pieces, continuous derivative at |y - z| = delta

    def __init__(self, delta: float = 1.0) -> None:
        self.delta = _checks.positive(delta, "delta")
        self.name = f"huber(delta={self.delta:g})"

    def _expression(self):
        import sympy as sp

        from replica_mlm.theory.symbolic.expressions import y, z

        r, d = y - z, sp.Float(self.delta)
        return sp.Piecewise((r**2 / 2, sp.Abs(r) <= d), (d * sp.Abs(r) - d**2 / 2, True))


class Logistic(Loss):
    """``log(1 + exp(-y z))``: logistic regression (cross-entropy), labels y = +-1."""

    convex_proven, labels = True, "binary"  # by construction: softplus (convex, increasing) of affine

    def __init__(self) -> None:
        self.name = "logistic"

    def _expression(self):
        from replica_mlm.theory.symbolic.expressions import Softplus, y, z

        return Softplus(-y * z)


class Hinge(Loss):
    """``max(0, 1 - y z)``: the support vector machine, labels y = +-1."""

    convex_proven, labels = True, "binary"  # by construction: the maximum of two affine functions

    def __init__(self) -> None:
        self.name = "hinge"

    def _expression(self):
        import sympy as sp

        from replica_mlm.theory.symbolic.expressions import y, z

        return sp.Max(0, 1 - y * z)


#: the registry of losses by name -> class (a name is its default instance); every name list reads it
NAMED = {"square": Square, "absolute": Absolute, "huber": Huber, "logistic": Logistic, "hinge": Hinge}


def names() -> tuple[str, ...]:
    """The names of the built-in losses, in the order of :data:`NAMED`."""
    return tuple(NAMED)


@cache
def _default(key: str) -> Loss:
    return NAMED[key]()


def resolve(loss) -> Loss:
    """A :class:`Loss` from a Loss, a name in :data:`NAMED` or None (square): the one place an
    unknown loss is refused, with the same message from every entry point (``rm`` and the CLI)."""
    if loss is None or isinstance(loss, Loss):
        return _default("square") if loss is None else loss
    if isinstance(loss, str) and (key := loss.strip().lower()) in NAMED:
        return _default(key)
    choices = ", ".join(repr(n) for n in NAMED)
    if isinstance(loss, str):
        raise ValueError(f"unknown loss {loss!r}: loss must be one of {choices} or a rm.losses.Loss")
    raise TypeError(f"loss must be one of {choices} or a rm.losses.Loss, got {type(loss).__name__}")
