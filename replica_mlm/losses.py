"""Convex losses for :func:`replica_mlm.solve` and friends (``rm.losses``).

Re-exports :mod:`replica_mlm.theory.sides.losses`: the built-in losses :class:`Square`,
:class:`Absolute`, :class:`Huber`, :class:`Logistic`, :class:`Hinge`, and :class:`Loss` with
:meth:`Loss.from_sympy` for any convex loss written in sympy.
"""

from replica_mlm.theory.sides.losses import Absolute, Hinge, Huber, Logistic, Loss, Square

__all__ = ["Absolute", "Hinge", "Huber", "Logistic", "Loss", "Square"]
