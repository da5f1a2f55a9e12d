"""The package's one process pool: a ProcessPoolExecutor whose workers die with their parent.

A plain :class:`concurrent.futures.ProcessPoolExecutor` outlives a parent killed by ``SIGKILL``
(or the OOM killer): its workers keep computing, for minutes, for no one. :func:`process_pool`
gives every worker an initializer that ties it to the process that created the pool:

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` (through ctypes): the kernel kills the worker
  when its parent dies. Then the worker checks that its parent is still the pool's creator
  (``os.getppid()``): a parent that died before the ``prctl`` call would otherwise go unnoticed;
* elsewhere (or if ``prctl`` is unavailable), a daemon thread in the worker polls
  ``os.getppid()`` every :data:`POLL_SECONDS` and ends the worker when the parent has changed.

With the ``forkserver`` start method (Python 3.14's default on Linux) the worker's parent is the
fork server, which may outlive the pool's creator: the thread then polls the creator's pid
(``os.kill(pid, 0)``; a zombie counts as dead) as well.

Caveat of ``PR_SET_PDEATHSIG``: it fires when the *thread* that started the worker ends. Create
and use a pool in one thread that outlives it (as every ``with process_pool(...)`` block does).

Only the standard library: every layer (the sweep, the validation sections) may import it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

__all__ = ["POLL_SECONDS", "process_pool"]

#: seconds between two looks at the parent by the fallback watcher thread
POLL_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def process_pool(max_workers: int, *, mp_context: Any = None, initializer: Callable | None = None,
                 initargs: tuple = ()) -> ProcessPoolExecutor:
    """A :class:`~concurrent.futures.ProcessPoolExecutor` whose workers exit when this process dies.

    Parameters
    ----------
    max_workers : int
        Worker processes.
    mp_context : multiprocessing context, optional
        As for ``ProcessPoolExecutor`` (default: the platform's start method).
    initializer, initargs
        As for ``ProcessPoolExecutor``: run in each worker after it has been tied to its parent.

    Returns
    -------
    concurrent.futures.ProcessPoolExecutor
    """
    if mp_context is None:
        mp_context = multiprocessing.get_context()  # what ProcessPoolExecutor itself would take
    # fork, spawn: each worker is this process's child; forkserver: the fork server's child
    direct = mp_context.get_start_method() in ("fork", "spawn")
    return ProcessPoolExecutor(max_workers=max_workers, mp_context=mp_context, initializer=_init_worker,
                               initargs=(os.getpid(), direct, initializer, tuple(initargs)))


def _init_worker(creator: int, direct: bool, initializer: Callable | None, initargs: tuple) -> None:
    _die_with_creator(creator, direct)
    if initializer is not None:
        initializer(*initargs)


def _die_with_creator(creator: int, direct: bool) -> None:
    """Tie this worker to the pool's creator (``direct``: the creator is this worker's parent)."""
    armed = _prctl_pdeathsig()
    if not _creator_alive(creator, direct):  # it died before prctl: no signal will come
        os._exit(1)
    if not armed or not direct:  # (the fork server may outlive the creator)
        threading.Thread(target=_watch, args=(creator, direct), name="replica_mlm-parent-watch",
                         daemon=True).start()


def _prctl_pdeathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _creator_alive(creator: int, direct: bool) -> bool:
    if direct:
        return os.getppid() == creator
    try:
        os.kill(creator, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed creator stays a zombie until its own parent reaps it
        with open(f"/proc/{creator}/stat", "rb") as fh:
            return fh.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _watch(creator: int, direct: bool) -> None:
    while _creator_alive(creator, direct):
        time.sleep(POLL_SECONDS)
    os._exit(1)
