"""Replica theory of multi-class ridge ERM on Gaussian covariates: a Potts site with q > 2 colours.

The estimator is ``W = argmin sum_mu CE(y_mu, P W^T x_mu) + (lam p / 2) |W|_F^2`` (W is d x K,
``K = q - 1``), with ``alpha = M / p``, on the task of a :class:`~replica_mlm.tasks.potts_site.PottsSite`.
Its replica-symmetric saddle point has K x K order parameters ``Q = W^T Sigma W``,
``M = W^T Sigma W*``, ``V`` and their conjugates. The channel side is :mod:`.multiclass_channel`;
the prior side (ridge) is closed form in the eigenbasis of Sigma (eigenvalues ``omega_k``, teacher
rows ``theta_k = u_k^T W*`` in R^K): with ``G_k = (lam I + omega_k V_hat)^{-1}`` the estimator's row
``k`` is Gaussian,

    w_k = G_k (omega_k M_hat theta_k + sqrt(omega_k / p) Q_hat^{1/2} z_k),

so that ``V = (1/p) sum_k omega_k G_k``, ``M = sum_k omega_k E[w_k] theta_k^T`` and
``Q = sum_k omega_k E[w_k w_k^T]``; at K = 1 these are the scalar engine's prior equations, and

    E |W - W*|_F^2 = sum_k |omega_k G_k M_hat theta_k - theta_k|^2 + (omega_k / p) tr(G_k Q_hat G_k).

The fixed point is solved by MINPACK's hybrid method on well-scaled unknowns (Cholesky factors of
V and Q with logarithmic diagonals, and M; or, for a colour-symmetric task, ``log v, log q,
artanh(m / sqrt(q r))`` of ``V = v I, Q = q I, M = m I, rho = r I``) after damped iterations from
a cold start. ``converged`` is True only if the largest relative violation of the prior-side
equations, with the hats recomputed at the solution, is at most 1e-10: a property of the
discretised equations of one integration rule. The integration error is measured separately
(:func:`solve`): the change under a finer Gauss-Hermite rule, or the spread over independent
scramblings of a Sobol' rule. See docs/multiclass.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.errors import ConvergenceError
from replica_mlm._base.stats import mean_stderr
from replica_mlm.theory.sides import multiclass_channel as mc
from replica_mlm.theory.sides import prior
from replica_mlm.theory.sides.task_loss import default_loss
from replica_mlm.theory.solvers import fixed_point, packing

#: largest relative violation of the prior-side equations for converged=True
TOL = 1e-10
#: damped iterations before the root solver, from a cold start
WARMUP = 10
#: default rule parameters: Gauss-Hermite nodes per dimension by K, else Sobol' 2^m points
HERMITE_ORDER = {1: 64, 2: 20}
SOBOL_M = 14
#: independent scramblings of a Sobol' rule by default
RANDOMISATIONS = 4
#: the cost of a solve, for the work check: at least this many channel-side evaluations (measured
#: 24 from a cold start, 12 to 20 warm), each about NODE_OPERATIONS K^2 per node of the rule
#: (measured 0.3 s per evaluation of 2^14 Sobol' nodes at K = 2 on the development machine)
SOLVE_EVALUATIONS = 12
NODE_OPERATIONS = 4000
LOSSES = ("cross_entropy", "square")
OUTPUTS = ("test_loss", "eg", "estimation_error", "train_loss")


@dataclass(frozen=True)
class MulticlassSaddlePoint:
    """Solution of the multi-class saddle point at one (alpha, lam).

    Attributes
    ----------
    alpha, lam : float
        ``M / p`` and the ridge strength (penalty ``(lam p / 2) |W|_F^2``).
    test_loss : float
        Expected cross-entropy on a fresh sequence (the site's MLM test loss); for the square
        loss ``E |y - W^T x|^2 / 2``.
    eg : float
        Classification error ``P(y != argmax P W^T x)`` (softmax); for the gaussian channel
        ``tr(rho + sigma^2 I - M - M^T + Q)`` (no factor 1/2).
    estimation_error : float
        ``E |W - W*|_F^2``.
    train_loss : float
        Mean training loss at the minimiser.
    Q, M, V, Q_hat, M_hat, V_hat, rho : ndarray (K, K)
        Order parameters and conjugates (``M = W^T Sigma W*``: student rows, teacher columns). The
        local theory's ``M`` and ``M_hat`` are K x C (one column per cluster) and ``rho`` C x C;
        with each cluster's own covariance its ``V``, ``Q`` and their conjugates are 1 x C too.
    converged : bool
        True: the residual is at most 1e-10 (failures raise ConvergenceError).
    residual : float
        Largest relative violation of the prior-side equations at the hats of the solution.
    iterations : int
        Channel-side evaluations.
    integration : str
        The rule(s) used.
    integration_error : dict
        Estimated integration error of each of :data:`OUTPUTS`: the change under a finer
        Gauss-Hermite rule, or the standard error over independent Sobol' scramblings (the
        reported values are then their mean).
    method : str
        ``"symmetric"`` (order parameters multiples of I), ``"general"``, ``"mixture"`` or ``"local"``.
    valid : Validity or None
        On a site of a Potts model: whether the theory used can describe the site
        (:meth:`replica_mlm.tasks.local_site.DiscreteSite.validity`); None on a Gaussian task.
    """

    alpha: float
    lam: float
    test_loss: float
    eg: float
    estimation_error: float
    train_loss: float
    Q: np.ndarray
    M: np.ndarray
    V: np.ndarray
    Q_hat: np.ndarray
    M_hat: np.ndarray
    V_hat: np.ndarray
    rho: np.ndarray
    converged: bool
    residual: float
    iterations: int
    integration: str
    integration_error: dict = field(default_factory=dict)
    method: str = "general"
    valid: object = None

    @property
    def K(self) -> int:
        return self.Q.shape[0]

    def to_frame(self):
        """A one-row pandas DataFrame: the scalar fields, and each matrix as the nested list of its
        entries (column ``Q``, ...) and, when square (K x K), as its trace (column ``tr_Q``, ...)."""
        import pandas as pd

        row = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                if v.ndim == 2 and v.shape[0] == v.shape[1]:
                    row[f"tr_{f.name}"] = float(np.trace(v))
                row[f.name] = v.tolist()
            elif isinstance(v, dict):
                row.update({f"integration_error_{k}": e for k, e in v.items()})
            else:
                row[f.name] = v
        row["K"] = self.K
        return pd.DataFrame([row])


@dataclass(frozen=True, eq=False)
class MatrixPacking:
    """The unknowns of ``(V, Q, M)`` (:mod:`.packing`): the Cholesky factors of V and Q with
    logarithmic diagonals, then M (K x ``columns``) row by row; or, for a colour-symmetric task
    (``rho = r I``, every order parameter a multiple of I), ``(log v, log q, artanh(m / sqrt(q r)))``."""

    K: int
    columns: int
    symmetric_rho: float | None = None

    def pack(self, V, Q, M) -> np.ndarray:
        if self.symmetric_rho is not None:
            return packing.pack(V[0, 0], Q[0, 0], M[0, 0], self.symmetric_rho)
        return packing.pack_matrices(V, Q, M)

    def unpack(self, x):
        if self.symmetric_rho is not None:
            eye = np.eye(self.K)
            return tuple(s * eye for s in packing.unpack(x, self.symmetric_rho))
        return packing.unpack_matrices(x, self.K, self.columns)


class MatrixProblem:
    """The fixed-point map of one point with K x K order parameters: a channel side and a prior
    side composed at ``alpha`` with the packing of the unknowns (docs/architecture.md, section
    "The sides of a saddle point"): :class:`.multiclass_channel.SoftmaxCovariates`,
    :class:`.multiclass_channel.SquareCovariates` or :class:`.mixture_classes.MixtureClasses` with
    :class:`.prior.RidgeMatrixPrior`."""

    def __init__(self, channel_side, prior_side, packer: MatrixPacking, alpha: float) -> None:
        self.channel_side, self.prior_side, self.packer = channel_side, prior_side, packer
        self.alpha, self.lam = alpha, prior_side.lam
        self.evaluations = 0
        self._last = None  # (packed x, (V, Q, M), hats, their Jacobian or None): the last evaluation

    def pack(self, V, Q, M) -> np.ndarray:
        return self.packer.pack(V, Q, M)

    def unpack(self, x):
        return self.packer.unpack(x)

    def hats(self, V, Q, M) -> dict:
        self.evaluations += 1
        return self.channel_side.hats(self.alpha, V, Q, M)

    def _hats_at(self, x, *, jacobian: bool = False):
        """``(V, Q, M)`` unpacked from ``x``, the hats there and (``jacobian``) their Jacobian, else
        None; all reused when ``x`` is the point last evaluated (a driver judging the point it has
        just stepped to)."""
        x = np.asarray(x, dtype=float)
        last = self._last
        if last is not None and np.array_equal(last[0], x) and (last[3] is not None or not jacobian):
            return last[1:]
        x = x.copy()  # the driver may reuse its array; M unpacks as a view of this private copy
        V, Q, M = self.unpack(x)
        if not all(np.all(np.isfinite(a)) for a in (V, Q, M)) or not (_diagonal(V) > 0).all() \
                or not (_diagonal(Q) > 0).all():
            raise FloatingPointError("order parameters left their domain (V and Q positive and finite)")
        if jacobian:
            self.evaluations += 1
            h, dh = self.channel_side.hats_jacobian(self.alpha, V, Q, M)
        else:
            h, dh = self.hats(V, Q, M), None
        if not all(np.all(np.isfinite(h[k])) for k in ("Q_hat", "M_hat", "V_hat")):
            raise FloatingPointError("hats left their domain")
        self._last = (x, (V, Q, M), h, dh)
        return (V, Q, M), h, dh

    def prior(self, h: dict):
        return self.prior_side.overlaps(h)

    def start(self) -> np.ndarray:
        return self.pack(*self.prior(self.channel_side.cold_hats(self.alpha)))

    def image(self, x) -> np.ndarray:
        return self.pack(*self.prior(self._hats_at(x)[1]))

    @property
    def has_jacobian(self) -> bool:
        """Whether :meth:`image_jacobian` is available: one logit direction (K = 1, packed as
        ``(log sqrt V, log sqrt Q, M)``) with sides that give their Jacobians."""
        packer = self.packer
        return (isinstance(packer, MatrixPacking) and packer.K == 1 and packer.symmetric_rho is None
                and callable(getattr(self.channel_side, "hats_jacobian", None))
                and callable(getattr(self.prior_side, "overlaps_jacobian", None)))

    def image_jacobian(self, x) -> tuple[np.ndarray, np.ndarray]:
        """The image of the packed ``x`` and its Jacobian in the packed unknowns, composed from the
        two sides' Jacobians (:attr:`has_jacobian`): one evaluation of the channel side."""
        if not self.has_jacobian:
            raise TypeError("this problem's sides give no Jacobian (K = 1 with hats_jacobian and "
                            "overlaps_jacobian is required)")
        (V, Q, _), h, dh = self._hats_at(x, jacobian=True)
        (V2, Q2, M2), dout = self.prior_side.overlaps_jacobian(h)
        J = dout @ dh
        # packed: x_0 = log sqrt V, x_1 = log sqrt Q (d V / d x_0 = 2 V), then M as it is
        J[:2] /= 2.0 * np.array([V2[0, 0], Q2[0, 0]])[:, None]
        J[:, :2] *= 2.0 * np.array([V[0, 0], Q[0, 0]])
        return self.pack(V2, Q2, M2), J

    def step_limits(self) -> np.ndarray:
        """The largest change of each packed unknown in one Newton step: 1 on the logarithmic
        diagonals (V and Q by at most e^2), none on M."""
        n = self.packer.K * (self.packer.K + 1) // 2
        limits = np.full(2 * n + self.packer.K * self.packer.columns, np.inf)
        limits[:2 * n] = 1.0
        return limits

    def residual(self, x) -> tuple[float, dict]:
        (V, Q, M), h, _ = self._hats_at(x)
        V2, Q2, M2 = self.prior(h)
        res = max(_rel(V, V2), _rel(Q, Q2), _rel(M, M2))
        return res, {"V": V, "Q": Q, "M": M, **h}


def site_problem(task, alpha: float, lam: float, loss: str, rule: mc.Rule | None) -> MatrixProblem:
    """The problem of a Potts site: its channel side (softmax cross-entropy, or the square loss in
    closed form) with the ridge prior on its modes."""
    omega, theta = task.modes
    if loss == "square":
        side = mc.SquareCovariates(task.rho, task.noise)
    else:
        side = mc.SoftmaxCovariates(rule, task.rho, task.bias, task.basis, symmetric=task.symmetric)
    ridge = prior.RidgeMatrixPrior(omega, theta, task.p, lam, symmetric=task.symmetric)
    packer = MatrixPacking(task.K, task.K, task.rho[0, 0] if task.symmetric else None)
    return MatrixProblem(side, ridge, packer, alpha)


def _diagonal(A: np.ndarray) -> np.ndarray:
    """The diagonal of a square K x K order parameter, or every entry of a 1 x C one (one per cluster)."""
    return np.diagonal(A) if A.shape[0] == A.shape[1] else A.ravel()


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    scale = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    return 0.0 if scale == 0 else float(np.max(np.abs(a - b))) / scale


#: smallest lam the multi-class theory is asked to solve at: measured on the 2-core development
#: machine on a PottsModel.random(L=4, q=3, beta=1, seed=0) site at alpha = 2, lam = 1e-6 converges
#: (38 s), lam = 1e-8 fails after 219 evaluations (24 s) and lam = 1e-12 after 272 (44 s, with a
#: RuntimeWarning): below this floor a call is refused at once
MIN_LAM = 1e-6


def solve_point(problem: MatrixProblem, *, init=None, tol: float = TOL, max_evaluations: int = 600,
                method: str = "hybr") -> dict:
    """Solve one point; ``init`` a packed start (warm start) or None. Raises ConvergenceError.

    The driver is :func:`.fixed_point.solve` (``method``: hybr, relative step 1e-14: :data:`WARMUP`
    damped steps from a cold start, then up to three hybr runs; or Anderson mixing, for many
    unknowns, with hybr after it if it stalls; or Newton's method with the sides' Jacobian
    (:meth:`MatrixProblem.image_jacobian`), Anderson after it if it stalls).
    """
    x = problem.start() if init is None else np.asarray(init, dtype=float)
    errors = (FloatingPointError, OverflowError, ZeroDivisionError, ValueError, np.linalg.LinAlgError)
    try:
        newton = ({"jacobian": problem.image_jacobian, "step_limits": problem.step_limits()}
                  if method == "newton" else {})
        found = fixed_point.solve(problem.image, problem.residual, x, tol=tol, method=method,
                                  warmup=WARMUP if init is None else 0, xtols=(1e-14,), retry_xtol=1e-14,
                                  max_evaluations=max_evaluations, domain_errors=errors, failures=errors,
                                  **newton)
    except fixed_point.FixedPointFailure as failure:
        if failure.error is not None:
            raise ConvergenceError(f"multi-class saddle point failed at alpha={problem.alpha}, "
                                   f"lam={problem.lam}: {failure.error}", last={"packed": failure.best},
                                   residual=math.inf, iterations=problem.evaluations) from None
        raise ConvergenceError(f"multi-class saddle point at alpha={problem.alpha}, lam={problem.lam}: "
                               f"residual {failure.residual:.3g} > tol {tol:g} after {problem.evaluations} "
                               "evaluations", last=failure.point, residual=failure.residual,
                               iterations=problem.evaluations) from None
    return {**found.point, "residual": found.residual, "packed": found.x}


def _outputs(problem: MatrixProblem, point: dict) -> dict:
    side = problem.channel_side
    Q, M = point["Q"], point["M"]
    if isinstance(side, mc.SquareCovariates):
        E = side.rho + side.noise * np.eye(Q.shape[0]) - M - M.T + Q
        meas = {"test_loss": float(np.trace(E)) / 2, "eg": float(np.trace(E))}
    else:
        meas = mc.test_measures(side.rule, Q=Q, M=M, rho=side.rho, bias=side.bias, P=side.P)
        # the error rate integrates an indicator (argmax): scrambled Sobol' rules instead of the tensor rule
        rates = mc.error_rates(Q=Q, M=M, rho=side.rho, bias=side.bias, P=side.P)
        meas["eg"], meas["eg_stderr"] = mean_stderr(rates)
    est = problem.prior_side.estimation_error(point)
    return {**meas, "estimation_error": est, "train_loss": point["train_loss"]}


def solve(task, *, alpha: float, lam: float, loss: str | None = None, integration: str | None = None,
          order: int | None = None, randomisations: int | None = None, seed: int = 0,
          init: MulticlassSaddlePoint | None = None) -> MulticlassSaddlePoint:
    """Solve the multi-class saddle point of a :class:`~replica_mlm.tasks.potts_site.PottsSite`.

    Parameters
    ----------
    task : PottsSite
    alpha, lam : float
        ``M / p`` (> 0) and ridge (> 0).
    loss : {"cross_entropy", "square"}, optional
        Default: cross-entropy for the softmax channel, square for the gaussian channel (the only
        pairings implemented).
    integration : {"hermite", "sobol"}, optional
        Default: Gauss-Hermite for K <= 2, Sobol' otherwise.
    order : int, optional
        Gauss-Hermite nodes per dimension (default 64 at K = 1, 20 at K = 2) or ``m`` of a Sobol'
        rule with ``2^m`` points (default 14).
    randomisations : int, optional
        Independent Sobol' scramblings (seeds ``seed, seed + 1, ...``; default 4, >= 2): the result
        is their mean and ``integration_error`` their standard error. For Gauss-Hermite the
        error is the change under ``1.5 order`` nodes (one more solve).
    seed : int
        First scrambling seed.
    init : MulticlassSaddlePoint, optional
        Warm start.
    """
    from replica_mlm.tasks.potts_site import PottsSite

    if not isinstance(task, PottsSite):
        raise TypeError(f"task must be a PottsSite, got {type(task).__name__}")
    alpha = _checks.positive(alpha, "alpha")
    lam = _checks.positive(lam, "lam")
    if lam < MIN_LAM:
        raise ValueError(f"lam must be >= {MIN_LAM:g} for the multi-class theory, got {lam:g}: below it the "
                         "saddle point's norms grow without bound as the softmax fit nears separation, and "
                         "the solver spends minutes before failing")
    default = default_loss(task)
    loss = default if loss is None else _checks.choice(loss, LOSSES, "loss")
    if loss != default:
        raise ValueError(f"loss {loss!r} is not implemented with the {task.channel} channel; use {default!r}")
    K = task.K
    if integration is None:
        integration = "hermite" if K in HERMITE_ORDER else "sobol"
    integration = _checks.choice(integration, ("hermite", "sobol"), "integration")
    if order is None:
        order = HERMITE_ORDER.get(K, 12) if integration == "hermite" else SOBOL_M
    order = _checks.positive_int(order, "order")
    seed = _checks.nonnegative_int(seed, "seed")
    if randomisations is None:
        randomisations = RANDOMISATIONS
    randomisations = _checks.positive_int(randomisations, "randomisations")
    if integration == "sobol" and randomisations < 2 and loss != "square":
        raise ValueError("randomisations must be >= 2 for a Sobol' rule (the integration error "
                         "is their spread)")
    if init is not None and not isinstance(init, MulticlassSaddlePoint):
        raise TypeError(f"init must be a MulticlassSaddlePoint, got {type(init).__name__}")
    if loss != "square":  # every rule checked and the whole cost bounded before the first solve
        _check_cost(K, integration, order, randomisations)
    start = None if init is None else {"V": init.V, "Q": init.Q, "M": init.M}
    runs, err, name = _runs(task, alpha, lam, loss, integration, order, randomisations, seed, start)
    mean = {k: float(np.mean([run[2][k] for run in runs])) for k in OUTPUTS}
    mats = {k: np.mean([run[1][k] for run in runs], axis=0)
            for k in ("Q", "M", "V", "Q_hat", "M_hat", "V_hat")}
    return MulticlassSaddlePoint(
        alpha=alpha, lam=lam, **mean, **mats, rho=task.rho, converged=True,
        residual=max(run[1]["residual"] for run in runs),
        iterations=sum(run[0].evaluations for run in runs), integration=name, integration_error=err,
        method="symmetric" if task.symmetric else "general")


def _check_cost(K: int, integration: str, order: int, randomisations: int) -> None:
    """Refuse rules too large to build, and solves whose total work is out of reach, before any solve."""
    nodes = mc.rule_size(K, integration, order)
    if integration == "hermite":  # the error check solves again with 1.5 order nodes
        finer = math.ceil(1.5 * order)
        if finer ** (2 * K) > mc.HERMITE_NODES:
            raise ValueError(f"order = {order}: the error check's Gauss-Hermite rule of ceil(1.5 "
                             f"order) = {finer} nodes per dimension has {finer}^{2 * K} nodes (limit "
                             "2^26): lower order or use integration='sobol'")
        nodes += mc.rule_size(K, integration, finer)
    solves = randomisations if integration == "sobol" else 1
    _checks.work(solves * SOLVE_EVALUATIONS * nodes * NODE_OPERATIONS * K**2,
                 f"solve(integration={integration!r}, order={order}, randomisations="
                 f"{_checks.count(randomisations)}) at K = {K}", steps=solves * SOLVE_EVALUATIONS)


def _solve_with(task, alpha: float, lam: float, loss: str, rule, start: dict | None) -> tuple:
    """One saddle point with integration rule ``rule`` from ``start``: (problem, point, outputs)."""
    problem = site_problem(task, alpha, lam, loss, rule)
    packed = None if start is None else problem.pack(start["V"], start["Q"], start["M"])
    point = solve_point(problem, init=packed)
    return problem, point, _outputs(problem, point)


def _runs(task, alpha: float, lam: float, loss: str, integration: str, order: int,
          randomisations: int, seed: int, start: dict | None) -> tuple[list, dict, str]:
    """The solves to average, the integration error of each output, and the rule's description.

    Square loss: one closed-form solve (no error). Gauss-Hermite: one solve, its error the change
    under ``ceil(1.5 order)`` nodes. Sobol': one solve per scrambling, the error their standard
    error. For both rules the error of eg also holds the standard error of its scrambled estimate.
    """
    K = task.K
    if loss == "square":
        problem, point, out = _solve_with(task, alpha, lam, loss, None, start)
        return [(problem, point, out)], dict.fromkeys(OUTPUTS, 0.0), "closed form"
    if integration == "hermite":
        problem, point, out = _solve_with(task, alpha, lam, loss,
                                          mc.rule_for(K, "hermite", order=order, seed=0), start)
        finer = math.ceil(1.5 * order)
        _, _, out2 = _solve_with(task, alpha, lam, loss,
                                 mc.rule_for(K, "hermite", order=finer, seed=0), point)
        err = {k: abs(out2[k] - out[k]) for k in OUTPUTS}
        err["eg"] = math.hypot(err["eg"], out.get("eg_stderr", 0.0))
        return [(problem, point, out)], err, f"hermite(n={order}) checked against n={finer}"
    runs = []
    for r in range(randomisations):
        rule = mc.rule_for(K, "sobol", order=order, seed=seed + r)
        runs.append(_solve_with(task, alpha, lam, loss, rule, start if not runs else runs[0][1]))
    vals = {k: np.array([run[2][k] for run in runs]) for k in OUTPUTS}
    err = {k: mean_stderr(v).stderr for k, v in vals.items()}
    err["eg"] = math.hypot(err["eg"], float(np.mean([run[2].get("eg_stderr", 0.0) for run in runs])))
    name = f"sobol(m={order}) x {randomisations} scramblings, seeds {seed}..{seed + randomisations - 1}"
    return runs, err, name
