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

import numpy as np
import sympy as sp
from scipy import special

__all__ = ["NUMERIC", "Sigmoid", "Softplus", "V", "kink_arguments", "lambdify", "mu", "nu", "stable", "v",
           "w", "y", "z"]

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


#: numerical implementations of the custom functions for lambdify
NUMERIC = {"Softplus": lambda x: np.logaddexp(0.0, x), "Sigmoid": special.expit, "erf": special.erf,
           "erfc": special.erfc}


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
