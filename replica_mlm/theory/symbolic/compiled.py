"""The saddle-point equations of :mod:`.potentials`, compiled once into numerical functions.

:func:`compiled` lambdifies the sympy expressions for a numerical backend (``"numpy"`` for
float64 arrays, ``"mpmath"`` for arbitrary precision), so the solvers never see sympy and never
re-derive anything. Every function takes its arguments by name (Python identifiers: ``lam``,
``noise``, ``V_hat``, ``S_1c``, ``kR_prime``, ...; see :func:`py_name`) or in the order of the
``*_ARGS`` tuples.

The derivation costs seconds of sympy; the generated source code is therefore kept on disk
(:mod:`.compiled_cache`), keyed by the package, sympy, numpy and mpmath versions and a hash of
the source of the derivation, and a new process only compiles it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from replica_mlm.theory.symbolic import compiled_cache

#: the reduced spectral sums of ``potentials.SUMS``, by name (checked against it when derived)
SUM_NAMES = ("S_1", "S_1c", "S_2", "S_2c", "Q_T", "M", "R", "P_rho", "S_12")
#: the sums the closed forms of ``reduce().stable`` use (the others of SUM_NAMES enter none of them)
STABLE_SUMS = ("S_1", "S_2", "Q_T", "M", "R", "S_12")
#: the sets of sums the solvers evaluate together, compiled (and cached) with every backend
SUM_SETS = (("S_1", "S_1c"), ("S_1", "S_1c", "S_12"), SUM_NAMES,
            ("R", "S_1c", "S_2", "S_12", "kR_prime", "kS_2c_prime", "S_F"), STABLE_SUMS)
#: Python names of the symbols of :mod:`.potentials` whose sympy names are not identifiers
PY_NAMES = {r"\hat{V}": "V_hat", r"\hat{q}": "q_hat", r"\hat{m}": "m_hat", "lambda": "lam",
            "sigma^2": "noise", "S_1c'": "S_1c_prime", "R'": "R_prime", "S_2c'": "S_2c_prime",
            "kR'": "kR_prime", "kS_2c'": "kS_2c_prime", "e_g": "eg"}


def py_name(symbol) -> str:
    """The argument name of a sympy symbol in the compiled functions (``lambda`` -> ``lam``)."""
    name = PY_NAMES.get(symbol.name, symbol.name)
    if not name.isidentifier():
        raise ValueError(f"symbol {symbol.name!r} has no Python argument name; add it to PY_NAMES")
    return name


@dataclass(frozen=True)
class Compiled:
    """Numerical functions compiled from :func:`.potentials.derive` and :func:`.potentials.reduce`.

    Attributes
    ----------
    hat : dict[str, Callable]
        ``"V_hat"``, ``"q_hat"``, ``"m_hat"`` as functions of ``(alpha, V, q, m, rho, noise)``.
    mode : dict[str, Callable]
        Per-mode summands of ``"V"``, ``"q"``, ``"m"`` as functions of
        ``(omega, b, c, lam, V_hat, q_hat, m_hat)``.
    modes_together : Callable
        The three summands at once, ``[V, q, m]``, sharing common subexpressions.
    eg, train_loss : Callable
        eg and the train loss as functions of ``(alpha, V, q, m, rho, noise)`` (no hats needed).
    sums : dict[str, Callable]
        Per-mode summands of the reduced spectral sums (keys: :data:`SUM_NAMES` and ``S_1c_prime``,
        ``R_prime``, ``S_2c_prime``, ``kR_prime``, ``kS_2c_prime``, ``S_F``) as functions of
        ``(omega, b, c, kappa)``.
    v_hat_of_kappa : Callable
        ``V_hat(S_1c, delta)`` from the V and V_hat equations (delta = 1 - alpha).
    v_hat_from_root : Callable
        ``V_hat(kappa, lam)`` from the root equation (lam > 0).
    newton, newton_slope : Callable
        ``G(kappa, S_1c, delta, lam)`` and ``G'(kappa, S_1c_prime, lam)`` for Newton's method.
    deg_dalpha, deg_dalpha_fixed_kappa : Callable
        d eg / d alpha along the solution, and its explicit part, functions of ``DERIVATIVE_ARGS``.
    values : dict[str, Callable]
        Closed forms of the order parameters, eg and train loss, functions of ``VALUE_ARGS``.
    stable : dict[str, Callable]
        The same without cancellation or spurious overflow (``potentials.reduce().stable``),
        functions of ``(alpha, noise, V_hat, *SUM_NAMES)``: what the solvers use.
    newton_direct, newton_scale : Callable
        ``G(kappa, S_1, alpha, lam)`` in the form exact at small alpha, and
        ``-kappa G'(kappa, S_12, lam)``.
    v_hat_direct : Callable
        ``V_hat(S_1, alpha) = alpha - S_1``.
    deg_dalpha_stable : Callable
        d eg / d alpha as a function of ``(alpha, noise, V_hat, R, S_12, kR_prime, B)``.
    deg_b : dict[str, Callable]
        The two forms of its bracket B, functions of
        ``(alpha, delta, V_hat, S_2, S_12, kS_2c_prime, S_F)``.
    """

    modes_together: Callable
    hat: dict[str, Callable]
    mode: dict[str, Callable]
    eg: Callable
    train_loss: Callable
    sums: dict[str, Callable]
    v_hat_of_kappa: Callable
    v_hat_from_root: Callable
    newton: Callable
    newton_slope: Callable
    deg_dalpha: Callable
    deg_dalpha_fixed_kappa: Callable
    values: dict[str, Callable]
    stable: dict[str, Callable]
    newton_direct: Callable
    newton_scale: Callable
    v_hat_direct: Callable
    deg_dalpha_stable: Callable
    deg_b: dict[str, Callable]


def _check_backend(backend: str) -> None:
    if backend not in ("numpy", "mpmath"):
        raise ValueError(f"backend must be 'numpy' or 'mpmath', got {backend!r}")


def derive_sources(backend: str) -> dict:
    """The generated source code of every compiled function for ``backend``, derived by sympy now.

    Keys: ``"equations"`` (the fields of :class:`Compiled`: a source, or a dict of them),
    ``"estimation"`` (the two summands of :func:`compiled_estimation`) and ``"sums:<names>"``
    for each set of :data:`SUM_SETS`. This is what the disk cache holds.
    """
    _check_backend(backend)
    import sympy as sp

    from replica_mlm.theory.symbolic import potentials as P
    if tuple(str(s) for s in P.SUMS) != SUM_NAMES:
        raise AssertionError(f"potentials.SUMS {P.SUMS} differ from SUM_NAMES {SUM_NAMES}")
    eqs, red = P.derive(), P.reduce()
    hat_args = (P.alpha, P.V, P.q, P.m, P.rho, P.noise)
    mode_args = (P.omega, P.b, P.c, P.lam, P.V_hat, P.q_hat, P.m_hat)
    sum_args = (P.omega, P.b, P.c, P.kappa)
    value_args = (P.alpha, P.delta, P.kappa, P.noise, P.V_hat, *P.SUMS)
    derivative_args = (P.alpha, P.delta, P.kappa, P.lam, P.noise, P.R_SUM, P.S2, P.S2C, P.S1C_PRIME,
                       P.R_PRIME, P.S2C_PRIME)
    stable_args = (P.alpha, P.noise, P.V_hat, *P.SUMS)
    stable_derivative_args = (P.alpha, P.noise, P.V_hat, P.R_SUM, P.S12, P.KR_PRIME, sp.Symbol("B"))
    bracket_args = (P.alpha, P.delta, P.V_hat, P.S2, P.S12, P.KS2C_PRIME, P.SF)
    names = {P.V_hat: "V_hat", P.q_hat: "q_hat", P.m_hat: "m_hat", P.V: "V", P.q: "q", P.m: "m"}

    def src(args, expr, cse=False):
        return compiled_cache.lambdify_source(args, expr, backend, cse=cse, rename=py_name)

    equations = dict(
        modes_together=src(mode_args, [eqs.mode[P.V], eqs.mode[P.q], eqs.mode[P.m]], cse=True),
        hat={names[k]: src(hat_args, v) for k, v in eqs.hat.items()},
        mode={names[k]: src(mode_args, v) for k, v in eqs.mode.items()},
        eg=src(hat_args, P.generalisation_error()),
        train_loss=src(hat_args, P.training_loss()),
        sums={py_name(k): src(sum_args, v) for k, v in red.sums.items()},
        v_hat_of_kappa=src((P.S1C, P.delta), red.v_hat_of_kappa),
        v_hat_from_root=src((P.kappa, P.lam), red.v_hat_from_root),
        newton=src((P.kappa, P.S1C, P.delta, P.lam), red.newton),
        newton_slope=src((P.kappa, P.S1C_PRIME, P.lam), red.newton_slope),
        deg_dalpha=src(derivative_args, red.deg_dalpha),
        deg_dalpha_fixed_kappa=src(derivative_args, red.deg_dalpha_fixed_kappa),
        values={k: src(value_args, v) for k, v in red.values.items()},
        stable={k: src(stable_args, v) for k, v in red.stable.items()},
        newton_direct=src((P.kappa, P.S1, P.alpha, P.lam), red.newton_direct),
        newton_scale=src((P.kappa, P.S12, P.lam), red.newton_scale),
        v_hat_direct=src((P.S1, P.alpha), red.v_hat_direct),
        deg_dalpha_stable=src(stable_derivative_args, red.deg_dalpha_stable),
        deg_b={k: src(bracket_args, v) for k, v in red.deg_b.items()},
    )
    general, reduced = P.estimation()
    out = {"equations": equations,
           "estimation": [src(mode_args, general),
                          src((P.omega, P.b, P.c, P.X, P.Y, P.eg, P.alpha), P.ratio_form(reduced))]}
    for names_ in SUM_SETS:
        out[_sums_key(names_)] = _sums_source(names_, backend)
    return out


def _sums_key(names: tuple[str, ...]) -> str:
    return "sums:" + ",".join(names)


def _sums_source(names: tuple[str, ...], backend: str) -> str:
    """Source of the summands of the sums ``names``, one function of (omega, b, c, x, y)."""
    from replica_mlm.theory.symbolic import potentials as P
    sums = {py_name(k): v for k, v in P.reduce().stable_sums.items()}
    unknown = set(names) - set(sums)
    if unknown:
        raise ValueError(f"unknown spectral sums {sorted(unknown)}; known: {sorted(sums)}")
    return compiled_cache.lambdify_source((P.omega, P.b, P.c, P.X, P.Y), [sums[n] for n in names],
                                          backend, cse=True, rename=py_name)


def complete(entries: dict) -> bool:
    """Whether cache ``entries`` hold every source :func:`derive_sources` writes: the equations,
    the estimation summands and each set of :data:`SUM_SETS`."""
    return ("equations" in entries and "estimation" in entries
            and all(_sums_key(names) in entries for names in SUM_SETS))


def _from_sources(backend: str, convert: Callable[[dict], object]):
    """``convert`` of the sources of :func:`derive_sources`, from the disk cache (derived and stored
    if absent or incomplete, or if ``convert`` fails on what the cache holds)."""
    return compiled_cache.fetch(backend, lambda: derive_sources(backend), complete=complete,
                                convert=convert)


@cache
def compiled(backend: str = "numpy") -> Compiled:
    """The compiled equations for ``backend`` (``"numpy"`` or ``"mpmath"``); cached in memory and
    on disk."""
    _check_backend(backend)

    def load(value):
        if isinstance(value, dict):
            return {k: compiled_cache.load(v, backend) for k, v in value.items()}
        return compiled_cache.load(value, backend)

    return _from_sources(backend, lambda sources: Compiled(
        **{field: load(value) for field, value in sources["equations"].items()}))


@cache
def compiled_sums(names: tuple[str, ...], backend: str = "numpy") -> Callable:
    """The summands of the reduced sums ``names`` in one function of (omega, b, c, kappa)
    returning a list.

    The summands are those of ``potentials.reduce().stable_sums``, functions of omega, the
    weights and the ratios ``x = kappa/(kappa+omega)``, ``y = omega/(kappa+omega)``, which are
    computed from ``r = min(kappa, omega)/max(kappa, omega)`` as ``r/(1+r)`` and ``1/(1+r)``:
    exact to an ulp or two for every kappa in [0, inf], with no overflow or 0/0. Common
    subexpressions are computed once (``cse=True``). The sets of :data:`SUM_SETS` come from the
    disk cache; any other set is derived (and added to the cache).
    """
    fn = _load_sum_terms(names, backend)
    ratios = _ratios_numpy if backend == "numpy" else _ratios_scalar

    def summands(omega, b, c, kappa):
        x, y = ratios(kappa, omega)
        return fn(omega, b, c, x, y)

    return summands


@cache
def sum_terms(names: tuple[str, ...], backend: str = "numpy") -> Callable:
    """The summands of :func:`compiled_sums` as a function of (omega, b, c, x, y), the ratios
    given (:func:`ratios_at` for one kappa)."""
    return _load_sum_terms(names, backend)


def _load_sum_terms(names: tuple[str, ...], backend: str) -> Callable:
    _check_backend(backend)
    names = tuple(names)
    key = _sums_key(names)
    fn = _from_sources(backend, lambda sources: compiled_cache.load(sources[key], backend)
                       if key in sources else None)
    if fn is None:
        source = _sums_source(names, backend)
        compiled_cache.store(backend, {key: source})
        fn = compiled_cache.load(source, backend)
    return fn


def ratios_at(kappa: float, omega: np.ndarray, low: float, top: float, *,
              ascending: bool = False, split: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ratios ``(x, y)`` of :func:`compiled_sums` at one float64 ``kappa`` over the modes
    ``omega`` whose smallest and largest values are ``low`` and ``top``: the same numbers as
    the summands of :func:`compiled_sums` use, without finding the extremes on every call.
    With ``ascending`` (``omega`` sorted from small to large) a kappa inside the spectrum splits
    the modes in two slices instead of masking every mode; ``split``, if given, is where
    (``np.searchsorted(omega, kappa)``, found by the caller, e.g. on a cached list)."""
    if kappa <= low:
        r = kappa / omega
        d = 1.0 + r
        return r / d, 1.0 / d
    if kappa > top:
        r = omega / kappa
        d = 1.0 + r
        return 1.0 / d, r / d
    if not ascending:
        return _ratios_numpy(kappa, omega)
    # kappa <= omega from j on
    j = int(np.searchsorted(omega, kappa, side="left")) if split is None else split
    r = np.empty(omega.shape)
    np.divide(omega[:j], kappa, out=r[:j])
    tail = r[j:]  # a view: where kappa <= omega
    np.divide(kappa, omega[j:], out=tail)
    d = 1.0 + r
    x = 1.0 / d  # kappa > omega: x = 1 / d, y = r / d; kappa <= omega: x = r / d, y = 1 / d
    y = np.divide(r, d, out=r)
    x_tail = x[j:]
    swap = x_tail.copy()
    x_tail[...] = tail
    tail[...] = swap
    return x, y


def _ratios_numpy(kappa, omega):
    kappa, omega = np.asarray(kappa, dtype=float), np.asarray(omega, dtype=float)
    shape = np.broadcast_shapes(kappa.shape, omega.shape)
    # the same numbers as the masked form below, without the masks where every pair is on one
    # side (kappa <= omega everywhere, or kappa > omega everywhere): the common case of a solve
    small = bool(kappa.size and omega.size and kappa.max() <= omega.min())
    if small or (kappa.size and omega.size and kappa.min() > omega.max()):
        r = kappa / omega if small else omega / kappa
        d = 1.0 + r
        near, far = r / d, 1.0 / d
        if near.shape != shape:
            near, far = np.broadcast_to(near, shape), np.broadcast_to(far, shape)
        return (near, far) if small else (far, near)
    small = kappa <= omega
    r = np.minimum(kappa, omega) / np.maximum(kappa, omega)
    d = 1.0 + r
    # x = near where small, far elsewhere (and y the other way): r / d or 1 / d, divided once
    return np.where(small, r, 1.0) / d, np.where(small, 1.0, r) / d


def _ratios_scalar(kappa, omega):
    if kappa <= omega:
        r = kappa / omega
        return r / (1 + r), 1 / (1 + r)
    r = omega / kappa
    return 1 / (1 + r), r / (1 + r)


@cache
def compiled_estimation(backend: str = "numpy") -> tuple[Callable, Callable]:
    """Summands of E |w_hat - w*|^2: of ``(omega, b, c, lam, V_hat, q_hat, m_hat)``, and of
    ``(omega, b, c, kappa, eg, alpha)``.

    The second (square loss, gaussian channel, from :func:`.potentials.estimation`) is evaluated
    in the ratios ``x = kappa/(kappa+omega)``, ``y = omega/(kappa+omega)`` like the reduced
    sums, so it is exact for every kappa in [0, inf] (kappa = inf: ``|w*|^2``).
    """
    general, reduced = _estimation_sources(backend)
    ratios = _ratios_numpy if backend == "numpy" else _ratios_scalar

    def summand(omega, b, c, kappa, eg, alpha):
        x, y = ratios(kappa, omega)
        return reduced(omega, b, c, x, y, eg, alpha)

    return general, summand


def _estimation_sources(backend: str) -> tuple[Callable, Callable]:
    _check_backend(backend)
    return _from_sources(backend, lambda sources: tuple(
        compiled_cache.load(s, backend) for s in sources["estimation"]))


@cache
def estimation_terms(backend: str = "numpy") -> Callable:
    """The reduced estimation-error summand of :func:`compiled_estimation` as a function of
    ``(omega, b, c, x, y, eg, alpha)``, the ratios given (:func:`ratios_at`)."""
    return _estimation_sources(backend)[1]
