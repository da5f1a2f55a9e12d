"""Empirical risk minimisation on Gaussian covariates for any convex loss and label channel.

The estimator (docs/theory.md, section 'Separability and ERM simulations')

    w_hat = argmin_w  sum_mu loss(y_mu, w . x_mu) + (lam p / 2) |w|^2     (no intercept)

is computed by an exact convex solver for each loss, and every solution carries a certificate:
``kkt_residual`` is a rigorous upper bound on the Euclidean distance |w_hat - w_exact| from the
lam p-strong convexity of the objective,

* smooth losses (square, Huber, logistic): |grad F(w_hat)| / (lam p);
* non-smooth losses (hinge, absolute): sqrt(2 gap / (lam p)), gap = primal - dual objective at
  w_hat = X^T a / (lam p) and its dual point a.

The loss and the channel are the theory's own objects (:class:`replica_mlm.theory.sides.losses.Loss`,
:class:`replica_mlm.theory.sides.channels.Channel`, resolved from names by their ``resolve``);
the labels are drawn by the channel itself (:meth:`Channel.sample
<replica_mlm.theory.sides.channels.Channel.sample>`), so any channel the theory solves is simulated.
A loss without a specialised solver (e.g. :meth:`Loss.from_sympy`) is fitted by the generic
solver :func:`fit_generic`: damped Newton with the loss's sympy derivatives ``loss'`` and
``loss''``, certified by |grad F| / (lam p) (it needs a loss differentiable in z).

Solvers: square loss by one Gram matrix for every lam
(:func:`~replica_mlm.learners.ridge_path.ridge_path`); logistic
by the learners' one logistic fitter (:func:`replica_mlm.learners.logistic.fit_binary`, Newton's
method with backtracking); Huber by a semi-smooth Newton
method (the objective is piecewise quadratic, so Newton terminates exactly); hinge and absolute by
their dual box-constrained quadratic programmes

    max_a  sum_mu a_mu y_mu - |X^T a|^2 / (2 lam p),
    a_mu y_mu in [0, 1] (hinge), a_mu in [-1, 1] (absolute),

solved by L-BFGS-B and then exactly on the partition of the samples (on the kink, or
on either side of it) that the approximate solution identifies (scikit-learn's ``LinearSVC`` was
tried for the hinge loss: at C = 1 / (lam p) with lam = 1e-3, p = 300 liblinear needed ~40 s per fit
and still left a certified error ~1e-4). Test quantities are computed exactly
from the overlaps m = w*^T Sigma w_hat, q = w_hat^T Sigma w_hat, rho = w*^T Sigma w*, without a test
sample (:func:`test_quantities`, the theory's own integrals of
:mod:`replica_mlm.theory.sides.energetic`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from replica_mlm.learners import logistic
from replica_mlm.theory.sides import channels, energetic, losses
from replica_mlm.theory.sides.losses import Absolute, Hinge, Huber, Logistic, Loss, Square

#: the losses with a specialised solver (any other convex loss: :func:`fit_generic`)
SPECIALISED = {Square: "square", Absolute: "absolute", Huber: "huber", Logistic: "logistic",
               Hinge: "hinge"}
#: the generic solver's target: ``norm(grad F) / (lam p) <= GENERIC_TOL max(1, norm(w))``
GENERIC_TOL = 1e-12


# --- loss and channel objects ------------------------------------------------------------


def solver_of(loss: Loss) -> str:
    """The specialised solver of a loss (``"square"``, ``"absolute"``, ``"huber"``,
    ``"logistic"``, ``"hinge"``), or ``"generic"`` (:func:`fit_generic`)."""
    return SPECIALISED.get(type(loss), "generic")


def _delta(loss: Loss) -> float:
    return float(loss.delta) if isinstance(loss, Huber) else 1.0


# --- pointwise losses ------------------------------------------------------------------------


def pointwise(loss: Loss, y, z) -> np.ndarray:
    """loss(y, z) elementwise (square is (y - z)^2 / 2); numpy closed forms for the specialised
    losses, the loss's compiled sympy expression otherwise."""
    y, z = np.asarray(y, dtype=float), np.asarray(z, dtype=float)
    name = solver_of(loss)
    if name == "square":
        return 0.5 * (y - z) ** 2
    if name == "absolute":
        return np.abs(y - z)
    if name == "huber":
        delta = _delta(loss)
        r = np.abs(y - z)
        return np.where(r <= delta, 0.5 * r * r, delta * r - 0.5 * delta * delta)
    if name == "logistic":
        return np.logaddexp(0.0, -y * z)
    if name == "hinge":
        return np.maximum(0.0, 1.0 - y * z)
    return np.array(loss.value(y, z))


# --- solvers ---------------------------------------------------------------------------------


def fit(x: np.ndarray, y: np.ndarray, lam: np.ndarray, loss: Loss | str, delta: float | None = None, *,
        generic: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Minimisers for every lam (> 0, warm-started in increasing order) and their certificates.

    Parameters
    ----------
    x, y : ndarray, shapes (n, p) and (n,)
    lam : ndarray, shape (k,)
    loss : Loss or str
        A Loss or a name (:func:`replica_mlm.theory.sides.losses.resolve`). The specialised solver
        of :func:`solver_of` is used, else :func:`fit_generic`.
    delta : float, optional
        Only with the name ``"huber"``: the loss ``Huber(delta)``. (The validation code's old
        positional ``(name, delta)`` form; a Loss object carries its own delta.)
    generic : bool
        Force :func:`fit_generic` also for a loss with a specialised solver.

    Returns
    -------
    w : ndarray, shape (p, k)
    bound : ndarray, shape (k,)
        ``bound[j] >= |w[:, j] - w_exact(lam_j)|``.
    """
    loss = losses.resolve(loss)
    if delta is not None and delta != _delta(loss):
        if not isinstance(loss, Huber):
            raise ValueError(f"delta is the Huber loss's parameter, got delta={delta!r} with the "
                             f"{loss.name} loss")
        loss = Huber(delta)
    _n, p = x.shape
    name = "generic" if generic else solver_of(loss)
    if name == "generic":
        require_differentiable(loss, y)
    w = np.zeros((p, lam.size))
    bound = np.empty(lam.size)
    start = np.zeros(p)
    for j in np.argsort(lam):
        lp = float(lam[j]) * p
        if name == "logistic":
            wj = _fit_logistic(x, y, lp, start)
        elif name == "huber":
            wj = _fit_huber(x, y, lp, loss, start)
        elif name == "generic":
            wj = fit_generic(x, y, lp, loss, start)
        else:
            wj, bound[j] = _fit_dual_box(x, y, lp, name, start)
        if name in ("logistic", "huber", "square"):
            bound[j] = np.linalg.norm(gradient(x, y, wj, lp, loss)) / lp
        elif name == "generic":
            bound[j] = np.linalg.norm(_generic_gradient(x, y, wj, lp, loss)) / lp
        w[:, j] = wj
        start = wj
    return w, bound


def primal(x, y, w, lp: float, loss: Loss) -> float:
    """sum_mu loss(y_mu, w . x_mu) + (lp / 2) |w|^2."""
    return float(np.sum(pointwise(loss, y, x @ w)) + 0.5 * lp * (w @ w))


def dual(x, y, a, lp: float) -> float:
    """Dual objective of the hinge and absolute losses, sum a y - |X^T a|^2 / (2 lp) (a feasible)."""
    v = x.T @ a
    return float(a @ y - 0.5 * (v @ v) / lp)


def gradient(x, y, w, lp: float, loss: Loss) -> np.ndarray:
    """Gradient of the primal objective for the smooth losses (the loss's ``loss'`` for a loss
    without a specialised solver)."""
    name = solver_of(loss)
    if name == "generic":
        return _generic_gradient(x, y, w, lp, loss)
    z = x @ w
    if name == "logistic":
        dz = -y * special.expit(-y * z)
    elif name == "huber":
        delta = _delta(loss)
        dz = -np.clip(y - z, -delta, delta)
    else:  # square
        dz = z - y
    return x.T @ dz + lp * w


def _generic_gradient(x, y, w, lp: float, loss: Loss) -> np.ndarray:
    return x.T @ _finite(loss.d1(y, x @ w), loss, "loss'") + lp * w


def _finite(values: np.ndarray, loss: Loss, what: str) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"the {loss.name} loss's {what} is not finite at some training point: "
                         "simulate needs a loss finite with its derivatives on the data")
    return values


def require_differentiable(loss: Loss, y: np.ndarray) -> None:
    """ValueError unless ``loss'`` is continuous in z at every kink candidate sympy finds for the labels.

    :func:`fit_generic`'s certificate |grad F| / (lam p) needs a differentiable loss; hinge-like
    and absolute-like losses have their exact dual solvers (by name).
    """
    labels_ = np.unique(np.asarray(y, dtype=float))
    for k in loss.kink_points(labels_):
        ok = np.isfinite(k)
        if not ok.any():
            continue
        yk, kk = labels_[ok], k[ok]
        h = 1e-7 * np.maximum(1.0, np.abs(kk))
        left, right = loss.d1(yk, kk - h), loss.d1(yk, kk + h)
        jump = np.abs(right - left)
        scale = 1.0 + np.abs(left) + np.abs(right)
        bad = jump > 1e-4 * scale
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(
                f"simulate fits the {loss.name} loss by its generic Newton solver, which needs a loss "
                f"differentiable in z; loss' jumps by {jump[i]:.3g} at z = {kk[i]:.6g} (y = {yk[i]:g}). "
                "Non-smooth losses are simulated by name: 'hinge', 'absolute'")


def fit_generic(x: np.ndarray, y: np.ndarray, lp: float, loss: Loss, start: np.ndarray, *,
                max_iter: int = 200) -> np.ndarray:
    """Minimiser of ``sum_mu loss(y_mu, w . x_mu) + (lp / 2) |w|^2`` for any convex loss
    differentiable in z: Newton's method with Armijo backtracking, the gradient
    ``X^T loss'(y, X w) + lp w`` and the Hessian ``X^T diag(loss''(y, X w)) X + lp I`` from the
    loss's sympy derivatives (semi-smooth Newton where ``loss''`` jumps, as Huber's does).

    Stops when ``|grad| / lp <= GENERIC_TOL max(1, |w|)`` (the certified distance to the
    minimiser, by lp-strong convexity), or when a step no longer changes ``w``.
    """
    p = x.shape[1]
    w = start.copy()
    f = primal(x, y, w, lp, loss)
    for _ in range(max_iter):
        z = x @ w
        g = x.T @ _finite(loss.d1(y, z), loss, "loss'") + lp * w
        if np.linalg.norm(g) / lp <= GENERIC_TOL * max(1.0, float(np.linalg.norm(w))):
            break
        curv = _finite(loss.d2(y, z), loss, "loss''")
        if np.any(curv < 0):
            raise ValueError(f"the {loss.name} loss is not convex in z on the data (loss'' = "
                             f"{float(curv.min()):.3g} < 0)")
        step = -np.linalg.solve((x.T * curv) @ x + lp * np.eye(p), g)
        t, slope = 1.0, float(g @ step)
        while True:
            cand = w + t * step
            fc = primal(x, y, cand, lp, loss)
            if fc <= f + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        if np.max(np.abs(cand - w)) <= 4 * np.finfo(float).eps * max(1.0, float(np.max(np.abs(w)))):
            w = cand
            break
        w, f = cand, fc
    return w


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
    gap = primal(x, y, w, lp, losses.resolve(name)) - dual(x, y, a, lp)
    return math.sqrt(2.0 * max(gap, 0.0) / lp)


def _fit_logistic(x, y, lp: float, start: np.ndarray) -> np.ndarray:
    """:func:`replica_mlm.learners.logistic.fit_binary` (Newton's method, from 0 as before)."""
    if np.unique(y).size < 2:
        raise ValueError("every training label has the same sign: use more samples")
    return logistic.fit_binary(x, y, lp)[0]


def _fit_huber(x, y, lp: float, huber: Huber, start: np.ndarray, max_iter: int = 200) -> np.ndarray:
    """Semi-smooth Newton with backtracking. The objective is quadratic on each set of samples
    with |residual| <= delta, so a full step that keeps that set unchanged lands on the minimiser."""
    delta = huber.delta
    w = start.copy()
    f = primal(x, y, w, lp, huber)
    for _ in range(max_iter):
        g = gradient(x, y, w, lp, huber)
        inside = np.abs(y - x @ w) <= delta
        xa = x[inside]
        step = -np.linalg.solve(xa.T @ xa + lp * np.eye(x.shape[1]), g)
        t = 1.0
        while True:
            cand = w + t * step
            fc = primal(x, y, cand, lp, huber)
            if fc <= f + 1e-4 * t * (g @ step) or t < 1e-12:
                break
            t *= 0.5
        same_set = np.array_equal(np.abs(y - x @ cand) <= delta, inside)
        w, f = cand, fc
        if t == 1.0 and same_set:
            # one more exact Newton step on the (unchanged) quadratic piece removes rounding
            g = gradient(x, y, w, lp, huber)
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


def test_quantities(m: float, q: float, rho: float, noise: float, loss: Loss, channel
                    ) -> tuple[float, float]:
    """(eg, test_loss) of an estimator with overlaps (m, q) on a fresh sample, computed exactly.

    The fields (nu, lambda) = (w* . x, w_hat . x) are jointly Gaussian with Var nu = rho,
    Var lambda = q, Cov = m; both are the theory's integrals
    (:func:`replica_mlm.theory.sides.energetic.error` and
    :func:`~replica_mlm.theory.sides.energetic.test_loss`). At q <= 0 (w_hat = 0, lambda = 0
    surely) a binary channel's eg is 1/2 (sign(0) is a coin flip) and the gaussian one's rho + sigma^2.
    """
    channel = channels.resolve(channel)
    tl = energetic.test_loss(loss, channel, q=q, m=m, rho=rho, noise=noise)
    if q <= 0.0:
        return (rho + noise if channel.labels == "real" else 0.5), tl
    return energetic.error(channel, q=q, m=m, rho=rho, noise=noise), tl
