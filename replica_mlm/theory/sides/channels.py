"""Label channels P_out(y | nu) of the general replica engine, and their partition functions.

The teacher's field is ``nu = w* . x`` (variance ``rho``); the label is drawn from
``P_out(y | nu)``. With the student's field ``w = sqrt(q) xi``, the teacher's field is Gaussian
given ``xi`` with mean ``mu = (m / sqrt q) xi`` and variance ``v = rho - m^2/q``, and the channel
enters the hat equations only through

    Z(y; mu, v) = int N(nu; mu, v) P_out(y | nu) d nu,      dZ = d Z / d mu.

Each channel is a sympy expression for ``P_out``; ``Z`` is a sympy closed form where one exists
(``"gaussian"``, ``"sign"``; checked against the defining integral in the tests) and otherwise a
Gauss-Hermite quadrature over ``nu`` of the sympy ``P_out`` and its ``nu``-derivative
(``"logit"``: ``dZ = int N(nu; mu, v) dP_out/dnu d nu`` after an integration by parts). ``dZ`` of a
closed form is differentiated by sympy. See docs/theory.md, section "The general engine".

Channels
--------
``"gaussian"``  ``y = nu + sigma eps``: ``Z = N(y; mu, v + sigma^2)`` (real labels).
``"sign"``      ``y = sign(nu + sigma eps)``: ``Z = Phi(y mu / sqrt(v + sigma^2))``.
``"logit"``     ``P(y | nu) = 1 / (1 + exp(-y nu))``, no further noise.

``sigma^2`` is the task's label noise (``spectrum.noise``).

The named channels are built lazily: :func:`resolve` returns a :class:`Channel` that knows its
name and labels, and imports sympy (with :mod:`.symbolic`) only when its expressions are first
needed, so that naming the gaussian channel for the reduced solver needs no sympy. The symbols
``y``, ``nu``, ``mu``, ``v`` and ``noise`` are reachable as attributes of this module.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import sympy as sp

#: Gauss-Hermite nodes over nu for channels without a closed-form Z
NU_NODES = 64
LABELS = ("binary", "real")


def __getattr__(name: str):
    # the sympy symbols, without importing sympy with this module
    if name in ("y", "nu", "mu", "v"):
        from replica_mlm.theory.symbolic import expressions as symbolic
        return getattr(symbolic, name)
    if name == "noise":
        from replica_mlm.theory.symbolic import potentials
        return potentials.noise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _phi(x):
    import sympy as sp

    return (1 + sp.erf(x / sp.sqrt(2))) / 2


def _normal(x, mean, var):
    import sympy as sp

    return sp.exp(-((x - mean) ** 2) / (2 * var)) / sp.sqrt(2 * sp.pi * var)


class Channel:
    """A label channel: ``P_out(y | nu)`` and the partition function ``Z(y; mu, v)``.

    Parameters
    ----------
    name : str
    p_out : sympy.Expr
        ``P_out(y | nu)`` in the symbols ``y``, ``nu`` (and ``sigma^2``).
    labels : {"binary", "real"}
        ``y in {-1, +1}`` or ``y`` real.
    z_closed : sympy.Expr or None
        ``Z(y; mu, v)`` in closed form, or None for Gauss-Hermite quadrature over ``nu``.
    error : sympy.Expr or None
        The channel's natural error in closed form in ``(rho, sigma^2, m, q)``, or None to
        integrate ``P(y != sign(w_hat . x))`` numerically (binary labels only).
    """

    def __init__(self, name: str, p_out: sp.Expr, *, labels: str, z_closed: sp.Expr | None,
                 error: sp.Expr | None) -> None:
        if labels not in LABELS:
            raise ValueError(f"labels must be 'binary' or 'real', got {labels!r}")
        if labels == "real" and z_closed is None:
            raise ValueError("a real-label channel needs Z in closed form")
        self.name, self.labels = name, labels
        self._parts = (p_out, z_closed, error)

    @classmethod
    def lazy(cls, name: str, *, labels: str, build: Callable[[], tuple]) -> Channel:
        """A channel whose expressions ``build() = (p_out, z_closed, error)`` are made on first use.

        The name and the labels are known at once; sympy is needed only by ``build``.
        """
        if labels not in LABELS:
            raise ValueError(f"labels must be 'binary' or 'real', got {labels!r}")
        channel = cls.__new__(cls)
        channel.name, channel.labels, channel._build = name, labels, build
        return channel

    @cached_property
    def _parts(self) -> tuple:
        p_out, z_closed, error = self._build()
        if self.labels == "real" and z_closed is None:
            raise ValueError(f"channel {self.name!r}: a real-label channel needs Z in closed form")
        return p_out, z_closed, error

    @property
    def p_out(self) -> sp.Expr:
        """``P_out(y | nu)``, a sympy expression."""
        return self._parts[0]

    @property
    def z_closed(self) -> sp.Expr | None:
        """``Z(y; mu, v)`` in closed form (sympy), or None for quadrature over ``nu``."""
        return self._parts[1]

    @property
    def error(self) -> sp.Expr | None:
        """The natural error in closed form (sympy), or None."""
        return self._parts[2]

    def __repr__(self) -> str:
        return f"Channel({self.name!r})"

    @cached_property
    def dz_closed(self) -> sp.Expr | None:
        """``dZ/dmu`` by sympy (None without a closed-form Z)."""
        import sympy as sp

        from replica_mlm.theory.symbolic.expressions import mu

        return None if self.z_closed is None else sp.diff(self.z_closed, mu)

    @cached_property
    def gaussian_label(self) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
        """For real labels: ``(mean, variance, score)`` of Z as a density in y, by sympy.

        ``log Z`` must be quadratic in ``y``; ``score = dZ/Z = d log Z / d mu`` is then linear.
        """
        import sympy as sp

        from replica_mlm.theory.symbolic.expressions import mu, y

        log_z = sp.expand(sp.expand_log(sp.log(self.z_closed), force=True))
        poly = sp.Poly(log_z, y)
        if poly.degree() != 2:
            raise ValueError(f"real-label channel {self.name!r}: log Z is not quadratic in y")
        a2, a1 = poly.coeff_monomial(y**2), poly.coeff_monomial(y)
        var = sp.simplify(-1 / (2 * a2))
        mean = sp.simplify(a1 * var)
        score = sp.simplify(sp.diff(log_z, mu))
        if sp.simplify(mean - mu) != 0 or var.has(mu):
            raise ValueError(f"real-label channel {self.name!r}: y given the teacher's field must be "
                             f"Gaussian with mean mu and a variance free of mu, got {mean}, {var}")
        return mean, var, score

    def _numeric_expressions(self) -> dict:
        """``{name: (args, expression, cse)}`` of the channel's numerical functions (sympy)."""
        from replica_mlm.theory.symbolic import potentials as P
        from replica_mlm.theory.symbolic.expressions import mu, nu, v, y

        noise = P.noise
        if self.labels == "real":
            _, var, score = self.gaussian_label
            out = {"var": ((mu, v, noise), var, False), "score": ((y, mu, v, noise), score, False)}
        elif self.z_closed is not None:
            # Z and dZ/dmu in one function: their common subexpressions are evaluated once
            out = {"Z, dZ": ((y, mu, v, noise), [self.z_closed, self.dz_closed], True)}
        else:
            # P_out and dP_out/dnu in one function (for the logit channel Sigmoid(y nu) once)
            out = {"P, dP": ((y, nu, noise), [self.p_out, self.p_out.diff(nu)], True)}
        if self.error is not None:
            out["error"] = ((P.rho, noise, P.m, P.q), self.error, False)
        return out

    def _cache_key(self) -> str | None:
        """The name of the channel's numerical functions in the disk cache (the built-in channels),
        or None: derived in every process."""
        builtin = {"gaussian": _gaussian_parts, "sign": _sign_parts, "logit": _logit_parts}
        build = self.__dict__.get("_build")
        return f"channel:{self.name}" if build is not None and builtin.get(self.name) is build else None

    @cached_property
    def _numeric(self):
        key = self._cache_key()
        if key is None:
            from replica_mlm.theory.symbolic.expressions import lambdify
            return {k: lambdify(a, e, cse=c) for k, (a, e, c) in self._numeric_expressions().items()}
        from replica_mlm.theory.symbolic.compiled_cache import cached_functions

        def sources() -> dict:
            from replica_mlm.theory.symbolic.expressions import source
            return {k: source(a, e, cse=c) for k, (a, e, c) in self._numeric_expressions().items()}

        return cached_functions(key, sources)

    def partition(self, yv: float, muv: np.ndarray, vv: float, s2: float) -> tuple[np.ndarray, np.ndarray]:
        """``(Z, dZ/dmu)`` at the binary label ``yv`` and means ``muv``, variance ``vv``."""
        fns = self._numeric
        muv = np.asarray(muv, dtype=float)
        if "Z, dZ" in fns:
            zv, dz = fns["Z, dZ"](yv, muv, vv, s2)
            return np.broadcast_to(zv, muv.shape), np.broadcast_to(dz, muv.shape)
        nodes, weights = _hermite(NU_NODES)
        nus = muv[..., None] + np.sqrt(max(vv, 0.0)) * nodes
        pv, dp = fns["P, dP"](yv, nus, s2)
        return np.broadcast_to(pv, nus.shape) @ weights, np.broadcast_to(dp, nus.shape) @ weights

    def closed_error(self, rho: float, s2: float, m: float, q: float) -> float | None:
        """The natural error in closed form, or None if the channel has none."""
        fn = self._numeric.get("error")
        return None if fn is None else float(fn(rho, s2, m, q))


@cache
def _hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights normalised to E over N(0, 1)."""
    x, wts = np.polynomial.hermite_e.hermegauss(n)
    return x, wts / wts.sum()


def _gaussian_parts() -> tuple:
    from replica_mlm.theory.symbolic import potentials as P
    from replica_mlm.theory.symbolic.expressions import mu, nu, v, y

    return (_normal(y, nu, P.noise), _normal(y, mu, v + P.noise), P.rho + P.noise - 2 * P.m + P.q)


def _sign_parts() -> tuple:
    import sympy as sp

    from replica_mlm.theory.symbolic import potentials as P
    from replica_mlm.theory.symbolic.expressions import mu, nu, v, y

    return (_phi(y * nu / sp.sqrt(P.noise)), _phi(y * mu / sp.sqrt(v + P.noise)),
            sp.acos(P.m / sp.sqrt(P.q * (P.rho + P.noise))) / sp.pi)


def _logit_parts() -> tuple:
    from replica_mlm.theory.symbolic.expressions import Sigmoid, nu, y

    return Sigmoid(y * nu), None, None


def gaussian() -> Channel:
    """``y = nu + sigma eps`` (the masked-site regression)."""
    return Channel.lazy("gaussian", labels="real", build=_gaussian_parts)


def sign() -> Channel:
    """``y = sign(nu + sigma eps)`` (a binarised masked spin); classification error in closed form."""
    return Channel.lazy("sign", labels="binary", build=_sign_parts)


def logit() -> Channel:
    """``P(y | nu) = 1 / (1 + exp(-y nu))``; Z by Gauss-Hermite quadrature over nu."""
    return Channel.lazy("logit", labels="binary", build=_logit_parts)


NAMED = {"gaussian": gaussian, "sign": sign, "logit": logit}


@cache
def _default(key: str) -> Channel:
    return NAMED[key]()


def resolve(channel, task=None) -> Channel:
    """A :class:`Channel` from a name in :data:`NAMED`, a Channel, or None.

    None means the task's own channel (``task.channel``, e.g. ``"logit"`` for an Ising site),
    and ``"gaussian"`` for tasks without one (spectra, the thermodynamic limit).
    """
    if channel is None:
        return _default(getattr(task, "channel", "gaussian"))
    if isinstance(channel, Channel):
        return channel
    if isinstance(channel, str):
        key = channel.strip().lower()
        if key in NAMED:
            return _default(key)
        raise ValueError(f"unknown channel {channel!r}; known: {sorted(NAMED)}")
    raise TypeError(f"channel must be one of {sorted(NAMED)}, got {type(channel).__name__}")


def check_pair(loss, channel: Channel, *, lam: float | None = None, general: bool | None = None) -> None:
    """The one rule on which loss/channel pairs (and lam) the replica theory solves.

    * A loss that needs its own kind of labels (``loss.labels``: ``"binary"``, y = -1 or +1, for
      the logistic and hinge losses; None, any labels, for the others and by default for a
      custom loss) needs a channel with those labels (``"sign"`` or ``"logit"`` for binary ones).
    * lam = 0 (the Moore-Penrose limit) is solved by the reduced solver only, i.e. for the square
      loss with the gaussian channel: the general engine needs lam > 0. ``general`` says whether
      the general engine solves the point (default: unless the pair is square/gaussian).

    :func:`replica_mlm.solve`, :func:`replica_mlm.learning_curve`, the general engine, the
    simulations (the labels) and the command line (as a usage error) all call this.

    Parameters
    ----------
    loss : replica_mlm.theory.sides.losses.Loss
    channel : Channel
    lam : float, optional
        Checked only if given.
    general : bool, optional

    Raises
    ------
    ValueError
        Naming the loss, the channel and what is allowed.
    """
    need = getattr(loss, "labels", None)
    if need is not None and need != channel.labels:
        fits = " or ".join(repr(n) for n in NAMED if _default(n).labels == need)
        what = "binary labels in {-1, +1}" if need == "binary" else f"{need} labels"
        raise ValueError(f"the {loss.name} loss needs {what}: use channel {fits}, not {channel.name!r}")
    if lam is None:
        return
    if general is None:
        general = not (loss.is_square and channel.name == "gaussian")
    if general and not lam > 0:
        raise ValueError(f"lam must be > 0 for the general engine (loss {loss.name!r}, channel "
                         f"{channel.name!r}), got {lam}; lam = 0 is available for the square loss "
                         "with the gaussian channel only")
