"""Empirical risk minimisation on Gaussian covariates for any convex loss and label channel.

The estimator (docs/theory.md, section 'Separability and ERM simulations')

    w_hat = argmin_w  sum_mu loss(y_mu, w . x_mu) + (lam p / 2) |w|^2     (no intercept)

is computed by an exact convex solver for each loss, and every solution carries a certificate:
``kkt_residual`` is a rigorous upper bound on the Euclidean distance |w_hat - w_exact| from the
lam p-strong convexity of the objective,

* smooth losses (square, Huber, logistic): |grad F(w_hat)| / (lam p);
* non-smooth losses (hinge, absolute): sqrt(2 gap / (lam p)), gap = primal - dual objective at
  w_hat = X^T a / (lam p) and its dual point a.

Solvers: square loss by one Gram matrix for every lam
(:func:`~replica_mlm.learners.simulate.ridge_path`); logistic
by scikit-learn's ``LogisticRegression(C = 1 / (lam p), fit_intercept=False)`` (sklearn minimises
``C sum loss + |w|^2 / 2``, the same objective divided by lam p); Huber by a semi-smooth Newton
method (the objective is piecewise quadratic, so Newton terminates exactly); hinge and absolute by
their dual box-constrained quadratic programmes

    max_a  sum_mu a_mu y_mu - |X^T a|^2 / (2 lam p),
    a_mu y_mu in [0, 1] (hinge), a_mu in [-1, 1] (absolute),

solved by L-BFGS-B and then exactly on the partition of the samples (on the kink, or
on either side of it) that the approximate solution identifies (scikit-learn's ``LinearSVC`` was
tried for the hinge loss: at C = 1 / (lam p) with lam = 1e-3, p = 300 liblinear needed ~40 s per fit
and still left a certified error ~1e-4). Test quantities are computed exactly
from the overlaps m = w*^T Sigma w_hat, q = w_hat^T Sigma w_hat, rho = w*^T Sigma w*, without a test
sample (:func:`test_quantities`).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
from scipy import integrate, optimize, special

#: label channels: Gaussian noise, sign of the noisy teacher field, logistic (no extra noise)
CHANNELS = ("gaussian", "sign", "logit")
#: losses with a default instance known by name
LOSSES = ("square", "absolute", "huber", "logistic", "hinge")

_QUAD = {"epsabs": 1e-13, "epsrel": 1e-12, "limit": 400}
_GH_NODES = 80


# --- loss and channel names ----------------------------------------------------------------


def loss_spec(loss) -> tuple[str, float]:
    """(name, huber delta) of a loss given by name or as an object with a ``name`` (and ``delta``)."""
    if isinstance(loss, str):
        name, delta = loss.lower(), 1.0
    else:
        name = getattr(loss, "name", None)
        if not isinstance(name, str):
            raise ValueError(f"loss must be one of {LOSSES} or a loss object of rm.losses, got {loss!r}")
        name, delta = name.lower(), float(getattr(loss, "delta", 1.0))
        if name.startswith("huber"):  # rm.losses.Huber(delta) is named "huber(delta=...)"
            name = "huber"
    if name not in LOSSES:
        raise ValueError(f"ERM simulations support the losses {LOSSES}, got {loss!r}")
    if name == "huber" and not (math.isfinite(delta) and delta > 0):
        raise ValueError(f"Huber delta must be finite and > 0, got {delta}")
    return name, delta


def check_channel(channel, loss_name: str) -> str:
    """A known channel compatible with the loss (:func:`replica_mlm.theory.sides.channels.check_pair`),
    or ValueError."""
    if not isinstance(channel, str) or channel not in CHANNELS:
        raise ValueError(f"channel must be one of {CHANNELS}, got {channel!r}")
    from replica_mlm.theory.sides import channels, losses
    # the theory layer's one rule on loss/channel pairs (the named losses: no sympy)
    channels.check_pair(losses.resolve(loss_name), channels.resolve(channel))
    return channel


def labels(nu: np.ndarray, noisy: np.ndarray, channel: str, gen: np.random.Generator) -> np.ndarray:
    """Labels from the teacher field nu: gaussian -> ``noisy`` = nu + sigma eps; sign -> its sign;
    logit -> +1 with probability 1 / (1 + exp(-nu)) (one uniform draw per sample from ``gen``)."""
    if channel == "gaussian":
        return noisy
    if channel == "sign":
        return np.where(noisy >= 0, 1.0, -1.0)
    return np.where(gen.random(nu.shape) < special.expit(nu), 1.0, -1.0)


# --- pointwise losses ------------------------------------------------------------------------


def pointwise(name: str, delta: float, y, z) -> np.ndarray:
    """loss(y, z) elementwise (square is (y - z)^2 / 2)."""
    y, z = np.asarray(y, dtype=float), np.asarray(z, dtype=float)
    if name == "square":
        return 0.5 * (y - z) ** 2
    if name == "absolute":
        return np.abs(y - z)
    if name == "huber":
        r = np.abs(y - z)
        return np.where(r <= delta, 0.5 * r * r, delta * r - 0.5 * delta * delta)
    if name == "logistic":
        return np.logaddexp(0.0, -y * z)
    return np.maximum(0.0, 1.0 - y * z)


def _kinks(name: str, delta: float) -> tuple[float, ...]:
    """Points in z where loss(+1, z) or loss(-1, z) is not smooth (breakpoints for quadrature)."""
    if name == "hinge":
        return (-1.0, 1.0)
    if name == "absolute":
        return (-1.0, 1.0)
    if name == "huber":
        return (-1.0 - delta, -1.0 + delta, 1.0 - delta, 1.0 + delta)
    return ()


# --- solvers ---------------------------------------------------------------------------------


def fit(x: np.ndarray, y: np.ndarray, lam: np.ndarray, name: str, delta: float
        ) -> tuple[np.ndarray, np.ndarray]:
    """Minimisers for every lam (> 0, warm-started in increasing order) and their certificates.

    Returns ``(w, bound)`` of shapes (p, k) and (k,): ``bound[j]`` >= |w[:, j] - w_exact(lam_j)|.
    """
    _n, p = x.shape
    w = np.zeros((p, lam.size))
    bound = np.empty(lam.size)
    start = np.zeros(p)
    for j in np.argsort(lam):
        lp = float(lam[j]) * p
        if name == "logistic":
            wj = _fit_logistic(x, y, lp, start)
        elif name == "huber":
            wj = _fit_huber(x, y, lp, delta, start)
        else:
            wj, bound[j] = _fit_dual_box(x, y, lp, name, start)
        if name in ("logistic", "huber"):
            bound[j] = np.linalg.norm(gradient(x, y, wj, lp, name, delta)) / lp
        w[:, j] = wj
        start = wj
    return w, bound


def primal(x, y, w, lp: float, name: str, delta: float) -> float:
    """sum_mu loss(y_mu, w . x_mu) + (lp / 2) |w|^2."""
    return float(np.sum(pointwise(name, delta, y, x @ w)) + 0.5 * lp * (w @ w))


def dual(x, y, a, lp: float) -> float:
    """Dual objective of the hinge and absolute losses, sum a y - |X^T a|^2 / (2 lp) (a feasible)."""
    v = x.T @ a
    return float(a @ y - 0.5 * (v @ v) / lp)


def gradient(x, y, w, lp: float, name: str, delta: float) -> np.ndarray:
    """Gradient of the primal objective for the smooth losses."""
    z = x @ w
    if name == "logistic":
        dz = -y * special.expit(-y * z)
    elif name == "huber":
        dz = -np.clip(y - z, -delta, delta)
    else:  # square
        dz = z - y
    return x.T @ dz + lp * w


def _box(y, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of the dual variables: a y in [0, 1] (hinge), a in [-1, 1] (absolute)."""
    if name == "hinge":
        return np.where(y > 0, 0.0, -1.0), np.where(y > 0, 1.0, 0.0)
    return -np.ones(y.size), np.ones(y.size)


def gap_bound(x, y, w, lp: float, name: str, tol: float = 1e-7) -> float:
    """sqrt(2 (P(w) - D(a)) / lp) >= |w - w_exact| for the hinge and absolute losses.

    The dual point a is read off the KKT conditions at w: a_mu is at its bound where the loss is
    differentiable at x_mu . w, and on the kink set (|kink - x_mu . w| <= tol) it is the bounded
    least-squares fit of ``lp w = X^T a`` (scipy ``lsq_linear``). Any feasible a gives a valid bound.
    """
    from scipy.optimize import lsq_linear

    lo, hi = _box(y, name)
    z = x @ w
    if name == "hinge":
        dist = 1.0 - y * z  # > 0: loss active, a = y; < 0: a = 0
        a = np.where(dist > 0, y, 0.0)
    else:
        dist = y - z  # a = sign(y - z)
        a = np.sign(dist)
    kink = np.abs(dist) <= tol * max(1.0, float(np.max(np.abs(z))))
    if kink.any():
        target = lp * w - x[~kink].T @ a[~kink]
        fitted = lsq_linear(x[kink].T, target, bounds=(lo[kink], hi[kink]), method="bvls",
                            tol=1e-15, lsmr_tol=None)
        a[kink] = np.clip(fitted.x, lo[kink], hi[kink])
    gap = primal(x, y, w, lp, name, 1.0) - dual(x, y, a, lp)
    return math.sqrt(2.0 * max(gap, 0.0) / lp)


def _fit_logistic(x, y, lp: float, start: np.ndarray) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    if np.unique(y).size < 2:
        raise ValueError("every training label has the same sign: use more samples")
    clf = LogisticRegression(C=1.0 / lp, fit_intercept=False, tol=1e-12, max_iter=10_000,
                             solver="newton-cholesky")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning is a failure, not a footnote
        clf.fit(x, y)
    # sklearn codes the classes in sorted order (-1, +1): coef_ is the weight of class +1
    return clf.coef_[0].astype(float)


def _fit_huber(x, y, lp: float, delta: float, start: np.ndarray, max_iter: int = 200) -> np.ndarray:
    """Semi-smooth Newton with backtracking. The objective is quadratic on each set of samples
    with |residual| <= delta, so a full step that keeps that set unchanged lands on the minimiser."""
    w = start.copy()
    f = primal(x, y, w, lp, "huber", delta)
    for _ in range(max_iter):
        g = gradient(x, y, w, lp, "huber", delta)
        inside = np.abs(y - x @ w) <= delta
        xa = x[inside]
        step = -np.linalg.solve(xa.T @ xa + lp * np.eye(x.shape[1]), g)
        t = 1.0
        while True:
            cand = w + t * step
            fc = primal(x, y, cand, lp, "huber", delta)
            if fc <= f + 1e-4 * t * (g @ step) or t < 1e-12:
                break
            t *= 0.5
        same_set = np.array_equal(np.abs(y - x @ cand) <= delta, inside)
        w, f = cand, fc
        if t == 1.0 and same_set:
            # one more exact Newton step on the (unchanged) quadratic piece removes rounding
            g = gradient(x, y, w, lp, "huber", delta)
            return w - np.linalg.solve(xa.T @ xa + lp * np.eye(x.shape[1]), g)
    return w


def _fit_dual_box(x, y, lp: float, name: str, start: np.ndarray) -> tuple[np.ndarray, float]:
    """Hinge / absolute: the dual box QP by L-BFGS-B, then an exact solve on the identified
    partition of the samples (:func:`_partition_solve`); returns (w, certified bound)."""
    lo, hi = _box(y, name)

    def fun(a):
        v = x.T @ a
        return 0.5 * (v @ v) / lp - a @ y, x @ v / lp - y

    a0 = _kkt_dual(x, y, start, name, lo, hi)  # warm start: the dual point of the previous solution
    res = optimize.minimize(fun, a0, jac=True, method="L-BFGS-B", bounds=np.c_[lo, hi],
                            options={"maxiter": 50_000, "maxfun": 100_000, "ftol": 1e-16,
                                     "gtol": 1e-13, "maxcor": 30})
    w = x.T @ np.clip(res.x, lo, hi) / lp
    best = (gap_bound(x, y, w, lp, name), w)
    for tol in (1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
        cand = _partition_solve(x, y, best[1], lp, name, tol, lo, hi)
        if cand is not None:
            bound = gap_bound(x, y, cand, lp, name)
            if bound < best[0]:
                best = (bound, cand)
    return best[1], best[0]


def _kkt_dual(x, y, w, name, lo, hi) -> np.ndarray:
    z = x @ w
    if name == "hinge":
        return np.clip(np.where(y * z < 1, y, 0.0), lo, hi)
    return np.clip(np.sign(y - z), lo, hi)


def _partition_solve(x, y, w, lp, name, tol, lo, hi):
    """Exact minimiser if the partition read off w is right.

    Samples on the kink (hinge: y z = 1, absolute: z = y; within ``tol``) form the set M, the
    others have their dual variable at the bound given by the side of the kink they are on. Then
    ``lp w = X^T a`` and ``X_M w = y_M`` give ``X_M X_M^T a_M = lp y_M - X_M X_R^T a_R``.
    """
    z = x @ w
    dist = (1.0 - y * z) if name == "hinge" else (y - z)
    margin = np.abs(dist) <= tol
    if name == "hinge":
        a = np.where(dist > 0, y, 0.0)
    else:
        a = np.sign(dist)
    if margin.any():
        xm = x[margin]
        rhs = lp * y[margin] - xm @ (x[~margin].T @ a[~margin])
        sol, *_ = np.linalg.lstsq(xm @ xm.T, rhs, rcond=None)
        a[margin] = np.clip(sol, lo[margin], hi[margin])
    return x.T @ a / lp


# --- exact test quantities from the overlaps ---------------------------------------------------


def positive_probability(channel: str, noise: float):
    """nu -> P_out(+1 | nu) for the binary channels."""
    if channel == "sign":
        if noise == 0.0:
            return lambda nu: np.where(nu > 0, 1.0, np.where(nu < 0, 0.0, 0.5))
        s = math.sqrt(noise)
        return lambda nu: special.ndtr(nu / s)
    return special.expit


def _gh(nodes: int):
    z, wt = np.polynomial.hermite_e.hermegauss(nodes)
    return z, wt / math.sqrt(2.0 * math.pi)


def test_quantities(m: float, q: float, rho: float, noise: float, name: str, delta: float,
                    channel: str, *, nodes: int = _GH_NODES) -> tuple[float, float]:
    """(eg, test_loss) of an estimator with overlaps (m, q) on a fresh sample, computed exactly.

    The fields (nu, lambda) = (w* . x, w_hat . x) are jointly Gaussian with Var nu = rho,
    Var lambda = q, Cov = m. eg: gaussian ``rho + sigma^2 - 2m + q``; sign
    ``arccos(m / sqrt(q (rho + sigma^2))) / pi``; logit ``2 E[sigmoid(-nu) Phi(c nu)]``,
    c = m / (rho sqrt(q - m^2 / rho)), by adaptive quadrature. test_loss = E loss(y, lambda):
    gaussian channel, a 1-d integral over the residual y - lambda ~ N(0, eg); binary channels,
    a 1-d adaptive integral over lambda (split at the loss's kinks) of
    ``P(+1 | lambda) loss(+1, lambda) + P(-1 | lambda) loss(-1, lambda)``, where
    P(+1 | lambda) is ``Phi(m lambda / q / sqrt(rho - m^2/q + sigma^2))`` (sign) or a
    Gauss-Hermite average of the sigmoid over nu | lambda (logit, ``nodes`` nodes).
    """
    if q <= 0.0:  # w_hat = 0: lambda = 0 surely
        if channel == "gaussian":
            eg = rho + noise
            return eg, _residual_loss(eg, name, delta)
        return 0.5, float(0.5 * (pointwise(name, delta, 1.0, 0.0) + pointwise(name, delta, -1.0, 0.0)))
    if channel == "gaussian":
        eg = rho + noise - 2.0 * m + q
        return eg, _residual_loss(eg, name, delta)
    cond_var = max(rho - m * m / q, 0.0)  # Var(nu | lambda)
    slope = m / q  # E[nu | lambda] = slope * lambda
    if channel == "sign":
        eg = math.acos(max(-1.0, min(1.0, m / math.sqrt(q * (rho + noise))))) / math.pi
        spread = math.sqrt(cond_var + noise)

        def p_plus(lam_):
            return special.ndtr(slope * lam_ / spread) if spread > 0 else float(lam_ * slope > 0)
    else:
        eg = _logit_error(m, q, rho)
        z, wt = _gh(nodes)
        sd = math.sqrt(cond_var)

        def p_plus(lam_):
            return float(wt @ special.expit(slope * lam_ + sd * z))
    sq = math.sqrt(q)

    def integrand(lam_):
        pp = p_plus(lam_)
        mix = pp * pointwise(name, delta, 1.0, lam_) + (1.0 - pp) * pointwise(name, delta, -1.0, lam_)
        return float(mix) * math.exp(-0.5 * lam_ * lam_ / q) / (sq * math.sqrt(2 * math.pi))

    return eg, _line_integral(integrand, _kinks(name, delta), scale=sq)


def _line_integral(fn, kinks, *, scale: float) -> float:
    """int_R fn, split at the kinks (and 0), over a Gaussian of standard deviation ``scale``."""
    cut = 40.0 * scale
    pts = sorted({0.0, *[k for k in kinks if -cut < k < cut]})
    edges = [-cut, *pts, cut]
    total = 0.0
    for lo, hi in itertools.pairwise(edges):
        val, _ = integrate.quad(fn, lo, hi, **_QUAD)
        total += val
    return total


def _residual_loss(var: float, name: str, delta: float) -> float:
    """E loss(r) for a residual r = y - lambda ~ N(0, var) (regression losses, gaussian channel)."""
    if name == "square":
        return 0.5 * var
    s = math.sqrt(var)
    if name == "absolute":
        return s * math.sqrt(2.0 / math.pi)
    # Huber: E[r^2/2; |r|<=d] + E[d|r| - d^2/2; |r|>d], in closed form with u = d / s
    u = delta / s
    phi_u = math.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)
    tail = special.ndtr(-u)
    inner = 0.5 * var * (1.0 - 2.0 * tail - 2.0 * u * phi_u)
    outer = 2.0 * (delta * s * phi_u) - delta * delta * tail
    return float(inner + outer)


def _logit_error(m: float, q: float, rho: float) -> float:
    """P(y != sign(lambda)) for the logit channel: 2 E_nu[sigmoid(-nu) P(lambda > 0 | nu)]."""
    if rho == 0.0:
        return 0.5
    cond = q - m * m / rho  # Var(lambda | nu)
    sr = math.sqrt(rho)
    if cond <= 0.0:
        def fn(v):
            return (special.expit(-sr * v) * (1.0 if m * v > 0 else 0.0))
    else:
        c = m / rho / math.sqrt(cond)

        def fn(v):
            return special.expit(-sr * v) * special.ndtr(c * sr * v)

    total = 0.0
    for lo, hi in ((-math.inf, 0.0), (0.0, math.inf)):
        val, _ = integrate.quad(lambda v: fn(v) * math.exp(-0.5 * v * v) / math.sqrt(2 * math.pi), lo, hi,
                                **_QUAD)
        total += val
    return 2.0 * total
