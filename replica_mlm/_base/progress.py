"""Progress bars of long calls: tqdm on stderr, shown by default only when stderr is a terminal.

Every call that can take more than a few seconds takes ``progress=`` (None: a bar when stderr is
a terminal, so logs and pipes stay clean; True: always; False: never) and draws its bar with
:func:`bar`. The sweeps of :mod:`replica_mlm._base.sweep` follow the same rule.
"""

from __future__ import annotations

import sys

__all__ = ["bar", "shown"]


def shown(progress) -> bool:
    """Whether to draw a bar: ``progress`` if True or False, else whether stderr is a terminal.

    TypeError for anything but None, True or False (naming ``progress``).
    """
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty and isatty())
    if progress is True or progress is False:
        return progress
    raise TypeError(f"progress must be True, False or None (a bar when stderr is a terminal), "
                    f"got {type(progress).__name__}")


def bar(iterable=None, *, progress, desc: str, total: int | None = None, unit: str = "it"):
    """A tqdm bar on stderr over ``iterable`` (or to ``update`` by hand), closed when done; a
    disabled bar (no output, almost no cost) where :func:`shown` is False."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=False, file=sys.stderr,
                disable=not shown(progress))
