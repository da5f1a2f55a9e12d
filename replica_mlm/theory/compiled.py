"""The saddle-point equations of :mod:`.potentials`, compiled once into numerical functions.

:func:`compiled` lambdifies the sympy expressions for a numerical backend (``"numpy"`` for
float64 arrays, ``"mpmath"`` for arbitrary precision) and caches the result, so the solvers
never see sympy and never re-derive anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import sympy as sp

from replica_mlm.theory import potentials as P

#: argument order of the raw hat functions
HAT_ARGS = (P.alpha, P.V, P.q, P.m, P.rho, P.noise)
#: argument order of the raw per-mode conjugate summands
MODE_ARGS = (P.omega, P.b, P.c, P.lam, P.V_hat, P.q_hat, P.m_hat)
#: argument order of the reduced per-mode sums
SUM_ARGS = (P.omega, P.b, P.c, P.kappa)
#: argument order of the reduced closed forms
VALUE_ARGS = (P.alpha, P.delta, P.kappa, P.noise, P.V_hat, *P.SUMS)
#: argument order of d eg / d alpha
DERIVATIVE_ARGS = (P.alpha, P.delta, P.kappa, P.lam, P.noise, P.R_SUM, P.S2, P.S2C, P.S1C_PRIME,
                   P.R_PRIME, P.S2C_PRIME)


@dataclass(frozen=True)
class Compiled:
    """Numerical functions compiled from :func:`.potentials.derive` and :func:`.potentials.reduce`.

    Attributes
    ----------
    hat : dict[str, Callable]
        ``"V_hat"``, ``"q_hat"``, ``"m_hat"`` as functions of ``HAT_ARGS``.
    mode : dict[str, Callable]
        Per-mode summands of ``"V"``, ``"q"``, ``"m"`` as functions of ``MODE_ARGS``.
    modes_together : Callable
        The three summands at once, ``[V, q, m]``, sharing common subexpressions.
    eg, train_loss : Callable
        eg and the train loss as functions of ``HAT_ARGS`` (no hats needed).
    sums : dict[str, Callable]
        Per-mode summands of the reduced spectral sums (keys: the names of ``potentials.SUMS``)
        as functions of ``SUM_ARGS``.
    root : Callable
        ``F(kappa, S_1c, alpha, lam)``, the scalar equation of the reduced system.
    v_hat_of_kappa : Callable
        ``V_hat(S_1c, delta)`` from the V and V_hat equations (delta = 1 - alpha).
    v_hat_from_root : Callable
        ``V_hat(kappa, lam)`` from the root equation (lam > 0).
    newton, newton_slope : Callable
        ``G(kappa, S_1c, delta, lam)`` and ``G'(kappa, S_1c', lam)`` for Newton's method.
    deg_dalpha : Callable
        d eg / d alpha along the solution, a function of ``DERIVATIVE_ARGS``.
    values : dict[str, Callable]
        Closed forms of the order parameters, eg and train loss, functions of ``VALUE_ARGS``.
    """

    modes_together: Callable
    hat: dict[str, Callable]
    mode: dict[str, Callable]
    eg: Callable
    train_loss: Callable
    sums: dict[str, Callable]
    root: Callable
    v_hat_of_kappa: Callable
    v_hat_from_root: Callable
    newton: Callable
    newton_slope: Callable
    deg_dalpha: Callable
    deg_dalpha_fixed_kappa: Callable
    values: dict[str, Callable]


_NAMES = {P.V_hat: "V_hat", P.q_hat: "q_hat", P.m_hat: "m_hat", P.V: "V", P.q: "q", P.m: "m"}


@cache
def compiled(backend: str = "numpy") -> Compiled:
    """Lambdify the derived equations for ``backend`` (``"numpy"`` or ``"mpmath"``); cached."""
    if backend not in ("numpy", "mpmath"):
        raise ValueError(f"backend must be 'numpy' or 'mpmath', got {backend!r}")
    eqs = P.derive()
    red = P.reduce()

    def fn(args, expr):
        return sp.lambdify(args, expr, modules=backend)

    return Compiled(
        modes_together=sp.lambdify(MODE_ARGS, [eqs.mode[P.V], eqs.mode[P.q], eqs.mode[P.m]],
                                   modules=backend, cse=True),
        hat={_NAMES[k]: fn(HAT_ARGS, v) for k, v in eqs.hat.items()},
        mode={_NAMES[k]: fn(MODE_ARGS, v) for k, v in eqs.mode.items()},
        eg=fn(HAT_ARGS, P.generalisation_error()),
        train_loss=fn(HAT_ARGS, P.training_loss()),
        sums={str(k): fn(SUM_ARGS, v) for k, v in red.sums.items()},
        root=fn((P.kappa, P.S1C, P.alpha, P.lam), red.root),
        v_hat_of_kappa=fn((P.S1C, P.delta), red.v_hat_of_kappa),
        v_hat_from_root=fn((P.kappa, P.lam), red.v_hat_from_root),
        newton=fn((P.kappa, P.S1C, P.delta, P.lam), red.newton),
        newton_slope=fn((P.kappa, P.S1C_PRIME, P.lam), red.newton_slope),
        deg_dalpha=fn(DERIVATIVE_ARGS, red.deg_dalpha),
        deg_dalpha_fixed_kappa=fn(DERIVATIVE_ARGS, red.deg_dalpha_fixed_kappa),
        values={k: fn(VALUE_ARGS, v) for k, v in red.values.items()},
    )


@cache
def compiled_sums(names: tuple[str, ...], backend: str = "numpy") -> Callable:
    """The summands of the reduced sums ``names`` in one function of ``SUM_ARGS`` returning a list.

    Common subexpressions (``kappa + omega`` and its powers) are computed once (``cse=True``).
    """
    sums = {str(k): v for k, v in P.reduce().sums.items()}
    unknown = set(names) - set(sums)
    if unknown:
        raise ValueError(f"unknown spectral sums {sorted(unknown)}; known: {sorted(sums)}")
    return sp.lambdify(SUM_ARGS, [sums[n] for n in names], modules=backend, cse=True)


@cache
def compiled_estimation(backend: str = "numpy") -> tuple[Callable, Callable]:
    """Summands of E |w_hat - w*|^2: of ``MODE_ARGS``, and of ``(omega, b, c, kappa, e_g, alpha)``."""
    general, reduced = P.estimation()
    return (sp.lambdify(MODE_ARGS, general, modules=backend),
            sp.lambdify((P.omega, P.b, P.c, P.kappa, P.eg, P.alpha), reduced, modules=backend))
