"""Closed-form ridge / Moore-Penrose simulations of the masked-site regression task."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.keywords import keywords
from replica_mlm._base.progress import bar, shown
from replica_mlm._base.stats import mean_stderr, zscore
from replica_mlm._base.threads import INHERIT, blas_threads
from replica_mlm.learners import erm
from replica_mlm.learners.ridge_path import ridge_path
from replica_mlm.potts.model import PottsModel
from replica_mlm.tasks.protocol import DrawnTask
from replica_mlm.theory import routes
from replica_mlm.theory.sides import channels, losses


@dataclass(frozen=True)
class Simulation:
    """Ridge estimators trained on independent samples of one task.

    Attributes
    ----------
    alpha : float
        Realised n / p (n = round(alpha p)).
    n, p, seeds : int
        Samples per seed, inputs, number of independent samples.
    lam : ndarray, shape (k,)
        Ridge strengths (0 is the Moore-Penrose solution).
    eg, train_loss : ndarray, shape (seeds, k)
        Exact generalisation error and empirical training loss, per seed and lam. eg is the natural
        error of the channel: sigma^2 + (w_hat - w*)^T Sigma (w_hat - w*) for ``"gaussian"``, the
        classification error P(y != sign(w_hat . x)) for ``"sign"`` and ``"logit"``, computed from
        the overlaps without a test sample. train_loss is (1/n) sum loss(y, w_hat . x), except for
        the square loss: |y - X w_hat|^2 / n (the MSE convention).
    test_loss : ndarray, shape (seeds, k)
        Expected loss on a fresh sample, E loss(y, w_hat . x), exact (see :mod:`replica_mlm.learners.erm`).
    estimation_error : ndarray, shape (seeds, k)
        |w_hat - w*|^2 (Euclidean).
    kkt_residual : ndarray, shape (seeds, k)
        Certified upper bound on |w_hat - w_exact| (the optimiser's error, see
        :mod:`replica_mlm.learners.erm`); 0 for the closed-form square-loss path.
    loss, channel : str
        Loss and label channel.
    eg_mean, eg_stderr, train_loss_mean, ..., estimation_error_stderr : ndarray, shape (k,)
        Means over seeds and their standard errors (std with ddof=1 over sqrt(seeds)).
    eg_theory, train_loss_theory : ndarray, shape (k,), or None
        The replica prediction (:func:`replica_mlm.solve`) on the same task at the realised alpha
        = n / p and each lam, with the same loss and channel (docs/theory.md, section 3): the
        p -> infinity value, so expect an O(1/p) difference, larger near alpha = 1 at small lam.
        Solved on first access and kept; NaN where the saddle point does not converge. On a
        PottsModel: the theory named by ``simulate(..., theory=)`` on the site's measured moments,
        None without it.
    task : object or None
        The task simulated (the replica values are solved on it); for a PottsModel the site
        ``model.masked_site(site, rng=0)`` when a theory is named, else None.
    loss_object : Loss or None
        The loss trained (a ``rm.losses.Loss``, e.g. a ``Huber(delta)``), for the replica values.
    channel_object : Channel or None
        A channel of one's own (not the registry's) that drew the labels, for the replica values.
    z : ndarray, shape (k,), or None
        ``(eg_mean - eg_theory) / eg_stderr`` per lam (:func:`replica_mlm._base.stats.zscore`; the
        ``z`` column of ``replica-mlm simulate``); None where ``eg_theory`` is.
    """

    alpha: float
    n: int
    p: int
    seeds: int
    lam: np.ndarray
    eg: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray | None = None
    estimation_error: np.ndarray | None = None
    kkt_residual: np.ndarray | None = None
    loss: str = "square"
    channel: str = "gaussian"
    task: object = field(default=None, repr=False, compare=False)
    loss_object: object = field(default=None, repr=False, compare=False)
    channel_object = None  # an attribute, not a field (the result's fields stay): set by simulate
    theory = None  # likewise: the discrete theory of a PottsModel's site (simulate's theory=)

    @cached_property
    def _replica(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self.task is None:
            return None
        loss = self.loss if self.loss_object is None else self.loss_object
        if self.theory is not None:  # a Potts model's site: its own channel, the theory named
            return _theory(self.task, self.alpha, self.lam, loss, None, theory=self.theory)
        return _theory(self.task, self.alpha, self.lam, loss, self.channel_object or self.channel)

    def __getstate__(self) -> dict:  # a Loss or Channel object does not pickle: its replica values do
        state = dict(self.__dict__)
        if state.get("loss_object") is not None or state.get("channel_object") is not None:
            state["_replica"], state["loss_object"], state["channel_object"] = self._replica, None, None
        return state

    eg_theory = property(lambda self: None if self._replica is None else self._replica[0])
    train_loss_theory = property(lambda self: None if self._replica is None else self._replica[1])

    @property
    def z(self) -> np.ndarray | None:
        return None if self.eg_theory is None else np.asarray(zscore(self.eg_mean, self.eg_theory,
                                                                        self.eg_stderr), dtype=float)

    def to_frame(self):
        """A pandas DataFrame, one row per (training set, lam): columns alpha, n, p, sample (the
        index of the training set, 0 .. seeds - 1), lam, eg, train_loss, test_loss,
        estimation_error, kkt_residual, loss, channel (a field that is None is left out)."""
        import pandas as pd

        k = self.lam.size
        cols = {"alpha": self.alpha, "n": self.n, "p": self.p,
                "sample": np.repeat(np.arange(self.seeds), k), "lam": np.tile(self.lam, self.seeds)}
        for name in ("eg", "train_loss", "test_loss", "estimation_error", "kkt_residual"):
            if getattr(self, name) is not None:
                cols[name] = np.asarray(getattr(self, name)).reshape(-1)
        cols["loss"], cols["channel"] = self.loss, self.channel
        return pd.DataFrame(cols)

    @property
    def eg_mean(self) -> np.ndarray:
        return self.eg.mean(axis=0)

    @property
    def eg_stderr(self) -> np.ndarray:
        return mean_stderr(self.eg, axis=0).stderr

    @property
    def train_loss_mean(self) -> np.ndarray:
        return self.train_loss.mean(axis=0)

    @property
    def train_loss_stderr(self) -> np.ndarray:
        return mean_stderr(self.train_loss, axis=0).stderr

    @property
    def test_loss_mean(self) -> np.ndarray:
        return self.test_loss.mean(axis=0)

    @property
    def test_loss_stderr(self) -> np.ndarray:
        return mean_stderr(self.test_loss, axis=0).stderr

    @property
    def estimation_error_mean(self) -> np.ndarray:
        return self.estimation_error.mean(axis=0)

    @property
    def estimation_error_stderr(self) -> np.ndarray:
        return mean_stderr(self.estimation_error, axis=0).stderr


#: fresh test sequences per seed of a PottsModel simulation unless ``n_test`` is given
N_TEST = 4000


@keywords
def simulate(task, *, alpha, lam, seeds: int = 20, rng: _checks.RngLike = None,
             loss=None, channel=None, site: int | None = None,
             n_test: int | None = None, threads=INHERIT, progress: bool | None = None,
             theory: str | None = None) -> Simulation | list[Simulation]:
    """Train ridge-penalised ERM on ``seeds`` independent samples of ``n = round(alpha p)`` points.

    Parameters
    ----------
    task : MaskedSite or PottsModel
        A Gaussian-covariate task (finite covariance, teacher, noise and channel; any task that
        draws training sets and scores fits, :class:`replica_mlm.tasks.protocol.DrawnTask`), or an Ising
        model (:meth:`PottsModel.ising`) whose site ``site`` is learnt from Boltzmann samples by
        its pseudo-likelihood (= factored-attention MLM at that site): ``M = round(alpha p)``
        sequences per seed from the package's sampler, logistic loss, and the test measures of
        :func:`replica_mlm.learners.pseudo_likelihood.site_measures` on ``n_test`` fresh sequences
        (exact conditionals averaged analytically over the masked spin).
    alpha : float or array_like
        Sample ratio, at least 1 / p (one sample); the realised ratio n / p, with
        n = round(alpha p), is reported in the result. A scalar gives one :class:`Simulation`
        (with a lam axis); a 1-d sequence gives a list, one Simulation per alpha in the order
        given (as :func:`replica_mlm.learning_curve` gives one curve per lam of a sequence).
        Alpha number ``k`` then uses the ``k``-th generator spawned from ``rng``: for an int
        ``rng`` that is ``default_rng(SeedSequence(rng, spawn_key=(k,)))``, the generator the
        ``replica-mlm simulate`` sweep gives alpha number ``k`` with ``--sample-seed rng``.
    lam : float or array_like
        Ridge strength(s) >= 0; for the square loss all from one Gram matrix per sample (see ridge_path).
        Other losses need lam > 0 (their minimiser may not exist or be unique at lam = 0: e.g.
        the logistic loss on separable data, alpha < alpha_c, has no finite minimiser).
    seeds : int
        Number of independent samples, >= 2 (the standard errors need two).
    rng : int or numpy.random.Generator
        Seed; sample ``k`` uses the ``k``-th child of ``SeedSequence``-spawned generators, so
        results do not depend on how samples are split across workers.
    loss : str or replica_mlm.theory.sides.losses.Loss, optional
        ``"square"`` (closed form), ``"absolute"``, ``"huber"`` (delta = 1, or a ``Huber(delta)``
        object), ``"logistic"`` or ``"hinge"`` (specialised solvers), or any convex loss
        differentiable in z, e.g. ``Loss.from_sympy(...)`` (the generic Newton solver with the
        loss's sympy derivatives, :func:`replica_mlm.learners.erm.fit_generic`); the estimator
        minimises ``sum_mu loss(y_mu, w . x_mu) + (lam p / 2) |w|^2`` (see
        :mod:`replica_mlm.learners.erm`). The same Loss objects as :func:`replica_mlm.solve`'s.
        Default: the task's own, from the same place as :func:`replica_mlm.solve`'s
        (:func:`replica_mlm.theory.solve.default_loss`): ``"square"`` for a MaskedSite,
        ``"logistic"`` for an Ising model, ``"cross_entropy"`` for a Potts model with q > 2.
    site : int
        The masked site (Ising models only).
    n_test : int, optional
        Fresh test sequences per seed, an int >= 1 within the memory available; PottsModel tasks
        only (default :data:`N_TEST`), whose test measures are averages over a test sample. A
        MaskedSite has exact test quantities (eg and test_loss from the overlaps, no test
        sample): passing n_test with it is a ValueError.
    channel : str or rm.channels.Channel, optional
        A name of ``rm.channels`` or a channel of one's own, as for :func:`replica_mlm.solve`
        (default: the task's own). It draws the labels (``Channel.sample``): ``w* . x + sigma eps``
        (sigma^2 = ``site.noise``), its sign, +1 with probability ``1 / (1 + exp(-w* . x))``, or
        from a channel's own ``sampler=`` or ``P_out``. Logistic and hinge need a binary channel.
    threads : int or None
        BLAS threads during the call (scoped with threadpoolctl, restored afterwards). Default:
        the enclosing setting (e.g. a sweep's ``threads=``), else 1 -- many small SVDs run far
        faster on one thread than with threads fighting over a busy machine. ``None`` leaves
        the BLAS libraries' own setting. The numbers do not depend on it beyond rounding. At most
        ``MAX_THREADS`` (1024).
    progress : bool or None
        A progress bar on stderr over the training sets (over the alphas for a sequence); None:
        only when stderr is a terminal (:mod:`replica_mlm._base.progress`).
    theory : {None, "gaussian", "mixture", "local"}
        PottsModel tasks only: the discrete theory the simulation is held against (``eg_theory``,
        ``train_loss_theory``, ``z``), solved on ``task.masked_site(site, rng=0)`` (its
        neighbourhood by the documented rule; docs/discrete.md). None: no theory (as before).

    Returns
    -------
    Simulation or list of Simulation
        One Simulation for a scalar ``alpha``; ``[sim(alpha_0), sim(alpha_1), ...]`` for a sequence.
    """
    n_test = _checks.optional(_checks.positive_int, n_test, "n_test")
    shown(progress)  # TypeError for anything but None, True, False
    if _checks.is_sequence(alpha):
        alphas = _checks.grid(alpha, "alpha")
        gens = _checks.as_generator(rng).spawn(alphas.size)
        return [simulate(task, alpha=float(a), lam=lam, seeds=seeds, rng=g, loss=loss, channel=channel,
                         site=site, n_test=n_test, threads=threads, progress=False, theory=theory)
                for a, g in zip(bar(alphas, progress=progress, desc="simulate: alphas"), gens, strict=True)]
    from replica_mlm.theory.sides.task_loss import default_loss

    if isinstance(task, PottsModel):  # not a task: a site of it, learnt from its Boltzmann samples
        learn_site = _simulate_potts if task.q > 2 else _simulate_ising
        if theory is not None:
            theory = _checks.choice(theory, routes.THEORIES, "theory")
        sim = learn_site(task, site=site, alpha=alpha, lam=lam, seeds=seeds, rng=rng,
                         loss=default_loss(task) if loss is None else loss, channel=channel,
                         n_test=n_test, threads=threads, progress=progress)
        if theory is not None:  # the site's theory, on the site's measured moments
            object.__setattr__(sim, "task", task.masked_site(_model_site(task, site), rng=0))
            object.__setattr__(sim, "theory", theory)
        return sim
    if theory is not None:
        raise ValueError("theory= is for a PottsModel task (a site learnt from its Boltzmann samples); a "
                         "drawn task is held against its own Gaussian theory")
    _check_drawn_task(task, site, n_test)
    site = task
    alpha = _checks.positive(alpha, "alpha")
    lam = _checks.grid(lam, "lam", positive=False)
    seeds = _seed_count(seeds)
    named = isinstance(loss, str) or loss is None  # a named loss is its default instance
    route = routes.plan(site, entry="simulate", loss=loss, channel=channel)  # as rm.solve decides
    loss, channel = route.loss, route.channel
    solver = erm.solver_of(loss)
    if solver != "square" and np.any(lam == 0):
        raise ValueError(
            f"lam must be > 0 for the {loss.name} loss: at lam = 0 the minimiser need not exist or be unique "
            "(e.g. logistic regression on linearly separable data, alpha < alpha_c, diverges)"
        )
    p = site.p
    n = _sample_size(alpha, p, seeds, lam)
    children = _checks.as_generator(rng).spawn(seeds)
    out = _train(site, n, lam, loss, channel, solver, children, alpha, threads, progress)
    sim = Simulation(alpha=n / p, n=n, p=p, seeds=seeds, lam=lam, loss=loss.name, channel=channel.name,
                     task=site, loss_object=None if named else loss, **out)
    if not channels.registered(channel):
        object.__setattr__(sim, "channel_object", channel)
    return sim


def _check_drawn_task(task, site, n_test) -> None:
    """Refuse what :func:`simulate` on a drawn task (a MaskedSite) does not take: another kind of
    task, ``site=`` and ``n_test=``."""
    if not isinstance(task, DrawnTask):  # the task draws training sets and scores fits
        raise TypeError("task must be a MaskedSite (a finite instance; any task that draws training sets, "
                        "replica_mlm.tasks.protocol.DrawnTask) or an Ising PottsModel, got "
                        f"{type(task).__name__}")
    if site is not None:
        raise ValueError("site= selects the masked site of a PottsModel; a MaskedSite is one site already")
    if n_test is not None:
        raise ValueError(f"n_test is for PottsModel tasks only, got n_test={n_test}: a MaskedSite's eg and "
                         "test_loss are exact (from the overlaps, no test sample); leave n_test out")


def _sample_size(alpha: float, p: int, seeds: int, lam: np.ndarray) -> int:
    """The training-set size ``n = round(alpha p)`` of :func:`simulate` on a drawn task, at least
    one sample, after the memory and work of ``seeds`` training sets are checked."""
    if alpha * p < 1:
        raise ValueError(f"alpha = {alpha:g} gives alpha * p = {alpha * p:.3g} < 1 sample for p = {p} "
                         f"inputs: alpha must be >= 1/p = {1 / p:.6g}")
    n = round(alpha * p)
    # per seed: a child generator (about 1 KiB) and two rows of results; one sample at a time,
    # with its SVD and the ridge path
    _checks.allocation(seeds * (1024 + 16 * lam.size) + 8 * (6 * n * p + 2 * p * p + 3 * p * lam.size),
                       f"simulate(seeds={seeds}) at n = {n}, p = {p}")
    _checks.work(seeds * (n * p * min(n, p) + n * p * lam.size), f"simulate(seeds={seeds})")
    return n


def _train(site, n: int, lam: np.ndarray, loss, channel, solver: str, children, alpha: float,
           threads, progress) -> dict:
    """The per-seed results of :func:`simulate` on a drawn task: for each child generator, a
    training set of ``n`` samples, the estimator at every lam (the ridge path for the square
    loss, :func:`.erm.fit` otherwise) and its measures, arrays of shape (seeds, lam.size)."""
    seeds = len(children)
    out = {key: np.empty((seeds, lam.size)) for key in
           ("eg", "train_loss", "test_loss", "estimation_error", "kkt_residual")}
    rho, noise = site.rho, site.noise
    with blas_threads(threads):
        for k, gen in enumerate(bar(children, progress=progress, desc=f"simulate: alpha = {alpha:g}",
                                    unit="training set")):
            # in the task's own basis (a MaskedSite: the eigenbasis of Sigma), read back by measures
            x, nu = site.draw(n, gen)
            y = channel.sample(nu, noise, gen)
            if solver == "square":
                w = ridge_path(x, y, lam)
                out["kkt_residual"][k] = 0.0
                out["train_loss"][k] = np.mean((y[:, None] - x @ w) ** 2, axis=0)
            else:
                w, out["kkt_residual"][k] = erm.fit(x, y, lam, loss)
                out["train_loss"][k] = np.mean(erm.pointwise(loss, y[:, None], x @ w), axis=0)
            fit = site.measures(w)
            for j in range(lam.size):
                out["eg"][k, j], out["test_loss"][k, j] = erm.test_quantities(
                    float(fit["m"][j]), float(fit["q"][j]), rho, noise, loss, channel)
            if channel is channels.resolve("gaussian"):  # the exact quadratic form sigma^2 + d^T Sigma d
                out["eg"][k] = fit["error"]
            out["estimation_error"][k] = fit["estimation_error"]
    return out


def _theory(task, alpha: float, lam: np.ndarray, loss, channel, *, theory: str = "gaussian"
            ) -> tuple[np.ndarray, np.ndarray]:
    """The replica eg and training loss at (alpha, each lam), NaN where the solver fails."""
    from replica_mlm._base.errors import ConvergenceError
    from replica_mlm.theory.solve import solve

    eg, et = np.full(lam.size, np.nan), np.full(lam.size, np.nan)
    for j, lm in enumerate(lam):
        try:
            sp = solve(task, alpha=alpha, lam=float(lm), loss=loss, channel=channel, theory=theory)
        except ConvergenceError:
            continue
        eg[j], et[j] = sp.eg, sp.train_loss
    return eg, et


def _simulate_ising(model: PottsModel, *, site, alpha, lam, seeds, rng, loss, channel, n_test,
                    threads, progress) -> Simulation:
    """:func:`simulate` on an Ising model: pseudo-likelihood of one site from Boltzmann samples."""
    from replica_mlm.learners.pseudo_likelihood import simulate_sites
    from replica_mlm.tasks.ising_site import require_ising

    require_ising(model, "simulate on a PottsModel")
    site = _model_site(model, site)
    loss = losses.resolve(loss)
    if not isinstance(loss, losses.Logistic):
        raise ValueError("the pseudo-likelihood of an Ising site is the logistic loss, got "
                         f"loss={loss.name!r}")
    if channel is not None and channels.resolve(channel) is not channels.resolve("logit"):
        raise ValueError(f"an Ising site's labels follow the logit channel, got channel={channel!r}")
    lam, seeds, n_test, p, n = _sequence_counts(model, alpha, lam, seeds, n_test)
    with blas_threads(threads):
        out = simulate_sites(model, sites=[site], n=n, lam=lam, seeds=seeds, rng=rng, n_test=n_test,
                             progress=progress)
    kkt = out.pop("kkt")
    return Simulation(alpha=n / p, n=n, p=p, seeds=seeds, lam=lam, loss="logistic", channel="logit",
                      kkt_residual=np.full((seeds, lam.size), float(kkt)),
                      **{k: v[:, 0, :] for k, v in out.items()})


def _simulate_potts(model: PottsModel, *, site, alpha, lam, seeds, rng, loss, channel, n_test,
                    threads, progress) -> Simulation:
    """:func:`simulate` on a Potts model with q > 2 colours: multinomial pseudo-likelihood of one
    site (:mod:`replica_mlm.learners.multinomial_pl`), inputs centred by the task's own mean."""
    from replica_mlm.learners.multinomial_pl import simulate_site
    from replica_mlm.tasks.potts_site import all_colours_alike, colour_covariance

    site = _model_site(model, site)
    if not isinstance(loss, str):
        raise TypeError(f"loss must be 'cross_entropy' for a Potts model with q > 2, got "
                        f"{type(loss).__name__}")
    if loss != "cross_entropy":
        raise ValueError(f"the pseudo-likelihood of a Potts site with q = {model.q} colours is the "
                         f"softmax cross-entropy: loss must be 'cross_entropy', got {loss!r}")
    if channel not in (None, "softmax"):
        raise ValueError(f"a Potts site's colours follow the softmax channel, got channel={channel!r}")
    lam, seeds, n_test, p, n = _sequence_counts(model, alpha, lam, seeds, n_test)
    K = model.q - 1
    mean = (np.zeros((model.L, K)) if all_colours_alike(model)
            else colour_covariance(model, rng=rng).mean)
    with blas_threads(threads):
        out = simulate_site(model, site=site, n=n, lam=lam, seeds=seeds, rng=rng, n_test=n_test, mean=mean,
                            progress=progress)
    kkt = out.pop("kkt")
    return Simulation(alpha=n / p, n=n, p=p, seeds=seeds, lam=lam, loss="cross_entropy", channel="softmax",
                      kkt_residual=np.full((seeds, lam.size), float(kkt)), **out)


def _model_site(model: PottsModel, site) -> int:
    """The masked site of a PottsModel simulation: required, an integer index in [0, L)."""
    if site is None:
        raise ValueError("simulate on a PottsModel needs site= (the masked site, 0 <= site < L)")
    return _checks.site_index(site, model.L)


def _sequence_counts(model: PottsModel, alpha, lam, seeds, n_test):
    """Checked lam grid, seeds and n_test, and p = L - 1 and M = round(alpha p) >= 1 sequences."""
    alpha = _checks.positive(alpha, "alpha")
    lam = _checks.grid(lam, "lam")
    seeds = _seed_count(seeds)
    n_test = N_TEST if n_test is None else _checks.positive_int(n_test, "n_test")
    p = model.L - 1
    n = round(alpha * p)
    if n < 1:
        raise ValueError(f"alpha * p = {alpha * p:.3g} rounds to no training sequence: alpha must be "
                         f">= {0.5 / p:.3g} for L = {model.L}")
    # per seed: n + n_test sequences, their spins or reduced one-hot colours and the test measures
    _checks.allocation(3 * 8 * (n + n_test) * model.L * max(model.q - 1, 1),
                       f"simulate(n_test={n_test}) on L = {model.L} sites")
    return lam, seeds, n_test, p, n


def _seed_count(seeds) -> int:
    seeds = _checks.positive_int(seeds, "seeds")
    if seeds < 2:
        raise ValueError(f"seeds must be >= 2 (a standard error needs two independent samples), "
                         f"got {seeds}")
    return seeds
