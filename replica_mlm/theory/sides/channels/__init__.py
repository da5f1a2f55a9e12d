"""Label channels of the replica theory and of the simulations: the one registry of their names.

A channel (:class:`Channel`, in :mod:`.label_channel`) carries its theory -- ``P_out(y | nu)`` and
the partition function ``Z(y; mu, v)`` of docs/theory.md, section "The general engine" -- and its
label sampler (:meth:`Channel.sample`, the labels of docs/theory.md, section "Separability and ERM
simulations"). Reached as ``rm.channels``.

Channels
--------
``"gaussian"``  ``y = nu + sigma eps``: ``Z = N(y; mu, v + sigma^2)`` (real labels).
``"sign"``      ``y = sign(nu + sigma eps)``: ``Z = Phi(y mu / sqrt(v + sigma^2))``.
``"logit"``     ``P(y | nu) = 1 / (1 + exp(-y nu))``, no further noise.

``sigma^2`` is the task's label noise (``spectrum.noise``).

:data:`NAMED` is the only list of channel names: :func:`rm.solve <replica_mlm.solve>`,
:func:`rm.learning_curve <replica_mlm.learning_curve>`, :func:`rm.simulate <replica_mlm.simulate>`,
the separability threshold and the command line (``--channel``) all resolve names through
:func:`resolve`, so an unknown name gets the same message everywhere. A new built-in channel is
one file beside this one (``<name>_channel.py`` with ``NAME`` and ``channel()``, e.g.
``sign_channel.py``: its sympy ``P_out``, ``Z`` if in closed form, and its sampler) and its name in
:data:`BUILT_IN`; a channel of one's own is a ``Channel(name, p_out, labels=...)`` passed
wherever a channel name is (docs/architecture.md, "Where new code goes").

The built-in channels are lazy: naming one imports sympy (with :mod:`..symbolic`) only when its
expressions are first needed, so that naming the gaussian channel for the reduced solver needs no
sympy. The symbols ``y``, ``nu``, ``mu``, ``v`` and ``noise`` are reachable as attributes of this
module.
"""

from __future__ import annotations

import importlib
from functools import cache

from replica_mlm.theory.sides.channels.label_channel import LABELS, NU_NODES, Channel, Sampler, hermite

#: the built-in channels, in the order they are listed: channel ``x`` is the module ``x_channel.py``
#: beside this file (``NAME = "x"``, ``channel()`` makes it); a new one is its file and its name here
BUILT_IN = ("gaussian", "sign", "logit")
#: the registry: channel name -> the function making the channel
NAMED = {name: importlib.import_module(f"{__name__}.{name}_channel").channel for name in BUILT_IN}


def __getattr__(name: str):
    # the sympy symbols, without importing sympy with this module
    if name in ("y", "nu", "mu", "v"):
        from replica_mlm.theory.symbolic import expressions as symbolic
        return getattr(symbolic, name)
    if name == "noise":
        from replica_mlm.theory.symbolic import potentials
        return potentials.noise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def names() -> tuple[str, ...]:
    """The names of the built-in channels, in the order of :data:`NAMED`."""
    return tuple(NAMED)


@cache
def _default(key: str) -> Channel:
    return NAMED[key]()


def registered(channel: Channel) -> bool:
    """Whether ``channel`` is the registry's own object for its name (a channel of one's own, even
    with a built-in name, is not)."""
    return channel.name in NAMED and channel is _default(channel.name)


def _choices() -> str:
    return ", ".join(repr(n) for n in NAMED)


def resolve(channel, task=None) -> Channel:
    """A :class:`Channel` from a name in :data:`NAMED`, a Channel, or None.

    None means the task's own channel (``task.channel``, a name or a Channel, e.g. ``"logit"``
    for an Ising site), and ``"gaussian"`` for tasks without one (spectra, the thermodynamic
    limit). A task's own channel that does not use the label noise (:attr:`Channel.uses_noise`,
    e.g. ``"logit"``) needs the task's noise to be 0.

    This is the one place an unknown channel is refused: the message is the same from every
    entry point (the functions of ``rm`` and the command line).

    Raises
    ------
    ValueError
        ``unknown channel 'x': channel must be one of 'gaussian', 'sign', 'logit' or a
        rm.channels.Channel``; or a task's own channel that does not use its nonzero noise.
    TypeError
        For anything but a str, a Channel or None.
    """
    if channel is None and task is not None and getattr(task, "channel", None) is not None:
        own = resolve(task.channel)
        noise = getattr(task, "noise", 0.0)
        if not own.uses_noise and noise != 0:
            raise ValueError(f"the {own.name} channel has no extra label noise: the task's noise must "
                             f"be 0, got {noise}")
        return own
    if channel is None:
        return _default("gaussian")
    if isinstance(channel, Channel):
        return channel
    if isinstance(channel, str):
        key = channel.strip().lower()
        if key in NAMED:
            return _default(key)
        raise ValueError(f"unknown channel {channel!r}: channel must be one of {_choices()} or a "
                         "rm.channels.Channel")
    raise TypeError(f"channel must be one of {_choices()} or a rm.channels.Channel, got "
                    f"{type(channel).__name__}")


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


__all__ = ["BUILT_IN", "LABELS", "NAMED", "NU_NODES", "Channel", "Sampler", "check_pair", "hermite",
           "names", "registered", "resolve"]
