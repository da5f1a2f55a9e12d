"""The sympy side of the losses and channels of the general engine.

:mod:`.losses` and :mod:`.channels` import this module (and with it sympy) only when a loss or a
channel is first derived, so that the square loss with the gaussian channel (the reduced solver,
which reads its compiled equations from a cache) runs without sympy.

Holds the symbols of the label ``y``, the student's field ``z``, the proximal problem's ``w`` and
``V``, the teacher's field ``nu`` and its conditional mean ``mu`` and variance ``v``; the stable
custom functions :class:`Softplus` and :class:`Sigmoid`; :func:`stable`, :func:`lambdify` and
:func:`kink_arguments`. See docs/theory.md, section "The general engine".
"""

from __future__ import annotations

import sympy as sp

from replica_mlm.theory.symbolic import numeric_functions

__all__ = ["NUMERIC", "Sigmoid", "Softplus", "V", "kink_arguments", "kinks_of", "lambdify", "loss_sources",
           "mu", "nu", "source", "stable", "v", "w", "y", "z"]

#: the label and the student's field
y, z = sp.symbols("y z", real=True)
#: the proximal problem's parameters
w, V = sp.symbols("w V", real=True)
#: the teacher's field, and its mean and variance given the student's
nu, mu = sp.symbols("nu mu", real=True)
v = sp.Symbol("v", nonnegative=True)


class Softplus(sp.Function):
    """``log(1 + exp(x))``, evaluated stably (``numpy.logaddexp(0, x)``)."""

    def fdiff(self, argindex: int = 1):
        return Sigmoid(self.args[0])

    def _eval_rewrite_as_log(self, x, **kwargs):
        return sp.log(1 + sp.exp(x))


class Sigmoid(sp.Function):
    """``1 / (1 + exp(-x))``, evaluated stably (``scipy.special.expit``)."""

    def fdiff(self, argindex: int = 1):
        s = Sigmoid(self.args[0])
        return s * (1 - s)

    def _eval_rewrite_as_exp(self, x, **kwargs):
        return 1 / (1 + sp.exp(-x))


#: numerical implementations of the custom functions for lambdify (:mod:`.numeric_functions`)
NUMERIC = numeric_functions.NUMERIC


def stable(expr: sp.Expr) -> sp.Expr:
    """Rewrite ``log(1 + exp(u))`` as Softplus(u) and ``1/(1 + exp(u))`` as Sigmoid(-u)."""
    a = sp.Wild("a")
    expr = expr.replace(sp.log(1 + sp.exp(a)), Softplus(a))
    return expr.replace(1 / (1 + sp.exp(a)), Sigmoid(-a))


def lambdify(args, expr, *, cse: bool = False):
    """Lambdify for numpy with the stable custom functions; DiracDelta (kinks) is dropped.

    ``expr`` is one expression or a list of them (the function then returns a list, one entry per
    expression). ``cse=True`` evaluates common subexpressions once (sympy's common-subexpression
    elimination), e.g. ``Sigmoid(nu y)`` shared by ``P_out`` and its derivative.
    """
    def drop(e):
        return sp.sympify(e).replace(lambda t: isinstance(t, sp.DiracDelta), lambda t: sp.S.Zero)

    expr = [drop(e) for e in expr] if isinstance(expr, list | tuple) else drop(expr)
    return sp.lambdify(args, expr, modules=[NUMERIC, "numpy"], cse=cse)


def source(args, expr, *, cse: bool = False) -> str:
    """The source :func:`lambdify` compiles for ``expr`` in ``args``, for the disk cache
    (:mod:`.compiled_cache`, backend ``"numeric"``): loaded, it is the same function."""
    from replica_mlm.theory.symbolic import compiled_cache
    from replica_mlm.theory.symbolic.compiled import py_name

    def drop(e):
        return sp.sympify(e).replace(lambda t: isinstance(t, sp.DiracDelta), lambda t: sp.S.Zero)

    expr = [drop(e) for e in expr] if isinstance(expr, list | tuple) else drop(expr)
    return compiled_cache.lambdify_source(args, expr, "numeric", cse=cse, rename=py_name)


def kinks_of(expr: sp.Expr, d1: sp.Expr) -> tuple:
    """Candidate kinks ``z = k(y)`` of a loss: the zeros in z of the kink arguments of the loss
    ``expr`` and of its derivative ``d1``."""
    kinks = []
    for arg in kink_arguments(expr) | kink_arguments(d1):
        if not arg.has(z):
            continue
        for sol in sp.solve(sp.Eq(arg, 0), z):
            if sol.has(z) or sol.has(sp.I) or sol in kinks:
                continue
            kinks.append(sol)
    return tuple(kinks)


def loss_sources(expr: sp.Expr, d1: sp.Expr, d2: sp.Expr, kinks, *, compile_now: bool = False) -> dict:
    """The numerical functions of a loss: ``value``, ``d1``, ``d2`` of ``(y, z)``, ``kinks`` (a
    list, of ``y``) and ``d12`` (both derivatives at once) as sources for the disk cache, or
    compiled (:func:`lambdify`) with ``compile_now``."""
    make = (lambda a, e, cse=False: lambdify(a, e, cse=cse)) if compile_now else source
    return {"value": make((y, z), expr), "d1": make((y, z), d1), "d2": make((y, z), d2),
            "kinks": [make((y,), k) for k in kinks], "d12": make((y, z), [d1, d2], cse=True)}


def kink_arguments(expr: sp.Expr) -> set:
    """Expressions whose zeros are candidate non-differentiable points of ``expr``."""
    out = set()
    for node in sp.preorder_traversal(expr):
        if isinstance(node, sp.Abs | sp.sign | sp.Heaviside):
            out.add(node.args[0])
        elif isinstance(node, sp.Max | sp.Min):
            args = node.args
            out.update(a - b for i, a in enumerate(args) for b in args[i + 1:])
        elif isinstance(node, sp.Piecewise):
            for _, cond in node.args:
                for rel in sp.preorder_traversal(cond):
                    if isinstance(rel, sp.core.relational.Relational):
                        out.add(rel.lhs - rel.rhs)
    return out
