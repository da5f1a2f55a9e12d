"""The label channel: ``P_out(y | nu)``, its partition function ``Z(y; mu, v)`` and its sampler.

The teacher's field is ``nu = w* . x`` (variance ``rho``); the label is drawn from
``P_out(y | nu)``. With the student's field ``w = sqrt(q) xi``, the teacher's field is Gaussian
given ``xi`` with mean ``mu = (m / sqrt q) xi`` and variance ``v = rho - m^2/q``, and the channel
enters the hat equations only through

    Z(y; mu, v) = int N(nu; mu, v) P_out(y | nu) d nu,      dZ = d Z / d mu.

A channel is a sympy expression for ``P_out``; ``Z`` is a sympy closed form where one exists
(``"gaussian"``, ``"sign"``; checked against the defining integral in the tests) and otherwise a
Gauss-Hermite quadrature over ``nu`` of the sympy ``P_out`` and its ``nu``-derivative
(``"logit"``: ``dZ = int N(nu; mu, v) dP_out/dnu d nu`` after an integration by parts). ``dZ`` of a
closed form is differentiated by sympy. See docs/theory.md, section "The general engine".

The same object draws the labels of the simulations (:meth:`Channel.sample`, docs/theory.md,
section "Separability and ERM simulations"), so that whatever the theory solves can also be
simulated. The built-in channels (one file each beside this one, registered in
:mod:`replica_mlm.theory.sides.channels`) give their own samplers; a channel built from sympy
gets one derived from its ``P_out`` (see :class:`Channel`).
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
#: a label sampler: ``sampler(nu, noise, rng) -> labels`` (see :meth:`Channel.sample`)
Sampler = Callable[[np.ndarray, float, np.random.Generator], np.ndarray]


def phi(x):
    """The standard normal CDF as a sympy expression."""
    import sympy as sp

    return (1 + sp.erf(x / sp.sqrt(2))) / 2


def normal(x, mean, var):
    """The normal density ``N(x; mean, var)`` as a sympy expression."""
    import sympy as sp

    return sp.exp(-((x - mean) ** 2) / (2 * var)) / sp.sqrt(2 * sp.pi * var)


class Channel:
    """A label channel: ``P_out(y | nu)``, the partition function ``Z(y; mu, v)`` and a sampler.

    One object carries both the theory (docs/theory.md, section "The general engine": the channel
    enters the hat equations through ``Z`` and ``dZ/dmu``) and the labels of the simulations
    (:meth:`sample`, docs/theory.md, section "Separability and ERM simulations"), so that
    :func:`replica_mlm.solve` and :func:`replica_mlm.simulate` accept the same channels.

    Parameters
    ----------
    name : str
    p_out : sympy.Expr
        ``P_out(y | nu)`` in the symbols ``y``, ``nu`` (and ``sigma^2``:
        ``rm.channels.y``, ``rm.channels.nu``, ``rm.channels.noise``).
    labels : {"binary", "real"}
        ``y in {-1, +1}`` or ``y`` real.
    z_closed : sympy.Expr or None, optional
        ``Z(y; mu, v)`` in closed form (symbols ``rm.channels.mu``, ``rm.channels.v``), or None
        (default) for Gauss-Hermite quadrature over ``nu`` (binary labels only).
    error : sympy.Expr or None, optional
        The channel's natural error in closed form in ``(rho, sigma^2, m, q)``, or None (default)
        to integrate ``P(y != sign(w_hat . x))`` numerically (binary labels only).
    sampler : callable or None, optional
        ``sampler(nu, noise, rng) -> labels`` (see :meth:`sample`), or None (default) for the
        sampler derived from ``p_out``:

        * binary labels: ``y = +1`` with probability ``P_out(+1 | nu)`` (``p_out`` lambdified;
          one uniform draw per sample), after checking that ``P_out(+1 | nu) + P_out(-1 | nu) = 1``
          and that it lies in [0, 1] on a grid of ``nu``;
        * real labels: the theory already requires ``Z(y; mu, v)`` to be the normal density
          ``N(y; mu, V(v, sigma^2))`` (:attr:`gaussian_label`), so ``P_out(y | nu) = Z(y; nu, 0)``
          and ``y = nu + sqrt(V(0, sigma^2)) eps`` with one normal draw per sample -- exact, no
          inverse CDF.

    Examples
    --------
    A probit channel whose labels are flipped with probability 0.1 (binary labels, Z by
    quadrature, a derived sampler)::

        import sympy as sp, replica_mlm as rm
        ch = rm.channels
        p_plus = sp.Rational(1, 10) + sp.Rational(8, 10) * (1 + sp.erf(ch.nu / sp.sqrt(2))) / 2
        flip = ch.Channel("probit-flip", (1 + ch.y) / 2 * p_plus + (1 - ch.y) / 2 * (1 - p_plus),
                          labels="binary")
        rm.solve(task, alpha=2.0, lam=0.1, loss="logistic", channel=flip)
        rm.simulate(task, alpha=2.0, lam=0.1, loss="logistic", channel=flip, seeds=8)
    """

    def __init__(self, name: str, p_out: sp.Expr, *, labels: str, z_closed: sp.Expr | None = None,
                 error: sp.Expr | None = None, sampler: Sampler | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str, got {name!r}")
        if labels not in LABELS:
            raise ValueError(f"labels must be 'binary' or 'real', got {labels!r}")
        if labels == "real" and z_closed is None:
            raise ValueError("a real-label channel needs Z in closed form")
        if sampler is not None and not callable(sampler):
            raise TypeError(f"sampler must be callable as sampler(nu, noise, rng), got "
                            f"{type(sampler).__name__}")
        self.name, self.labels, self._sampler, self.cache_name = name, labels, sampler, None
        self._parts = (p_out, z_closed, error)

    @classmethod
    def lazy(cls, name: str, *, labels: str, build: Callable[[], tuple], sampler: Sampler,
             uses_noise: bool, cache_name: str | None = None) -> Channel:
        """A channel whose expressions ``build() = (p_out, z_closed, error)`` are made on first use.

        The name, the labels and the sampler are known at once; sympy is needed only by ``build``
        (the built-in channels are made so, and the reduced solver then needs no sympy).
        ``uses_noise`` says whether ``P_out`` depends on the label noise sigma^2 (see
        :attr:`uses_noise`); ``cache_name`` names the numerical functions in the disk cache of
        :mod:`replica_mlm.theory.symbolic.compiled_cache` (built-in channels only: a user's channel
        derives them in every process).
        """
        if labels not in LABELS:
            raise ValueError(f"labels must be 'binary' or 'real', got {labels!r}")
        channel = cls.__new__(cls)
        channel.name, channel.labels, channel._build = name, labels, build
        channel._sampler, channel.cache_name = sampler, cache_name
        channel.__dict__["uses_noise"] = bool(uses_noise)
        return channel

    def sample(self, nu, noise: float, rng: np.random.Generator) -> np.ndarray:
        """Labels ``y ~ P_out(y | nu)``, one per teacher field.

        Parameters
        ----------
        nu : array_like
            The teacher's fields ``w* . x``.
        noise : float
            The task's label noise sigma^2 (>= 0; a channel that does not use it ignores it).
        rng : numpy.random.Generator
            Every random draw comes from it, so that a seed fixes the labels.

        Returns
        -------
        ndarray, the shape of ``nu``
            In {-1.0, +1.0} for binary labels, real otherwise.
        """
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        nu = np.asarray(nu, dtype=float)
        sampler = self._sampler if self._sampler is not None else self._derived_sampler
        return np.asarray(sampler(nu, float(noise), rng), dtype=float)

    @cached_property
    def _derived_sampler(self) -> Sampler:
        """The sampler derived from ``P_out`` (see the class docstring)."""
        if self.labels == "real":
            var = self._numeric["var"]

            def real(nu, noise, rng):
                s2 = float(np.broadcast_to(var(0.0, 0.0, noise), ()))
                return nu + np.sqrt(s2) * rng.standard_normal(nu.shape)

            return real
        from replica_mlm.theory.symbolic.expressions import lambdify, nu, y
        from replica_mlm.theory.symbolic.potentials import noise as sigma2

        plus = lambdify((nu, sigma2), self.p_out.subs(y, 1))
        minus = lambdify((nu, sigma2), self.p_out.subs(y, -1))
        checked: set[float] = set()

        def binary(nus, noise, rng):
            if noise not in checked:
                grid = np.linspace(-8.0, 8.0, 33)
                a = np.broadcast_to(plus(grid, noise), grid.shape)
                b = np.broadcast_to(minus(grid, noise), grid.shape)
                if not (np.all(np.isfinite(a)) and np.all((a >= 0) & (a <= 1))
                        and np.allclose(a + b, 1.0, rtol=0, atol=1e-9)):
                    raise ValueError(f"channel {self.name!r}: P_out(+1 | nu) + P_out(-1 | nu) must be 1, "
                                     f"with P_out(+1 | nu) in [0, 1], to draw labels from it (at "
                                     f"sigma^2 = {noise:g}); pass sampler= to draw them otherwise")
                checked.add(noise)
            prob = np.broadcast_to(plus(nus, noise), nus.shape)
            return np.where(rng.random(nus.shape) < prob, 1.0, -1.0)

        return binary

    @cached_property
    def uses_noise(self) -> bool:
        """Whether ``P_out`` depends on the label noise sigma^2: a task whose own channel does not
        (e.g. ``"logit"``) must have noise 0 (:func:`replica_mlm.theory.sides.channels.resolve`)."""
        from replica_mlm.theory.symbolic.potentials import noise

        return bool(self.p_out.has(noise))

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

    @cached_property
    def _numeric(self):
        key = self.cache_name
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
        nodes, weights = hermite(NU_NODES)
        nus = muv[..., None] + np.sqrt(max(vv, 0.0)) * nodes
        pv, dp = fns["P, dP"](yv, nus, s2)
        return np.broadcast_to(pv, nus.shape) @ weights, np.broadcast_to(dp, nus.shape) @ weights

    def closed_error(self, rho: float, s2: float, m: float, q: float) -> float | None:
        """The natural error in closed form, or None if the channel has none."""
        fn = self._numeric.get("error")
        return None if fn is None else float(fn(rho, s2, m, q))


@cache
def hermite(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights normalised to E over N(0, 1)."""
    x, wts = np.polynomial.hermite_e.hermegauss(n)
    return x, wts / wts.sum()
