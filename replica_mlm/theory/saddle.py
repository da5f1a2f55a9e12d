"""Solvers of the replica-symmetric saddle point (THEORY.md section 4).

Two methods, one answer:

``method="root"`` (default)
    The reduced system of :func:`.potentials.reduce`: one monotone scalar equation
    ``F(kappa) = kappa V_hat(kappa) - lam = 0`` in ``kappa = lam / V_hat``, bracketed on
    ``[0, (lam + mean omega) / alpha]`` and solved by Brent's method to machine precision;
    every other quantity is then a closed form of a few spectral sums. lam = 0 is solved
    exactly (see :func:`solve`).
``method="iterate"``
    Damped fixed-point iteration of the six raw saddle-point equations of
    :func:`.potentials.derive`, as in public replica codes: with ``x = (V, q, m)``,
    ``x_{t+1} = damping * x_t + (1 - damping) * F(x_t)`` where F computes the hats from x and
    then x from the hats. It stops when ``|dV| + |dq| + |dm| < tol``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import optimize

from replica_mlm import _checks
from replica_mlm.models.spectrum import Spectrum
from replica_mlm.theory import potentials as P
from replica_mlm.theory.compiled import compiled

METHODS = ("root", "iterate")


class ConvergenceError(RuntimeError):
    """The saddle-point solver did not converge.

    Attributes
    ----------
    last : dict
        The last iterate (order parameters by name).
    residual : float
        Residual at the last iterate.
    iterations : int
        Iterations (or function evaluations) spent.
    """

    def __init__(self, message: str, *, last: dict, residual: float, iterations: int) -> None:
        super().__init__(f"{message} (iterations={iterations}, residual={residual:.3g})")
        self.last = last
        self.residual = residual
        self.iterations = iterations


@dataclass(frozen=True)
class SaddlePoint:
    """Solution of the replica-symmetric saddle point at one (alpha, lam).

    Attributes
    ----------
    alpha, lam : float
        Sample ratio n/p and ridge strength (penalty (lam p / 2) |w|^2).
    eg : float
        Generalisation error rho + sigma^2 - 2m + q (no factor 1/2); ``inf`` at alpha = 1, lam = 0.
    train_loss : float
        Training loss |y - X w|^2 / n = eg / (1 + V)^2.
    m, q, V, m_hat, q_hat, V_hat : float
        Order parameters and their conjugates. At lam = 0 and alpha <= 1, V = inf and the
        hats vanish (the minimum-norm interpolator).
    rho, noise : float
        Teacher signal w*^T Sigma w* and label noise sigma^2 of the task.
    kappa : float
        lam / V_hat, the variable of the reduced scalar equation (nan for ``"iterate"``).
    converged : bool
        Always True on a returned object: failures raise :class:`ConvergenceError`.
    iterations : int
        Function evaluations of the scalar root (``"root"``) or fixed-point steps (``"iterate"``).
    residual : float
        Largest relative violation of the six raw saddle-point equations at the solution
        (for lam = 0, alpha <= 1, where V = inf, that of the scalar equation instead).
    method : str
        ``"root"`` or ``"iterate"``.
    message : str
        How the solution was obtained.
    """

    alpha: float
    lam: float
    eg: float
    train_loss: float
    m: float
    q: float
    V: float
    m_hat: float
    q_hat: float
    V_hat: float
    rho: float
    noise: float
    kappa: float
    converged: bool
    iterations: int
    residual: float
    method: str
    message: str

    def as_dict(self) -> dict:
        """The fields as a plain dict."""
        return asdict(self)


def spectrum_of(task) -> Spectrum:
    """The :class:`Spectrum` of a task (a MaskedSite, a thermodynamic limit or a Spectrum)."""
    spec = getattr(task, "spectrum", None)
    if not isinstance(spec, Spectrum):
        raise ValueError(
            "task must be a MaskedSite, a GaussianPotts limit or a Spectrum (anything with a "
            f"`.spectrum` attribute), got {type(task).__name__}"
        )
    return spec


def solve(task, *, alpha: float, lam: float, method: str = "root", **options) -> SaddlePoint:
    """Solve the saddle-point equations of ridge MLM at sample ratio ``alpha`` and ridge ``lam``.

    Parameters
    ----------
    task : MaskedSite, limit or Spectrum
        The learning task; only its spectrum (eigenvalues of Sigma, teacher weights, noise)
        enters.
    alpha : float
        n / p, > 0.
    lam : float
        Ridge strength >= 0 (penalty (lam p / 2) |w|^2). lam = 0 is the Moore-Penrose
        (minimum-norm / least-squares) limit, solved exactly: for alpha < 1 kappa solves
        ``V_hat(kappa) = 0`` (THEORY.md section 5), for alpha > 1 kappa = 0, and at alpha = 1
        the interpolation peak gives eg = inf, q = inf, V = inf, vanishing hats, m = rho and a
        vanishing train loss (returned without warnings).
    method : {"root", "iterate"}
        See the module docstring.
    **options
        For ``"iterate"``: ``damping`` (0.5), ``tol`` (1e-12), ``max_iter`` (100000) and
        ``init`` ((V, q, m) = (1000, 1e-3, 1e-3)). ``"root"`` takes none.

    Returns
    -------
    SaddlePoint

    Raises
    ------
    ValueError
        For alpha <= 0, lam < 0, non-finite input or an unknown method.
    ConvergenceError
        If the solver does not converge.
    """
    spec = spectrum_of(task)
    alpha = _checks.positive(alpha, "alpha")
    lam = _checks.nonnegative(lam, "lam")
    if method == "root":
        if options:
            raise ValueError(f"method 'root' takes no options, got {sorted(options)}")
        return _solve_root(spec, alpha, lam)
    if method == "iterate":
        return _solve_iterate(spec, alpha, lam, **options)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


# --- the reduced scalar equation -----------------------------------------------------------


def _sum(name: str, spec: Spectrum, kappa: float) -> float:
    return float(np.sum(compiled().sums[name](spec.omega, spec.bulk, spec.teacher, kappa)))


def _brent(f, hi: float) -> tuple[float, int]:
    """Root of an increasing f on [0, hi] with f(0) <= 0 <= f(hi), to machine precision."""
    kappa, info = optimize.brentq(
        f, 0.0, hi, xtol=np.finfo(float).tiny, rtol=4 * np.finfo(float).eps, maxiter=500,
        full_output=True, disp=False,
    )
    if not info.converged:
        raise ConvergenceError(
            f"Brent's method did not converge: {info.flag}",
            last={"kappa": kappa}, residual=abs(f(kappa)), iterations=info.function_calls,
        )
    return kappa, info.function_calls


def _solve_root(spec: Spectrum, alpha: float, lam: float) -> SaddlePoint:
    fns = compiled()
    if lam == 0.0 and alpha == 1.0:
        return _interpolation_peak(spec)

    def v_hat_of(kappa: float) -> float:
        return fns.v_hat_of_kappa(_sum("S_1c", spec, kappa), alpha)

    if lam > 0.0:
        kappa, calls = _brent(
            lambda k: fns.root(k, _sum("S_1c", spec, k), alpha, lam),
            (lam + spec.mean_omega) / alpha,
        )
        message = "Brent's method on the reduced scalar equation"
        v_hat = fns.v_hat_from_root(kappa, lam)
    elif alpha > 1.0:
        kappa, calls = 0.0, 0
        v_hat = v_hat_of(0.0)
        message = "lam = 0, alpha > 1: least squares, kappa = 0 exactly"
    else:
        kappa, calls = _brent(v_hat_of, spec.mean_omega / alpha)
        v_hat = 0.0
        message = "lam = 0, alpha < 1: minimum-norm limit, V_hat(kappa) = 0 by Brent's method"

    sums = [_sum(str(name), spec, kappa) for name in P.SUMS]
    args = (alpha, kappa, spec.noise, np.float64(v_hat), *sums)
    with np.errstate(divide="ignore"):  # V = (1 - S_1c) / V_hat = inf at lam = 0, alpha < 1
        out = {name: float(f(*args)) for name, f in fns.values.items()}
    out["V_hat"] = out["m_hat"] = v_hat  # m_hat = V_hat: step 1 of potentials.reduce
    if lam == 0.0 and alpha < 1.0:
        residual = abs(v_hat_of(kappa)) / alpha
    else:
        residual = _raw_residual(spec, alpha, lam, out)
    return _result(spec, alpha, lam, out, kappa=kappa, iterations=calls, residual=residual,
                   method="root", message=message)


def _interpolation_peak(spec: Spectrum) -> SaddlePoint:
    """alpha = 1, lam = 0: the exact limit of the saddle point (the interpolation peak)."""
    out = dict(eg=math.inf, train_loss=0.0, m=spec.rho, q=math.inf, V=math.inf,
               m_hat=0.0, q_hat=0.0, V_hat=0.0)
    return _result(spec, 1.0, 0.0, out, kappa=0.0, iterations=0, residual=0.0, method="root",
                   message="alpha = 1, lam = 0: interpolation peak, eg = inf exactly")


def _raw_residual(spec: Spectrum, alpha: float, lam: float, x: dict) -> float:
    """Largest relative violation of the six raw saddle-point equations at ``x``."""
    fns = compiled()
    hat_args = (alpha, x["V"], x["q"], x["m"], spec.rho, spec.noise)
    mode_args = (spec.omega, spec.bulk, spec.teacher, lam, x["V_hat"], x["q_hat"], x["m_hat"])
    worst = 0.0
    for name, f in fns.hat.items():
        worst = max(worst, _rel(x[name], f(*hat_args)))
    for name, f in fns.mode.items():
        worst = max(worst, _rel(x[name], float(np.sum(f(*mode_args)))))
    return worst


def _rel(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0.0 else abs(a - b) / scale


def _result(spec, alpha, lam, out, **info) -> SaddlePoint:
    return SaddlePoint(
        alpha=alpha, lam=lam, rho=spec.rho, noise=spec.noise, converged=True,
        **{k: float(out[k]) for k in ("eg", "train_loss", "m", "q", "V", "m_hat", "q_hat", "V_hat")},
        **info,
    )


# --- damped fixed-point iteration ----------------------------------------------------------


def _solve_iterate(
    spec: Spectrum,
    alpha: float,
    lam: float,
    *,
    damping: float = 0.5,
    tol: float = 1e-12,
    max_iter: int = 100_000,
    init: tuple[float, float, float] = (1000.0, 1e-3, 1e-3),
) -> SaddlePoint:
    damping = _checks.nonnegative(damping, "damping")
    if damping >= 1:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    tol = _checks.positive(tol, "tol")
    max_iter = _checks.positive_int(max_iter, "max_iter")
    if len(init) != 3:
        raise ValueError(f"init must be (V, q, m), got {init!r}")
    x = {name: _checks.as_scalar(v, f"init {name}") for name, v in zip("Vqm", init, strict=True)}
    fns = compiled()
    delta, it = math.inf, 0
    try:
        for it in range(1, max_iter + 1):
            new = _sweep(spec, alpha, lam, x)
            new = {k: damping * x[k] + (1 - damping) * new[k] for k in x}
            delta = sum(abs(new[k] - x[k]) for k in x)
            x = new
            if not math.isfinite(delta):
                break
            if delta < tol:
                hat_args = (alpha, x["V"], x["q"], x["m"], spec.rho, spec.noise)
                out = {name: f(*hat_args) for name, f in fns.hat.items()}
                out.update(x, eg=fns.eg(*hat_args), train_loss=fns.train_loss(*hat_args))
                return _result(
                    spec, alpha, lam, out, kappa=math.nan, iterations=it,
                    residual=_raw_residual(spec, alpha, lam, out), method="iterate",
                    message=f"damped iteration (damping={damping}) reached "
                    f"|dV|+|dq|+|dm| < {tol:g}",
                )
        reason = "did not converge" if math.isfinite(delta) else "diverged"
    except (OverflowError, ZeroDivisionError):
        reason, delta = "diverged (overflow)", math.inf
    raise ConvergenceError(
        f"damped iteration {reason} at alpha={alpha}, lam={lam}",
        last=x, residual=delta, iterations=it,
    )


def _sweep(spec: Spectrum, alpha: float, lam: float, x: dict) -> dict:
    """One undamped pass of the raw equations: hats from (V, q, m), then (V, q, m) from hats."""
    fns = compiled()
    hat_args = (alpha, x["V"], x["q"], x["m"], spec.rho, spec.noise)
    hats = [fns.hat[name](*hat_args) for name in ("V_hat", "q_hat", "m_hat")]
    mode_args = (spec.omega, spec.bulk, spec.teacher, lam, *hats)
    return {name: float(np.sum(fns.mode[name](*mode_args))) for name in ("V", "q", "m")}
