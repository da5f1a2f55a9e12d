"""The route planner: which solver serves a call, decided once, the same for every entry point.

docs/architecture.md, section "Routes". Every public entry point (:func:`replica_mlm.solve`,
:func:`replica_mlm.learning_curve`, :func:`replica_mlm.optimal_lambda`,
:func:`replica_mlm.phase_diagram`, :func:`replica_mlm.bayes_optimal`,
:func:`replica_mlm.bayes_optimal_curve`, :func:`replica_mlm.equations`, :func:`replica_mlm.simulate`)
calls :func:`plan` once (``rm.simulate`` for the theory it draws beside its simulations), with what
it was given, before any point is solved. The plan names the
route, holds the loss and the channel resolved and checked, and checks the route's options
(:meth:`Plan.check_options`), which :func:`show_options` lists as ``scipy.optimize.show_options``
does. What no route of an entry point serves is refused here, with one message.

Routes
------
``"root"``                the reduced scalar equation (square loss, gaussian channel), vectorised
``"iterate"``             damped iteration of the six raw equations (square loss, gaussian channel)
``"general"``             the general engine: any convex loss and label channel
``"multiclass"``          the multi-class theory of a site with q > 2 colours (a Potts site)
``"mixture"``             the two-cluster Gaussian mixture of an Ising site, any convex loss
``"mixture-multiclass"``  the q-cluster Gaussian mixture of a Potts site, softmax cross-entropy
``"local"``               the local theory of a site: clusters of the label and its neighbourhood
``"bayes"``               the Bayes-optimal fixed point (Nishimori line) of a Gaussian task
``"bayes-mixture"``       the Bayes-optimal error of an Ising site's two-cluster mixture
``"dynamics"``            learning dynamics: one-pass SGD and gradient flow (docs/dynamics.md)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from replica_mlm._base import checks as _checks
from replica_mlm._base.keywords import keywords
from replica_mlm.tasks.gaussian_potts_limit import GaussianPottsLimit
from replica_mlm.tasks.masked_site import MaskedSite
from replica_mlm.tasks.protocol import MulticlassTask, spectrum_of
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.sides import channels, losses, penalties
from replica_mlm.theory.sides.task_loss import default_loss

#: the theories of a discrete site: Gaussian equivalence, its Gaussian mixture, or the local theory
#: (exact on the site's neighbourhood, Gaussian beyond)
THEORIES = ("gaussian", "mixture", "local")
#: the routes whose points are K x K saddle points (:class:`.multiclass.MulticlassSaddlePoint`)
MATRIX_ROUTES = ("multiclass", "mixture-multiclass", "local")
#: the values of ``method=`` (None: the route's own)
METHODS = ("root", "iterate", "general")
#: task classes that are never multi-class (no runtime protocol check needed)
SCALAR_TASKS = (Spectrum, MaskedSite, GaussianPottsLimit)


@dataclass(frozen=True)
class Route:
    """One route: what it solves and the options it takes (name -> meaning and default)."""

    name: str
    solves: str
    options: dict[str, str]


ROUTES: dict[str, Route] = {route.name: route for route in (
    Route("root", "the reduced scalar equation G(kappa) = 0 of the square loss with the gaussian channel "
          "(Newton's method to machine precision, every alpha of a curve at once); lam >= 0", {}),
    Route("iterate", "damped fixed-point iteration of the six raw equations (square loss, gaussian "
          "channel)", {
              "damping": "weight of the old iterate, in [0, 1) (0.5)",
              "tol": "step |dV| + |dq| + |dm| below which it stops, > 0 (1e-12)",
              "max_iter": "most steps, >= 1 (100000)",
              "init": "(V, q, m) to start from, three finite numbers (None: (1000, 1e-3, 1e-3))"}),
    Route("general", "the general engine: any convex loss with any label channel; lam > 0", {
        "init": "a SaddlePoint to start from (None: a cold start); curves set it themselves",
        "order": "Gauss-Legendre nodes per quadrature panel, 1 to 1024 (16)"}),
    Route("multiclass", "the multi-class theory of a site with q > 2 colours (softmax cross-entropy or "
          "square loss); lam > 0", {
              "init": "a MulticlassSaddlePoint to start from (None: a cold start); curves set it themselves",
              "integration": "'hermite' or 'sobol' (None: by the number of logit dimensions)",
              "order": "Gauss-Hermite nodes per dimension (None: by the dimension)",
              "randomisations": "Sobol' scramblings of the error estimate (None: 4)",
              "seed": "seed of the Sobol' scramblings (0)"}),
    Route("mixture", "the replica theory of ERM on an Ising site's two-cluster Gaussian mixture, any "
          "convex loss; lam > 0", {
              "init": "a SaddlePoint to start from (None: a cold start); curves set it themselves",
              "order": "Gauss-Legendre nodes per quadrature panel, 1 to 1024 (16)"}),
    Route("mixture-multiclass", "the replica theory of softmax cross-entropy ERM on a Potts site's "
          "q-cluster Gaussian mixture; lam > 0", {
              "init": "a MulticlassSaddlePoint to start from (None: a cold start); curves set it themselves",
              "order": "Gauss-Hermite nodes per dimension, 1 to 64 (None: 64 for q = 2, 20 for q = 3, "
                       "else 12)"}),
    Route("local", "the replica theory of ERM on a site's local data model: clusters of the label and the "
          "neighbourhood's configuration, Gaussian beyond (any convex loss with two colours, the softmax "
          "cross-entropy with more); lam > 0", {
              "init": "a MulticlassSaddlePoint to start from (None: a cold start); curves set it themselves",
              "order": "quadrature nodes: Gauss-Legendre per panel with two colours (16), Gauss-Hermite per "
                       "dimension with more (None: 10 for q = 3, 6 for q = 4, else 4)",
              "covariance": "'pooled' (one covariance beyond the neighbourhood, shared by the clusters) or "
                            "'cluster' (each cluster's own; two colours only) ('pooled')"}),
    Route("bayes", "the Bayes-optimal fixed point on the Nishimori line (state evolution)", {
        "init": "a BayesOptimal to start from (None: the uninformed start); curves set it themselves",
        "order": "Gauss-Legendre nodes per quadrature panel, 1 to 256 (16)"}),
    Route("bayes-mixture", "the exact Gaussian posterior of an Ising site's two-cluster mixture", {
        "order": "Gauss-Legendre nodes per quadrature panel, 1 to 256 (16)"}),
    Route("dynamics", "learning dynamics on Gaussian covariates: one-pass SGD (the square loss's exact "
          "per-mode recursion or its limit; ODEs of the order parameters for any convex loss) and "
          "gradient flow of the square loss (deterministic equivalents); one-pass SGD of the softmax "
          "cross-entropy on a q-colour site (ODEs of the K x K order parameters); lam >= 0", {}),
)}

#: the routes each entry point serves
ENTRY_ROUTES = {
    "solve": ("root", "iterate", "general", "multiclass", "mixture", "mixture-multiclass", "local"),
    "learning_curve": ("root", "iterate", "general", "multiclass", "mixture", "mixture-multiclass", "local"),
    "optimal_lambda": ("root", "general"),
    "phase_diagram": ("root", "general"),
    "bayes_optimal": ("bayes", "bayes-mixture"),
    "bayes_optimal_curve": ("bayes", "bayes-mixture"),
    "equations": ("root", "general", "mixture", "bayes", "local"),
    "simulate": ("root", "general"),
    "online_sgd": ("dynamics",),
    "simulate_sgd": ("dynamics",),
    "gradient_flow": ("dynamics",),
    "simulate_gradient_flow": ("dynamics",),
}
#: the entry points of the learning dynamics (their plan is the ``"dynamics"`` route)
DYNAMICS_ENTRIES = ("online_sgd", "simulate_sgd", "gradient_flow", "simulate_gradient_flow")


class Plan(NamedTuple):
    """What :func:`plan` decided: the route, and the loss, the channel and the penalty resolved
    (None where the route has its own: a multi-class site, a mixture's channel, the Bayes-optimal
    estimator; the penalty of a scalar route, :mod:`.sides.penalties`, is the ridge by default).
    Immutable; a named tuple rather than a frozen dataclass, because every point of a user's loop
    of ``rm.solve`` builds one (the frozen dataclass's construction was about 2 of the 5 us of
    planning a point)."""

    route: str
    entry: str
    loss: object = None
    channel: object = None
    penalty: object = None

    @property
    def fast(self) -> bool:
        """The square loss with the gaussian channel, solved by the reduced equation."""
        return self.route in ("root", "iterate")

    def check_options(self, options: dict, *, without: tuple[str, ...] = ()) -> None:
        """ValueError for an option the route does not take (or one the entry point sets itself,
        ``without``), naming the route's options."""
        if not options:
            return
        allowed = [k for k in ROUTES[self.route].options if k not in without]
        unknown = sorted(k for k in options if k not in allowed)
        if unknown:
            takes = ", ".join(allowed) if allowed else "no options"
            raise ValueError(f"route {self.route!r} of {self.entry} takes {takes}; got {', '.join(unknown)} "
                             f"(rm.show_options({self.route!r}) lists each)")

    def check_lam(self, lam: float) -> float:
        """lam checked for the route: >= 0 on the reduced routes, > 0 elsewhere."""
        if self.fast:
            return _checks.nonnegative(lam, "lam")
        if self.loss is not None and self.channel is not None:  # the pair's own message
            channels.check_pair(self.loss, self.channel, lam=_checks.nonnegative(lam, "lam"), general=True)
        return _checks.positive(lam, "lam")


@keywords
def show_options(route: str | None = None, *, disp: bool = True) -> str | None:
    """The options each route takes, as ``scipy.optimize.show_options`` lists a method's.

    Parameters
    ----------
    route : str, optional
        One of :data:`ROUTES` (None: every route).
    disp : bool
        Print the text (True) or return it (False).
    """
    names = list(ROUTES) if route is None else [_checks.choice(route, tuple(ROUTES), "route")]
    lines = []
    for name in names:
        r = ROUTES[name]
        lines += [name, "=" * len(name), r.solves, ""]
        lines += [f"  {k}: {v}" for k, v in r.options.items()] or ["  (no options)"]
        lines.append("")
    text = "\n".join(lines)
    if disp:
        print(text)
        return None
    return text


def theory_of(route: str) -> str:
    """The discrete theory a route is: ``"mixture"``, ``"local"`` or ``"gaussian"`` (every other route
    treats the inputs as Gaussian)."""
    return "mixture" if route.startswith("mixture") else "local" if route == "local" else "gaussian"


def is_multiclass(task) -> bool:
    """A multi-class task (a Potts site); the scalar tasks skip the slow runtime protocol check."""
    return task is not None and not isinstance(task, SCALAR_TASKS) and isinstance(task, MulticlassTask)


def _local(task, entry: str, *, loss, channel, method, precision, bayes: bool, penalty,
           multiclass: bool) -> Plan:
    """The plan of ``theory="local"``: a site of a Potts model, its own channel, the ridge."""
    from replica_mlm.tasks.local_site import DiscreteSite

    penalties.refuse(penalty, "theory='local'")
    if task is not None and not isinstance(task, DiscreteSite):
        raise ValueError(f"theory='local' needs a site of a Potts model (PottsModel.masked_site), whose "
                         f"neighbourhood and local data model it reads; got {type(task).__name__}")
    if bayes:
        raise ValueError("the Bayes-optimal error has no local theory (the mixture's rests on cluster means "
                         "tied to the logit direction, which the local clusters' are not): use "
                         "theory='gaussian' or 'mixture'; the local data model's Bayes error, its alpha -> "
                         "infinity limit, is task.validity(theory='local').bayes_error_model")
    if method not in (None, "general") or precision is not None or channel is not None:
        raise ValueError("theory='local' is solved with the site's own channel side: method, precision and "
                         "channel take their defaults")
    if multiclass:
        if loss not in (None, "cross_entropy"):
            raise ValueError(f"theory='local' of a multi-class site learns with loss='cross_entropy', "
                             f"got {loss!r}")
        return Plan("local", entry)
    return Plan("local", entry, loss=losses.resolve(default_loss(task) if loss is None and task is not None
                                                    else loss))


def plan(task, *, entry: str = "solve", loss=None, channel=None, theory: str = "gaussian",
         method: str | None = None, precision=None, bayes: bool = False, penalty=None) -> Plan:
    """The route that serves ``task`` with this loss, channel, theory and method, at ``entry``.

    ``task`` None plans for no task in particular (the printed equations; the default loss is then
    the square loss and the default channel the gaussian one).

    Raises
    ------
    ValueError
        For an unknown theory, method, loss or channel, a pair the theory does not solve
        (:func:`~replica_mlm.theory.sides.channels.check_pair`), or a route ``entry`` does not serve.
    """
    theory = _checks.choice(theory, THEORIES, "theory")
    mixture = theory == "mixture"
    if entry in DYNAMICS_ENTRIES:
        if theory == "local":
            raise ValueError("the learning dynamics have no local theory yet: use theory='gaussian' or "
                             "'mixture'")
        return _dynamics(task, entry, loss, channel, mixture, method, precision, penalty)
    shaped = penalties.resolve(penalty)  # TypeError for anything but None or a Penalty
    multiclass = is_multiclass(task)
    if theory == "local":
        return _served(_local(task, entry, loss=loss, channel=channel, method=method, precision=precision,
                              bayes=bayes, penalty=penalty, multiclass=multiclass))
    if mixture or bayes or precision is not None or multiclass:
        where = ("theory='mixture'" if mixture else "the Bayes-optimal estimator" if bayes else
                 "precision=" if precision is not None else "a multi-class site")
        penalties.refuse(penalty, where)
    if method is not None and not (isinstance(method, str) and method in METHODS):
        raise ValueError(f"method must be one of {METHODS} (or None), got {method!r}")
    if mixture and task is not None and getattr(task, "mixture", None) is None:
        raise ValueError(f"theory='mixture' needs a task with a Gaussian mixture (task.mixture, e.g. an "
                         f"Ising or Potts site of PottsModel.masked_site), got {type(task).__name__}")
    if mixture and task is not None:
        _checks.mixture(task.mixture, "task.mixture")
    if bayes:
        if multiclass:
            classes = task.mixture.K if mixture else getattr(task, "q", "q > 2")
            raise ValueError(f"the Bayes-optimal error takes a two-class (Ising) site or a Gaussian task; "
                             f"this site has K = {classes} classes (theory='gaussian' and 'mixture' alike)")
        if mixture:
            if channel is not None:
                raise ValueError(f"theory='mixture' has its own channel (the logit of the mixture's two "
                                 f"clusters); leave channel unset, got channel={channel!r}")
            return _served(Plan("bayes-mixture", entry))
        return _served(Plan("bayes", entry, channel=channels.resolve(channel, task)))
    if mixture or multiclass:
        if method not in (None, "general") or precision is not None or channel not in (
                None, getattr(task, "channel", None) if not mixture else None):
            what = "theory='mixture' is solved with the mixture's own channel side" if mixture else \
                "a multi-class site is solved by the multi-class theory"
            raise ValueError(f"{what}: method, precision and channel take their defaults")
        if mixture and multiclass:
            if loss not in (None, "cross_entropy"):
                raise ValueError(f"theory='mixture' of a multi-class site learns with loss='cross_entropy', "
                                 f"got {loss!r}")
            return _served(Plan("mixture-multiclass", entry))
        if multiclass:
            return _served(Plan("multiclass", entry, loss=loss))
        loss_obj = losses.resolve(default_loss(task) if loss is None else loss)
        return _served(Plan("mixture", entry, loss=loss_obj))
    if task is not None:
        spectrum_of(task)  # ValueError naming what a task of the scalar routes provides
    loss_obj = losses.resolve(default_loss(task) if loss is None and task is not None else loss)
    channel_obj = channels.resolve(channel, task)
    fast = loss_obj.is_square and channel_obj.name == "gaussian"
    route = method or ("root" if fast else "general")
    if route in ("root", "iterate") and not fast:
        raise ValueError(f"method {route!r} solves the square loss with the gaussian channel only; "
                         f"use method='general' (or None) for loss {loss_obj.name!r}, channel "
                         f"{channel_obj.name!r}")
    channels.check_pair(loss_obj, channel_obj)
    if precision is not None and route != "root":
        if not fast:
            raise ValueError("precision= is available for the square loss with the gaussian channel "
                             "only (the reduced closed forms); the general engine works in float64")
        raise ValueError("precision= works with method='root' and no options")
    return _served(Plan(route, entry, loss=loss_obj, channel=channel_obj, penalty=shaped))


def _dynamics(task, entry: str, loss, channel, mixture: bool, method, precision, penalty) -> Plan:
    """The ``"dynamics"`` route: Gaussian covariates of a spectral task with a loss and a channel of
    the registries; refused with one message for what it does not serve."""
    if method is not None or precision is not None or penalty is not None:
        what = "method=" if method is not None else "precision=" if precision is not None else "penalty="
        raise ValueError(f"{entry} works with the ridge and the route's own solvers (the 'dynamics' "
                         f"route): {what} is not available there; leave it unset")
    if mixture:  # one-pass SGD on a two-cluster mixture: its own channel (the label is the cluster)
        if entry not in ("online_sgd", "simulate_sgd"):
            raise ValueError(f"{entry} has no theory='mixture' (gradient flow is solved on Gaussian "
                             "covariates only)")
        if task is not None and getattr(getattr(task, "mixture", None), "K", None) != 2:
            raise ValueError(f"theory='mixture' of {entry} needs a task with a two-class Gaussian "
                             f"mixture (task.mixture: an Ising site of PottsModel.masked_site), got "
                             f"{type(task).__name__}")
        if channel is not None:
            raise ValueError(f"theory='mixture' has its own channel (the label is the cluster); leave "
                             f"channel unset, got channel={channel!r}")
        return _served(Plan("dynamics", entry, loss=losses.resolve("logistic" if loss is None else loss)))
    if is_multiclass(task) or (task is None and loss == "cross_entropy"):
        return _served(_dynamics_multiclass(task, entry, loss, channel))
    if task is not None:
        spectrum_of(task)
    loss_obj = losses.resolve(default_loss(task) if loss is None and task is not None else loss)
    channel_obj = channels.resolve(channel, task)
    channels.check_pair(loss_obj, channel_obj, general=False)
    return _served(Plan("dynamics", entry, loss=loss_obj, channel=channel_obj))


def _dynamics_multiclass(task, entry: str, loss, channel) -> Plan:
    """The ``"dynamics"`` route of a q-colour site: one-pass SGD with the softmax cross-entropy
    (docs/dynamics.md, section "A q-colour site"); the plan's loss and channel are their names.
    ``task`` None: no site in particular (the printed equations, ``loss="cross_entropy"``)."""
    if entry not in ("online_sgd", "simulate_sgd"):
        where = "" if task is None else f" (K = {task.K} logit directions)"
        raise ValueError(f"{entry} solves the square loss's flow on a task with one teacher direction; a "
                         f"multi-class site{where} has one-pass SGD only (rm.online_sgd, rm.simulate_sgd)")
    if task is not None and task.channel != "softmax":
        raise ValueError(f"{entry} of a multi-class site follows the softmax channel learnt with the "
                         f"cross-entropy; this site has the {task.channel!r} channel")
    if loss not in (None, "cross_entropy") or channel not in (None, "softmax"):
        raise ValueError(f"{entry} of a multi-class site learns with loss='cross_entropy' on its softmax "
                         f"channel (leave channel unset), got loss={loss!r}, channel={channel!r}")
    return Plan("dynamics", entry, loss="cross_entropy", channel="softmax")


def _served(p: Plan) -> Plan:
    served = ENTRY_ROUTES[p.entry]
    if p.route not in served:
        raise ValueError(f"{p.entry} serves the routes {', '.join(served)}; this task, loss, channel and "
                         f"theory take route {p.route!r} (rm.solve serves it point by point)")
    return p
