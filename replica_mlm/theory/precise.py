"""The reduced saddle point at arbitrary precision: the same sympy equations, lambdified for mpmath.

Used by ``solve(..., precision=digits)`` for near-singular points (alpha near 1, lam -> 0) and for
checking asymptotic expansions at 30-100 digits. The algorithm is that of :mod:`.root` (Newton's
method on the convex equation G(kappa) = 0 from a point left of the root), run on mpmath numbers
with 10 guard digits; finite spectra are taken as exact (their float64 eigenvalues promoted), the
thermodynamic limit supplies its quadrature at the requested precision.
"""

from __future__ import annotations

import mpmath

from replica_mlm.models.spectrum import Spectrum
from replica_mlm.theory import potentials as P
from replica_mlm.theory.compiled import compiled, compiled_estimation, compiled_sums

GUARD = 10


class PrecisionFailure(ArithmeticError):
    """Newton's method did not reach the requested digits (turned into ConvergenceError by solve)."""

    def __init__(self, message: str, *, kappa, step, iterations: int) -> None:
        super().__init__(message)
        self.kappa, self.step, self.iterations = kappa, step, iterations


class PreciseSpectrum:
    """Modes, weights and noise as mpmath numbers; bulk weights renormalised to sum to one."""

    def __init__(self, omega, bulk, teacher, noise) -> None:
        self.omega = [mpmath.mpf(w) for w in omega]
        total = mpmath.fsum(mpmath.mpf(x) for x in bulk)
        self.bulk = [mpmath.mpf(x) / total for x in bulk]
        self.teacher = [mpmath.mpf(x) for x in teacher]
        self.noise = mpmath.mpf(noise)
        self.rho = mpmath.fsum(c * w for c, w in zip(self.teacher, self.omega, strict=True))

    def sums(self, names, kappa) -> dict:
        fn = compiled_sums(tuple(names), "mpmath")
        totals = [mpmath.mpf(0)] * len(names)
        for w, b, c in zip(self.omega, self.bulk, self.teacher, strict=True):
            totals = [t + v for t, v in zip(totals, fn(w, b, c, kappa), strict=True)]
        return dict(zip(names, totals, strict=True))

    def moment(self, weights: str, k: int):
        """``sum_j weight_j omega_j^k`` for ``weights`` in {"bulk", "teacher"}."""
        ws = self.bulk if weights == "bulk" else self.teacher
        return mpmath.fsum(x * w**k for x, w in zip(ws, self.omega, strict=True))


def precise_spectrum(task, spec: Spectrum, dps: int) -> PreciseSpectrum:
    """The task's spectrum at ``dps`` digits: the limit's own quadrature, or the float one promoted."""
    make = getattr(task, "mp_spectrum", None)
    if make is not None:
        return PreciseSpectrum(*make(dps))
    return PreciseSpectrum(spec.omega.tolist(), spec.bulk.tolist(), spec.teacher.tolist(), spec.noise)


def solve_precise(task, spec: Spectrum, alpha: float, lam: float, dps: int,
                  max_iter: int = 2000) -> dict:
    """Saddle point at ``dps`` significant digits. Returns mpmath numbers keyed like :mod:`.root`."""
    fns = compiled("mpmath")
    with mpmath.workdps(dps + GUARD):
        ps = precise_spectrum(task, spec, dps)
        a, lm = mpmath.mpf(alpha), mpmath.mpf(lam)
        one = mpmath.mpf(1)
        tol = mpmath.mpf(10) ** (-(dps + GUARD // 2))
        iterations = 0
        if lm == 0 and a == 1:
            out = dict(eg=mpmath.inf, train_loss=mpmath.mpf(0), m=ps.rho, q=mpmath.inf, V=mpmath.inf,
                       m_hat=mpmath.mpf(0), q_hat=mpmath.mpf(0), V_hat=mpmath.mpf(0),
                       kappa=mpmath.mpf(0), iterations=0, residual=mpmath.mpf(0),
                       test_loss=mpmath.inf, estimation_error=mpmath.inf)
            return out
        if lm == 0 and a > 1:
            kappa = mpmath.mpf(0)
        else:
            inv_mean = ps.moment("bulk", -1)
            kappa = max(lm / a, max(one - a, 0) / inv_mean)  # G(kappa) >= 0 here: left of the root
            for iterations in range(1, max_iter + 1):  # noqa: B007 - reported below
                s = ps.sums(["S_1c", "S_1c'"], kappa)
                step = -fns.newton(kappa, s["S_1c"], one - a, lm) / fns.newton_slope(kappa, s["S_1c'"], lm)
                kappa = kappa + step if kappa + step > 0 else kappa / 2
                if abs(step) <= tol * kappa:
                    break
            else:
                raise PrecisionFailure(f"Newton's method did not reach {dps} digits in {max_iter} steps",
                                       kappa=kappa, step=abs(step / kappa), iterations=max_iter)
        names = [str(x) for x in P.SUMS]
        sums = ps.sums(names, kappa)
        if lm > 0:
            v_hat = fns.v_hat_from_root(kappa, lm)
        else:
            v_hat = fns.v_hat_of_kappa(sums["S_1c"], one - a) if a > 1 else mpmath.mpf(0)
        args = (a, one - a, kappa, ps.noise, v_hat, *(sums[n] for n in names))
        out = {}
        for name, f in fns.values.items():
            out[name] = mpmath.inf if (name == "V" and v_hat == 0) else f(*args)
        out.update(V_hat=v_hat, m_hat=v_hat, kappa=kappa, iterations=iterations)
        out["test_loss"] = out["eg"] / 2
        est = compiled_estimation("mpmath")[1]
        out["estimation_error"] = mpmath.fsum(
            est(w, b, c, kappa, out["eg"], a) for w, b, c in zip(ps.omega, ps.bulk, ps.teacher, strict=True))
        out["residual"] = _residual(ps, a, lm, out, sums)
        return {k: (+v if isinstance(v, mpmath.mpf) else v) for k, v in out.items()}


def _residual(ps: PreciseSpectrum, a, lm, x: dict, sums: dict):
    """Largest relative violation of the six raw equations (of the V_hat equation if V = inf)."""
    fns = compiled("mpmath")
    if x["V"] == mpmath.inf:
        return abs(fns.v_hat_of_kappa(sums["S_1c"], 1 - a)) / a
    hat_args = (a, x["V"], x["q"], x["m"], ps.rho, ps.noise)
    worst = mpmath.mpf(0)
    for name, f in fns.hat.items():
        worst = max(worst, _rel(x[name], f(*hat_args)))
    totals = {"V": [], "q": [], "m": []}
    for w, b, c in zip(ps.omega, ps.bulk, ps.teacher, strict=True):
        for name in totals:
            totals[name].append(fns.mode[name](w, b, c, lm, x["V_hat"], x["q_hat"], x["m_hat"]))
    for name, terms in totals.items():
        worst = max(worst, _rel(x[name], mpmath.fsum(terms)))
    return worst


def _rel(a, b):
    scale = max(abs(a), abs(b))
    return mpmath.mpf(0) if scale == 0 else abs(a - b) / scale
