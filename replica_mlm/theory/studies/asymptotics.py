"""Asymptotic expansions of the saddle point, derived by sympy from the reduced system.

Three regimes of the reduced equations of :func:`.potentials.reduce`, each a series in a small
parameter, with spectral sums expanded mode by mode and collected into spectral moments

    B_k = sum_j b_j omega_j^k  (bulk: (1/p) tr Sigma^k),   C_k = sum_j c_j omega_j^k  (w*^T Sigma^k w*),

with B_0 = 1 and k of either sign:

``small_alpha``  alpha -> 0 at fixed lam: kappa = 1/eps -> infinity; eg = e0 + e1 alpha + O(alpha^2).
                 e0 = C_ii; the sign of e1 says whether more data hurts at the start.
``large_alpha``  alpha -> infinity at fixed lam: kappa -> 0 with kappa = u (k1 + k2 u + ...), u = 1/alpha;
                 eg = sigma^2 + c1 u + c2 u^2 + O(u^3); c1 = sigma^2.
``peak``         alpha = 1, lam = t^2 -> 0: kappa = t (a1 + a2 t + ...);
                 eg = A lam^(-1/2) + A' + O(lam^(1/2)), the exponent read off the leading power.

The solver holds each expansion: the tests compare them with :func:`solve` (at high precision where
the expansion parameter is tiny).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache

import mpmath
import numpy as np
import sympy as sp

from replica_mlm._base import checks as _checks
from replica_mlm._base.keywords import keywords
from replica_mlm.tasks.protocol import spectrum_of
from replica_mlm.theory.solvers.precise import PreciseSpectrum, precise_spectrum
from replica_mlm.theory.symbolic import potentials as P

#: expansion variables
eps, u, t = sp.symbols("epsilon u t", positive=True)


def bulk_moment(k: int) -> sp.Symbol:
    """Symbol B_k = sum_j b_j omega_j^k (B_0 = 1)."""
    return sp.Integer(1) if k == 0 else sp.Symbol(f"B_{{{k}}}", positive=True)


def teacher_moment(k: int) -> sp.Symbol:
    """Symbol C_k = sum_j c_j omega_j^k."""
    return sp.Symbol(f"C_{{{k}}}", positive=True)


def _moments(expr: sp.Expr) -> sp.Expr:
    """Replace a per-mode expression (linear in b and c, Laurent polynomial in omega) by moments."""
    out = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(expr)):
        if term == 0:
            continue
        coeff, rest = term.as_independent(P.omega, P.b, P.c, as_Add=False)
        powers = rest.as_powers_dict()
        k, nb, nc = powers.get(P.omega, 0), powers.get(P.b, 0), powers.get(P.c, 0)
        if (nb, nc) == (1, 0):
            out += coeff * bulk_moment(int(k))
        elif (nb, nc) == (0, 1):
            out += coeff * teacher_moment(int(k))
        else:
            raise AssertionError(f"summand term {term} is not linear in one weight")
    return out


def _sum_series(name: sp.Symbol, kappa_of: sp.Expr, var: sp.Symbol, order: int) -> sp.Expr:
    """The spectral sum ``name`` at kappa = kappa_of(var), as a series in var (moments)."""
    summand = P.reduce().sums[name].subs(P.kappa, kappa_of)
    ser = sp.expand(sp.series(summand, var, 0, order).removeO())
    return sum(_moments(ser.coeff(var, j)) * var**j for j in range(order))


def _g_series(kappa_of: sp.Expr, var: sp.Symbol, order: int, *, alpha_of: sp.Expr,
              lam_of: sp.Expr = P.lam) -> sp.Expr:
    """The scalar equation ``G = lam/kappa - S_1c + 1 - alpha`` of :func:`.potentials.reduce`
    (``reduce().newton``) at ``kappa = kappa_of``, alpha = ``alpha_of``, lam = ``lam_of``, with
    S_1c a series in ``var`` to ``order`` terms."""
    s1c = _sum_series(P.S1C, kappa_of, var, order)
    return P.reduce().newton.subs({P.delta: 1 - alpha_of, P.lam: lam_of}).subs(
        {P.kappa: kappa_of, P.S1C: s1c})


def _solve_orders(expr: sp.Expr, var: sp.Symbol, unknowns: list[sp.Symbol], first: int = 0) -> dict:
    """Solve the coefficients of var^first, var^(first+1), ... of ``expr`` = 0 one unknown at a time."""
    sol = {}
    ser = sp.expand(sp.series(expr, var, 0, first + len(unknowns)).removeO())
    for j, x in enumerate(unknowns):
        eq = sp.expand(ser.coeff(var, first + j).subs(sol))
        (val,) = sp.solve(eq, x)
        sol[x] = sp.simplify(val)
    return sol


@dataclass(frozen=True)
class Expansion:
    """An asymptotic series of eg: ``series`` in ``variable``, coefficients in spectral moments."""

    name: str
    variable: sp.Symbol
    series: sp.Expr
    coefficients: tuple

    def latex(self) -> str:
        return sp.latex(self.series)


@cache
def expansions() -> dict[str, Expansion]:
    """The three expansions of the module docstring, derived once (sympy).

    The derivation (about 10 CPU seconds of sympy) is stored on disk beside the compiled equations
    (:mod:`.compiled_cache`, file ``compiled-expansions-*.json``, keyed by the source of this module
    and of the potentials) as ``sympy.srepr`` strings, which ``sympify`` turns back into the same
    expressions; a new process reads them instead of deriving them again. An entry is used only if
    its MAC verifies and it holds nothing but sympy constructors on numbers (see
    :mod:`.compiled_cache`); otherwise it is derived again.
    """
    from replica_mlm.theory.symbolic import compiled_cache
    read = compiled_cache.sympify_srepr
    return compiled_cache.fetch("expansions", lambda: {
        name: {"variable": sp.srepr(e.variable), "series": sp.srepr(e.series),
               "coefficients": [sp.srepr(c) for c in e.coefficients]}
        for name, e in derive_expansions().items()}, complete=lambda d: set(d) == set(_EXPANSIONS),
        convert=lambda entries: {name: Expansion(name, read(entries[name]["variable"]),
                                                 read(entries[name]["series"]),
                                                 tuple(read(c) for c in entries[name]["coefficients"]))
                                 for name in _EXPANSIONS})


#: the names of the expansions
_EXPANSIONS = ("small_alpha", "large_alpha", "peak")


def derive_expansions() -> dict[str, Expansion]:
    """The three expansions derived by sympy (what :func:`expansions` caches)."""
    red = P.reduce()
    eg_expr = red.values["eg"]
    alpha, lam = P.alpha, P.lam

    # alpha -> 0: kappa = 1/eps, eps = e1 alpha + e2 alpha^2
    e1, e2 = sp.symbols("e1 e2")
    g = _g_series(1 / eps, eps, 4, alpha_of=alpha)
    eps_of = e1 * alpha + e2 * alpha**2
    sol = _solve_orders(g.subs(eps, eps_of), alpha, [e1, e2], first=1)
    sums = {s: _sum_series(s, 1 / eps, eps, 4) for s in (P.R_SUM, P.S2C)}
    eg_small = eg_expr.subs(P.delta, 1 - alpha).subs(sums).subs(eps, eps_of.subs(sol))
    small = sp.expand(sp.series(eg_small, alpha, 0, 2).removeO())
    small_coeffs = tuple(sp.simplify(small.coeff(alpha, j)) for j in range(2))

    # alpha -> infinity: u = 1/alpha, kappa = u (k1 + k2 u + k3 u^2)
    k1, k2, k3 = sp.symbols("k1 k2 k3")
    kappa_u = u * (k1 + k2 * u + k3 * u**2)
    g = _g_series(kappa_u, u, 5, alpha_of=1 / u) * u  # u G, regular at u = 0
    sol = _solve_orders(sp.together(g), u, [k1, k2, k3])
    sums = {s: _sum_series(s, kappa_u.subs(sol), u, 4) for s in (P.R_SUM, P.S2C)}
    eg_large = eg_expr.subs({P.delta: 1 - 1 / u, alpha: 1 / u}).subs(sums)
    large = sp.expand(sp.series(eg_large, u, 0, 3).removeO())
    large_coeffs = tuple(sp.simplify(large.coeff(u, j)) for j in range(3))

    # alpha = 1, lam = t^2 -> 0: kappa = t (a1 + a2 t)
    a1, a2 = sp.symbols("a1 a2", positive=True)
    kappa_t = t * (a1 + a2 * t)
    g = kappa_t * _g_series(kappa_t, t, 4, alpha_of=sp.Integer(1), lam_of=t**2) / t**2  # kappa G / lam
    sol = _solve_orders(sp.expand(g), t, [a1, a2])
    sums = {s: _sum_series(s, kappa_t.subs(sol), t, 4) for s in (P.R_SUM, P.S2C)}
    eg_peak = eg_expr.subs({P.delta: 0, alpha: 1}).subs(sums).subs(lam, t**2)
    peak_ser = sp.series(eg_peak, t, 0, 1).removeO()
    lead_coeff, lead_power = sp.series(eg_peak, t, 0, 1).leadterm(t)
    peak_coeffs = (sp.simplify(lead_coeff), sp.simplify(sp.expand(peak_ser).coeff(t, 0)),
                   sp.Rational(lead_power, 2))
    return {
        "small_alpha": Expansion("small_alpha", alpha, small, small_coeffs),
        "large_alpha": Expansion("large_alpha", u, large, large_coeffs),
        "peak": Expansion("peak", t, sp.expand(peak_ser), peak_coeffs),
    }


@dataclass(frozen=True)
class Asymptotics:
    """The expansions evaluated for one task at one lam.

    Attributes
    ----------
    eg0, slope : float
        eg = eg0 + slope * alpha + O(alpha^2) as alpha -> 0 (eg0 = C_ii; slope > 0: more data
        hurts at the start).
    c1, c2 : float
        eg = sigma^2 + c1 / alpha + c2 / alpha^2 + O(alpha^-3) as alpha -> infinity.
    peak_prefactor, peak_exponent, peak_constant : float
        At alpha = 1: eg = peak_prefactor * lam^peak_exponent + peak_constant + O(lam^(1/2))
        (independent of the ``lam`` given).
    lam : float
    """

    eg0: float
    slope: float
    c1: float
    c2: float
    peak_prefactor: float
    peak_exponent: float
    peak_constant: float
    lam: float

    def to_frame(self):
        """A one-row pandas DataFrame of the fields (mpmath numbers as floats)."""
        import pandas as pd

        return pd.DataFrame([{f.name: float(getattr(self, f.name)) for f in fields(self)}])


@keywords
def asymptotics(task, *, lam: float, precision: int | None = None) -> Asymptotics:
    """Evaluate the sympy expansions of :func:`expansions` for ``task`` at ridge ``lam``.

    Moments are computed from the task's spectrum (at ``precision`` digits with mpmath if given;
    the numbers are then ``mpmath.mpf``).
    """
    spec = spectrum_of(task)
    lam = _checks.nonnegative(lam, "lam")
    if precision is not None:
        precision = _checks.precision_digits(precision, minimum=1)
    ex = expansions()
    exprs = [*ex["small_alpha"].coefficients, *ex["large_alpha"].coefficients[1:],
             ex["peak"].coefficients[0], ex["peak"].coefficients[2], ex["peak"].coefficients[1]]
    symbols = sorted(set().union(*(e.free_symbols for e in exprs)) - {P.lam, P.noise}, key=str)
    if precision is None:
        def moment(weights, k):
            return float(np.dot(weights, spec.omega ** float(k)))
        bulk, teacher, noise, conv = spec.bulk, spec.teacher, spec.noise, float
        values = _values(symbols, moment, bulk, teacher)
        subs = {**values, P.lam: lam, P.noise: noise}
        nums = [conv(sp.N(e.subs(subs), 17)) for e in exprs]
    else:
        digits = precision
        with mpmath.workdps(digits + 10):
            ps: PreciseSpectrum = precise_spectrum(task, spec, digits)
            values = {s: ps.moment(*_which(s)) for s in symbols}
            subs = {s: sp.Float(str(v), digits + 10) for s, v in values.items()}
            subs[P.lam] = sp.Float(repr(lam), digits + 10)
            subs[P.noise] = sp.Float(str(ps.noise), digits + 10)
            nums = [mpmath.mpf(str(sp.N(e.subs(subs), digits + 10))) for e in exprs]
    return Asymptotics(*nums, lam=lam)


def _which(symbol: sp.Symbol) -> tuple[str, int]:
    name = symbol.name  # "B_{k}" or "C_{k}"
    return ("bulk" if name[0] == "B" else "teacher"), int(name[3:-1])


def _values(symbols, moment, bulk, teacher) -> dict:
    out = {}
    for s in symbols:
        which, k = _which(s)
        out[s] = moment(bulk if which == "bulk" else teacher, k)
    return out
