"""Simulated learning dynamics: one-pass SGD on fresh samples and gradient flow on fixed
training sets, drawn from a task (docs/dynamics.md, section "Simulations").

Both record the exact test measures of the weights (the task's ``measures``: the overlaps
``m``, ``q``, the error and ``|w - w*|^2``), averaged over independent runs, beside the theory of
:func:`replica_mlm.online_sgd` and :func:`replica_mlm.gradient_flow` on the same task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.keywords import keywords
from replica_mlm._base.progress import bar
from replica_mlm._base.stats import mean_stderr, zscore
from replica_mlm._base.threads import INHERIT, blas_threads
from replica_mlm.learners import erm
from replica_mlm.potts.model import PottsModel
from replica_mlm.tasks.protocol import DrawnTask
from replica_mlm.theory import routes
from replica_mlm.theory.studies.dynamics import gradient_flow, online_sgd

#: per-run arrays of a simulation, shape (seeds, k)
MEASURES = ("eg", "test_loss", "estimation_error", "m", "q")


class _Averages:
    """Means and standard errors over the runs of the per-run arrays (``eg_mean``, ``eg_stderr``,
    ..., ``q_stderr``) and the z-score of eg against the theory."""

    def __getattr__(self, name: str):
        for suffix, fn in (("_mean", lambda x: x.mean(axis=0)),
                           ("_stderr", lambda x: mean_stderr(x, axis=0).stderr)):
            base = name[: -len(suffix)]
            if name.endswith(suffix) and base in self._measures():
                return fn(getattr(self, base))
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    @property
    def z(self) -> np.ndarray:
        """``(eg_mean - eg_theory) / eg_stderr`` per time."""
        return np.asarray(zscore(self.eg_mean, self.eg_theory, self.eg_stderr), dtype=float)


@dataclass(frozen=True)
class SGDSimulation(_Averages):
    """One-pass SGD runs of :func:`simulate_sgd`.

    Attributes
    ----------
    alpha : ndarray, shape (k,)
        Times ``k B / p`` realised on whole steps.
    steps : ndarray of int, shape (k,)
    p, seeds, batch : int
    lr, lam : float
    eg, test_loss, estimation_error, m, q : ndarray, shape (seeds, k)
        Exact test measures of each run's weights at each time (eg: the channel's natural error).
    eg_mean, eg_stderr, ..., q_mean, q_stderr : ndarray, shape (k,)
        Means over the runs and their standard errors.
    eg_theory : ndarray, shape (k,)
        :func:`replica_mlm.online_sgd` on the same task at the same times: the exact finite-p
        recursion for the square loss with the gaussian channel, the p -> infinity ODEs otherwise
        (expect an O(1/p) difference then).
    z : ndarray, shape (k,)
        ``(eg_mean - eg_theory) / eg_stderr``.
    """

    alpha: np.ndarray
    steps: np.ndarray
    p: int
    seeds: int
    batch: int
    lr: float
    lam: float
    eg: np.ndarray
    test_loss: np.ndarray
    estimation_error: np.ndarray
    m: np.ndarray
    q: np.ndarray
    loss: str = "square"
    channel: str = "gaussian"
    task: object = field(default=None, repr=False, compare=False)
    plan: object = field(default=None, repr=False, compare=False)

    @staticmethod
    def _measures() -> tuple[str, ...]:
        return MEASURES

    @cached_property
    def theory(self):
        """The :class:`replica_mlm.theory.studies.dynamics.OnlineSGD` at the simulated times."""
        if routes.is_multiclass(self.task):
            return online_sgd(self.task, alpha=self.alpha, lr=self.lr, lam=self.lam, batch=self.batch)
        if self.plan.channel is None:
            return online_sgd(self.task, alpha=self.alpha, lr=self.lr, lam=self.lam, batch=self.batch,
                              loss=self.plan.loss, theory="mixture")
        exact = self.plan.loss.is_square and self.plan.channel.name == "gaussian"
        return online_sgd(self.task, alpha=self.alpha, lr=self.lr, lam=self.lam, batch=self.batch,
                          loss=self.plan.loss, channel=self.plan.channel, exact=exact)

    @property
    def eg_theory(self) -> np.ndarray:
        return self.theory.eg

    def to_frame(self):
        """A pandas DataFrame, one row per time: alpha, steps, then the mean and standard error of
        each measure, eg_theory and z, then p, seeds, batch, lr, lam, loss, channel."""
        import pandas as pd

        cols = {"alpha": self.alpha, "steps": self.steps}
        for name in MEASURES:
            cols[f"{name}_mean"], cols[f"{name}_stderr"] = getattr(self, f"{name}_mean"), getattr(
                self, f"{name}_stderr")
        cols["eg_theory"], cols["z"] = self.eg_theory, self.z
        frame = pd.DataFrame(cols)
        for name in ("p", "seeds", "batch", "lr", "lam", "loss", "channel"):
            frame[name] = getattr(self, name)
        return frame


def _drawn(task, what: str) -> None:
    if not isinstance(task, DrawnTask):
        raise ValueError(f"{what} draws samples from the task: it takes a MaskedSite or an Ising site "
                         f"(a task with draw and measures), got {type(task).__name__}")


def _record(task, weights: np.ndarray, plan) -> dict[str, np.ndarray]:
    """The measures of weights (S, p) in the task's basis, each of shape (S,)."""
    fit = task.measures(weights.T)
    out = {"m": fit["m"], "q": fit["q"], "estimation_error": fit["estimation_error"]}
    if plan.channel.name == "gaussian" and plan.loss.is_square:
        out["eg"], out["test_loss"] = fit["error"], fit["error"] / 2.0
        return out
    pairs = [erm.test_quantities(float(m), float(q), task.rho, task.noise, plan.loss, plan.channel)
             for m, q in zip(fit["m"], fit["q"], strict=True)]
    out["eg"], out["test_loss"] = (np.array(v) for v in zip(*pairs, strict=True))
    if plan.channel.name == "gaussian":
        out["eg"] = fit["error"]
    return out


@keywords
def simulate_sgd(task, *, alpha, lr: float, lam: float = 0.0, batch: int = 1, seeds: int = 40,
                 rng: _checks.RngLike = None, loss=None, channel=None, theory: str = "gaussian",
                 site: int | None = None, n_test: int = 1000, progress: bool | None = None) -> SGDSimulation:
    """One-pass SGD simulated on fresh samples of a task, many runs at once (docs/dynamics.md).

    Step k draws ``batch`` fresh samples per run and moves
    ``w <- w - (lr / p) ((1/B) sum_b dloss/dz(y_b, w . x_b) x_b + lam w)`` from w = 0.

    Parameters
    ----------
    task : MaskedSite, Ising site, PottsSite or PottsModel
        A task that draws samples (:class:`replica_mlm.tasks.protocol.DrawnTask`), a q-colour site
        (a :class:`~replica_mlm.tasks.potts_site.PottsSite` with the softmax channel: Gaussian
        inputs, the softmax cross-entropy), or a Potts model with ``site``: SGD with the
        logistic loss (q = 2) or the softmax cross-entropy (q > 2) on fresh Boltzmann samples of
        the model itself (docs/dynamics.md, sections "Discrete data" and "A q-colour site"),
        beside the Gaussian theory of ``task.masked_site(site)``.
    alpha : float or array_like
        Times (samples seen per dimension), >= 0; realised on whole steps ``round(alpha p / B)``.
    lr, lam, batch, loss, channel, theory
        As in :func:`replica_mlm.online_sgd`.
    seeds : int
        Independent runs (>= 2), simulated together.
    rng : int or Generator, optional
        Seed of the runs' samples.
    site : int, optional
        The masked site of a PottsModel (None otherwise).
    n_test : int
        Fresh test sequences per run of a PottsModel (>= 1).
    progress : bool, optional
        A progress bar over the steps (the runs, for a PottsModel).

    Returns
    -------
    SGDSimulation
    """
    if isinstance(task, PottsModel):
        return _simulate_model(task, site=site, alpha=alpha, lr=lr, lam=lam, batch=batch, seeds=seeds,
                               rng=rng, loss=loss, channel=channel, n_test=n_test, progress=progress)
    if site is not None:
        raise ValueError("site is the masked site of a PottsModel; a task is one site already: leave "
                         "site=None")
    plan = routes.plan(task, entry="simulate_sgd", loss=loss, channel=channel, theory=theory)
    if routes.is_multiclass(task):
        return _simulate_multiclass(task, plan, alpha=alpha, lr=lr, lam=lam, batch=batch, seeds=seeds,
                                    rng=rng, progress=progress)
    _drawn(task, "simulate_sgd")
    draw, record = _mixture_source(task, plan) if plan.channel is None else _task_source(task, plan)
    times, lr, lam, batch, seeds = _run_checks(alpha, lr, lam, batch, seeds)
    gen = _checks.as_generator(rng)
    p = task.p
    _checks.allocation(8 * 3 * seeds * batch * p, f"simulate_sgd with seeds={seeds}, batch={batch}")
    last = int(float(np.max(times)) * p / batch + 0.5)
    _checks.work(last * seeds * batch * p, f"simulate_sgd to alpha = {float(np.max(times)):g} with "
                 f"seeds={seeds}, batch={batch} on p = {p}", steps=last)
    steps = np.rint(times * p / batch).astype(np.int64)
    weights = np.zeros((seeds, p))
    out = {name: np.empty((seeds, steps.size)) for name in MEASURES}
    order = np.argsort(steps, kind="stable")
    done, step_size = 0, lr / p
    with blas_threads(INHERIT), bar(total=int(steps.max()), progress=progress, desc="simulate_sgd",
                                    unit="step") as pbar:
        for j in order:
            while done < steps[j]:
                x, y = draw(seeds * batch, gen)
                x, y = x.reshape(seeds, batch, p), y.reshape(seeds, batch)
                z = np.einsum("sbp,sp->sb", x, weights)
                grad = np.einsum("sb,sbp->sp", plan.loss.d1(y, z), x) / batch + lam * weights
                weights -= step_size * grad
                done += 1
                pbar.update(1)
            for name, value in record(weights).items():
                out[name][:, j] = value
    channel = "mixture" if plan.channel is None else plan.channel.name
    return SGDSimulation(alpha=steps * batch / p, steps=steps, p=p, seeds=seeds, batch=batch, lr=lr, lam=lam,
                         loss=plan.loss.name, channel=channel, task=task, plan=plan, **out)


def _task_source(task, plan):
    """Samples of the task (its draw, labels from its channel) and the exact measures of weights."""
    def draw(n, gen):
        x, nu = task.draw(n, gen)
        return x, plan.channel.sample(nu, task.noise, gen)

    return draw, lambda weights: _record(task, weights, plan)


def _mixture_source(task, plan):
    """Samples of the task's two-cluster Gaussian mixture itself (``y = +-1``, ``x = y mu + S^{1/2} g``
    in the eigenbasis of S) and the exact measures of weights there (``m = w . mu``, ``q = w^T S w``,
    eg ``Phi(-m / sqrt q)``), for theory="mixture"."""
    from scipy.special import ndtr

    from replica_mlm.theory.sides.sgd_mixture import class_sums
    from replica_mlm.theory.solvers.mixture_engine import MixtureTheory

    th = MixtureTheory(task.mixture)
    scale = np.sqrt(th.omega)

    def draw(n, gen):
        y = np.where(gen.random(n) < th.weights[0], 1.0, -1.0)
        return y[:, None] * th.mu_modes + gen.standard_normal((n, th.p)) * scale, y

    def record(weights):
        m, q = weights @ th.mu_modes, (weights**2) @ th.omega
        with np.errstate(divide="ignore", invalid="ignore"):
            eg = np.where(q > 0, ndtr(-m / np.sqrt(q)), 0.5)
        tl = np.array([class_sums(plan.loss, th.weights, m=float(a), Q=float(b))[3]
                       for a, b in zip(m, q, strict=True)])
        return {"eg": eg, "test_loss": tl, "m": m, "q": q,
                "estimation_error": np.sum((weights - th.target_modes) ** 2, axis=1)}

    return draw, record


def _simulate_model(model, *, site, alpha, lr, lam, batch, seeds, rng, loss, channel, n_test,
                    progress) -> SGDSimulation:
    """:func:`simulate_sgd` on a Potts model's own samples, beside the theory of its
    Gaussian-equivalent site ``model.masked_site(site)``: an Ising model with the logistic loss
    (:mod:`.sgd_discrete`), a q-colour one with the softmax cross-entropy (:mod:`.sgd_potts`)."""
    from replica_mlm.learners.sgd_discrete import ising_runs
    from replica_mlm.learners.sgd_potts import potts_runs

    if site is None:
        raise ValueError("simulate_sgd on a PottsModel needs site= (the masked site)")
    ising = model.q == 2
    if ising and (loss not in (None, "logistic") or channel not in (None, "logit")):
        raise ValueError(f"an Ising site is learnt with loss='logistic' on the logit channel (its "
                         f"pseudo-likelihood), got loss={loss!r}, channel={channel!r}")
    times, lr, lam, batch, seeds = _run_checks(alpha, lr, lam, batch, seeds)
    n_test = _checks.positive_int(n_test, "n_test")
    site = _checks.site_index(site, model.L)
    task = model.masked_site(site)  # the Gaussian-equivalent task of the theory beside the runs
    p = task.p
    steps = np.rint(times * p / batch).astype(np.int64)
    runs = dict(steps=steps, lr=lr, lam=lam, batch=batch, seeds=seeds, rng=rng, n_test=n_test,
                progress=progress)
    if ising:
        plan = routes.plan(task, entry="simulate_sgd", loss="logistic")
        out, names = ising_runs(model, site=site, **runs), ("logistic", "logit")
    else:
        plan = routes.plan(task, entry="simulate_sgd", loss=loss, channel=channel)
        out, names = potts_runs(model, task, site=site, **runs), (plan.loss, plan.channel)
    return SGDSimulation(alpha=steps * batch / p, steps=steps, p=p, seeds=seeds, batch=batch, lr=lr, lam=lam,
                         loss=names[0], channel=names[1], task=task, plan=plan, **out)


def _run_checks(alpha, lr, lam, batch, seeds):
    """The checked times, lr, lam, batch and seeds (at least 2) of a simulation."""
    times = _checks.grid(alpha, "alpha", positive=False)
    lr, lam = _checks.positive(lr, "lr"), _checks.nonnegative(lam, "lam")
    batch, seeds = _checks.positive_int(batch, "batch"), _checks.positive_int(seeds, "seeds")
    if seeds < 2:
        raise ValueError(f"seeds must be at least 2 (a standard error needs two runs), got {seeds}")
    return times, lr, lam, batch, seeds


def _simulate_multiclass(task, plan, *, alpha, lr, lam, batch, seeds, rng, progress) -> SGDSimulation:
    """:func:`simulate_sgd` on a q-colour site's Gaussian inputs (:mod:`.sgd_potts`)."""
    from replica_mlm.learners.sgd_potts import gaussian_runs

    times, lr, lam, batch, seeds = _run_checks(alpha, lr, lam, batch, seeds)
    p = task.p
    steps = np.rint(times * p / batch).astype(np.int64)
    out = gaussian_runs(task, steps=steps, lr=lr, lam=lam, batch=batch, seeds=seeds,
                        gen=_checks.as_generator(rng), progress=progress)
    return SGDSimulation(alpha=steps * batch / p, steps=steps, p=p, seeds=seeds, batch=batch, lr=lr, lam=lam,
                         loss=plan.loss, channel=plan.channel, task=task, plan=plan, **out)


@dataclass(frozen=True)
class FlowSimulation(_Averages):
    """Gradient flow on fixed training sets, :func:`simulate_gradient_flow`.

    Attributes
    ----------
    time : ndarray, shape (k,)
    alpha : float
        Realised n / p.
    n, p, seeds : int
    lam : float
    eg, train_loss, test_loss, estimation_error, m, q : ndarray, shape (seeds, k)
        Exact test measures and the training loss |y - X w|^2 / n of each run at each time.
    eg_mean, eg_stderr, ... : ndarray, shape (k,)
    eg_theory : ndarray, shape (k,)
        :func:`replica_mlm.gradient_flow` at the realised alpha (p -> infinity: expect O(1/p)).
    z : ndarray, shape (k,)
    """

    time: np.ndarray
    alpha: float
    n: int
    p: int
    seeds: int
    lam: float
    eg: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray
    estimation_error: np.ndarray
    m: np.ndarray
    q: np.ndarray
    task: object = field(default=None, repr=False, compare=False)

    @staticmethod
    def _measures() -> tuple[str, ...]:
        return (*MEASURES, "train_loss")

    @cached_property
    def theory(self):
        """The :class:`replica_mlm.theory.studies.dynamics.GradientFlow` at the simulated times."""
        return gradient_flow(self.task, alpha=self.alpha, time=self.time, lam=self.lam)

    @property
    def eg_theory(self) -> np.ndarray:
        return self.theory.eg

    def to_frame(self):
        """A pandas DataFrame, one row per time: time, the mean and standard error of each measure,
        eg_theory and z, then alpha, n, p, seeds, lam."""
        import pandas as pd

        cols = {"time": self.time}
        for name in self._measures():
            cols[f"{name}_mean"], cols[f"{name}_stderr"] = getattr(self, f"{name}_mean"), getattr(
                self, f"{name}_stderr")
        cols["eg_theory"], cols["z"] = self.eg_theory, self.z
        frame = pd.DataFrame(cols)
        for name in ("alpha", "n", "p", "seeds", "lam"):
            frame[name] = getattr(self, name)
        return frame


@keywords
def simulate_gradient_flow(task, *, alpha: float, time, lam: float = 0.0, seeds: int = 20,
                           rng: _checks.RngLike = None, loss=None, channel=None,
                           progress: bool | None = None) -> FlowSimulation:
    """Gradient flow of the square loss on fixed training sets of n = round(alpha p) samples,
    integrated exactly (docs/dynamics.md, section "Gradient flow").

    ``w(t) = (I - exp(-t A)) A^+ b`` with ``A = X^T X / n + (lam / alpha) I``, ``b = X^T y / n``,
    the flow ``dw/dt = -(A w - b)`` from w = 0 (on the null space of A, where b has no part, w
    stays 0), by one eigendecomposition of A per training set.

    Parameters
    ----------
    task : MaskedSite
    alpha : float
        n / p, > 0.
    time : float or array_like
        Flow times, > 0.
    lam : float
        Ridge, >= 0.
    seeds : int
        Training sets (>= 2); set k uses the k-th generator spawned from ``rng``.
    loss, channel : optional
        The square loss with the gaussian channel only.
    progress : bool, optional
        A progress bar over the training sets.
    """
    plan = routes.plan(task, entry="simulate_gradient_flow", loss=loss, channel=channel)
    if not (plan.loss.is_square and plan.channel.name == "gaussian"):
        raise ValueError("simulate_gradient_flow simulates the square loss with the gaussian channel only, "
                         "as rm.gradient_flow solves it")
    _drawn(task, "simulate_gradient_flow")
    a, lam = _checks.positive(alpha, "alpha"), _checks.nonnegative(lam, "lam")
    times = _checks.grid(time, "time")
    seeds = _checks.positive_int(seeds, "seeds")
    if seeds < 2:
        raise ValueError(f"seeds must be at least 2 (a standard error needs two runs), got {seeds}")
    p = task.p
    n = max(1, round(a * p))
    what = f"simulate_gradient_flow with alpha={a:g} (n = {n}), seeds={seeds} on p = {p}"
    _checks.allocation(8 * (2 * n * p + 3 * p * p + p * times.size + 7 * seeds * times.size), what)
    _checks.work(seeds * (n * p * p + 10 * p**3), what, steps=seeds)
    out = {name: np.empty((seeds, times.size)) for name in (*MEASURES, "train_loss")}
    mu = lam / (n / p)
    with blas_threads(INHERIT):
        for k, gen in enumerate(bar(_checks.as_generator(rng).spawn(seeds), progress=progress,
                                    desc="simulate_gradient_flow", unit="training set")):
            _flow_run(task, plan, n, mu, times, gen, out, k)
    return FlowSimulation(time=times, alpha=n / p, n=n, p=p, seeds=seeds, lam=lam, task=task, **out)


def _flow_run(task, plan, n: int, mu: float, times: np.ndarray, gen, out: dict, k: int) -> None:
    """One training set's exact flow at every time, written into row ``k`` of ``out``."""
    p = task.p
    x, nu = task.draw(n, gen)
    y = plan.channel.sample(nu, task.noise, gen)
    eig, u = np.linalg.eigh(x.T @ x / n + mu * np.eye(p))
    coef = u.T @ (x.T @ y / n)
    rate = np.maximum(eig, 0.0)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = np.where(rate > 1e-12, -np.expm1(-times * rate) / rate, times)
    w = u @ (gain * coef[:, None])
    rec = _record(task, w.T, plan)
    for name, value in rec.items():
        out[name][k] = value
    out["train_loss"][k] = np.mean((y[:, None] - x @ w) ** 2, axis=0)
