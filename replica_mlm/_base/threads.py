"""BLAS / OpenMP threads of simulations and sweeps, limited in a scope (never process-wide).

Default: **one BLAS thread** per process. The work of a simulation is many small LAPACK calls
(one SVD per training set, p of a few hundred); with several BLAS threads they spend their time
synchronising, and on a busy 2-core machine ``rm.simulate`` of the README took 400 s with the
library's default thread count against 12 s with one thread. Parallelism comes from
``workers=`` (processes), each with its own single BLAS thread, so ``workers`` does not multiply
threads.

:func:`blas_threads` limits the threads with ``threadpoolctl.threadpool_limits`` for the duration
of a ``with`` block and restores them afterwards. The value in force is remembered in a context
variable, so a call with ``threads=INHERIT`` inside a scope (e.g. ``rm.simulate`` called by a
sweep point) keeps the sweep's setting instead of resetting it.
"""

from __future__ import annotations

import contextlib
import contextvars
import numbers
from collections.abc import Iterator

from replica_mlm._base import checks as _checks

__all__ = ["DEFAULT_THREADS", "INHERIT", "MAX_THREADS", "blas_threads", "resolve_threads", "thread_count"]

#: BLAS threads when no one says otherwise (see the module docstring for why it is 1)
DEFAULT_THREADS = 1
#: most threads a call may ask for: BLAS, OpenMP and torch take a C int, and threads beyond the
#: machine's cores only oversubscribe it (1024 is more cores than any machine this runs on)
MAX_THREADS = 1024
_WHY = f"the allowed range is 1 to {MAX_THREADS}: more threads than cores only oversubscribe the machine"


class _Inherit:
    def __repr__(self) -> str:
        return "INHERIT"


#: ``threads=INHERIT``: the enclosing :func:`blas_threads` scope's setting, else DEFAULT_THREADS
INHERIT = _Inherit()

_UNSET = object()
_scope: contextvars.ContextVar = contextvars.ContextVar("replica_mlm_blas_threads", default=_UNSET)


def resolve_threads(threads, name: str = "threads") -> int | None:
    """Check ``threads`` and resolve :data:`INHERIT`.

    Returns
    -------
    int or None
        A thread count >= 1, or ``None`` for "leave the current setting" (the BLAS libraries' own
        default outside any limit).

    Raises
    ------
    TypeError, ValueError
        If ``threads`` is not INHERIT, None or an int in ``[1, MAX_THREADS]``.
    """
    if threads is INHERIT:
        current = _scope.get()
        return DEFAULT_THREADS if current is _UNSET else current
    if threads is None:
        return None
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
        raise TypeError(f"{name} must be an int >= 1 or None (the BLAS default), got {threads!r}")
    if threads < 1:
        raise ValueError(f"{name} must be an int >= 1 or None (the BLAS default), got {threads!r}")
    _checks.at_most(threads, MAX_THREADS, name, _WHY)
    return int(threads)


def thread_count(threads, name: str = "threads") -> int:
    """A thread count: an int in ``[1, MAX_THREADS]`` (TypeError for anything but an int)."""
    n = _checks.positive_int(threads, name)
    _checks.at_most(n, MAX_THREADS, name, _WHY)
    return n


@contextlib.contextmanager
def blas_threads(threads=INHERIT) -> Iterator[int | None]:
    """Limit BLAS / OpenMP threads to ``threads`` inside the block (``None``: leave them as they are).

    Yields the resolved count. Nested scopes work as expected; the previous limits are restored
    on exit.
    """
    resolved = resolve_threads(threads)
    token = _scope.set(resolved)
    try:
        if resolved is None:
            yield None
        else:
            from threadpoolctl import threadpool_limits

            with threadpool_limits(limits=resolved):
                yield resolved
    finally:
        _scope.reset(token)
