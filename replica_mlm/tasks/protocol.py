"""What a learning task provides: the protocol :func:`replica_mlm.solve` and
:func:`replica_mlm.simulate` dispatch through.

Every task names its label channel and the loss it is learnt with by default (:class:`Task`).
What else it provides says what can be done with it (its capabilities):

* :class:`SpectralTask` -- a :class:`~replica_mlm.tasks.spectrum.Spectrum` (eigenvalues of Sigma
  with bulk and teacher weights, and the label noise): the scalar replica theory (the reduced
  solver for the square loss with the gaussian channel, the general engine otherwise) solves it.
  :class:`~replica_mlm.tasks.masked_site.MaskedSite` (also the Ising site of
  :func:`~replica_mlm.tasks.ising_site.ising_site`), :class:`~replica_mlm.tasks.spectrum.Spectrum`
  and :class:`~replica_mlm.tasks.gaussian_potts_limit.GaussianPottsLimit`.
* :class:`MulticlassTask` -- a multi-class Gaussian-covariate site with K logit directions: the
  multi-class theory solves it (docs/multiclass.md). :class:`~replica_mlm.tasks.potts_site.PottsSite`.
* :class:`DrawnTask` -- a finite task that draws training sets and scores a fit exactly:
  :func:`replica_mlm.simulate` trains on its draws. :class:`~replica_mlm.tasks.masked_site.MaskedSite`.

A new kind of task is one class that provides these attributes; nothing in the package needs to
know its type. (A :class:`~replica_mlm.PottsModel` is not a task: ``model.masked_site(i)`` is one,
and ``simulate`` learns a site of a model from its Boltzmann samples.)
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from replica_mlm.tasks.spectrum import Spectrum


@runtime_checkable
class Task(Protocol):
    """What every task provides.

    Attributes
    ----------
    channel : str or rm.channels.Channel
        The label channel: a name of the registry ``rm.channels.names()`` or a channel of one's
        own (scalar labels), or ``"softmax"`` (classes of a multi-class site).
    default_loss : str
        Name of the loss its theory and simulations use when none is named: ``"square"`` for a
        Gaussian site, ``"cross_entropy"`` for a multi-class site with the softmax channel.
    """

    @property
    def channel(self) -> str: ...

    @property
    def default_loss(self) -> str: ...


@runtime_checkable
class SpectralTask(Task, Protocol):
    """A task the scalar replica theory solves: it has a :class:`Spectrum`.

    Attributes
    ----------
    spectrum : Spectrum
        Modes of Sigma with bulk and teacher weights, and the label noise: all the theory reads.
    """

    @property
    def spectrum(self) -> Spectrum: ...


@runtime_checkable
class MulticlassTask(Task, Protocol):
    """A multi-class site ``x ~ N(0, Sigma)`` in R^d with teacher field ``nu = W*^T x + b*`` in R^K,
    what the multi-class theory solves (docs/multiclass.md).

    Attributes
    ----------
    K : int
        Logit directions (``q - 1`` for the softmax channel over q classes).
    p : int
        Normalisation of the conventions (``alpha = M / p``, ridge ``(lam p / 2) |W|_F^2``).
    modes : tuple of ndarray
        ``(omega, theta)``: eigenvalues of Sigma (d,) and the teacher rows in its eigenbasis (d, K).
    bias : ndarray, shape (K,)
        ``b*``.
    noise : float
        Label noise variance of the gaussian channel.
    symmetric : bool
        Invariance under the colour permutations (every order parameter a multiple of I_K).
    """

    @property
    def K(self) -> int: ...

    @property
    def modes(self) -> tuple[np.ndarray, np.ndarray]: ...

    @property
    def symmetric(self) -> bool: ...


@runtime_checkable
class DrawnTask(Task, Protocol):
    """A finite task whose training sets can be drawn and whose fits can be scored exactly.

    ``draw`` may return the inputs in any orthonormal basis of its own (e.g. the eigenbasis of
    Sigma, which saves the rotation): ``measures`` then reads weights in the same basis. Every
    quantity of a linear fit (``w . x``, ``|w|^2``, ``(w - w*)^T Sigma (w - w*)``) is invariant
    under such a rotation.

    Attributes
    ----------
    p : int
        Number of inputs.
    rho, noise : float
        Teacher signal ``w*^T Sigma w*`` and label noise variance sigma^2.
    """

    @property
    def p(self) -> int: ...

    @property
    def rho(self) -> float: ...

    @property
    def noise(self) -> float: ...

    def draw(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` inputs ``x`` (n, p) drawn from ``rng`` and the teacher's field ``nu = w* . x``
        (n,); the channel draws the labels from the field next, from the same ``rng``
        (``channel.sample(nu, noise, rng)``)."""
        ...

    def measures(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Exact test measures of weights (p, k) in the basis of :meth:`draw`: overlaps ``m``
        (``w*^T Sigma w``), ``q`` (``w^T Sigma w``), ``error`` (``sigma^2 + (w - w*)^T Sigma
        (w - w*)``) and ``estimation_error`` (``|w - w*|^2``), each of shape (k,)."""
        ...


def spectrum_of(task) -> Spectrum:
    """The :class:`Spectrum` of a task (a MaskedSite, a thermodynamic limit or a Spectrum)."""
    spec = getattr(task, "spectrum", None)
    if not isinstance(spec, Spectrum):
        raise ValueError(
            "task must be a MaskedSite, a GaussianPotts limit or a Spectrum (anything with a "
            f"`.spectrum` attribute), got {type(task).__name__}"
        )
    return spec


__all__ = ["DrawnTask", "MulticlassTask", "SpectralTask", "Task", "spectrum_of"]
