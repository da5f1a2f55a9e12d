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

:func:`run_tasks` is the one runner on top of it: independent :class:`Task` objects in this process
or in a pool, each under a BLAS-thread limit, results in the order of the tasks (the validation
sections, the sweep). Only the standard library and the base layer (``_checks``, ``_threads``):
every layer may import it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from replica_mlm._base import checks as _checks
from replica_mlm._base.threads import INHERIT, blas_threads, resolve_threads

__all__ = ["POLL_SECONDS", "Task", "process_pool", "run_tasks"]

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


# ---------------------------------------------------------------------- the one task runner
@dataclass(frozen=True)
class Task:
    """One call ``func(*args, **kwargs)``; ``func`` must be a module-level (picklable) function."""

    func: Callable[..., Any]
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def _run(task: Task, threads: int | None) -> Any:
    with blas_threads(threads):
        return task.func(*task.args, **task.kwargs)


def run_tasks(tasks: Sequence[Task], *, workers: int = 1, threads: Any = INHERIT,
              on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
    """Run ``tasks`` in this process (``workers=1``) or in a pool of ``workers`` processes.

    Every task should carry its own seed or generator: then its result does not depend on which
    process runs it or in which order, and ``workers=1`` and ``workers=2`` give the same numbers
    bit for bit.

    Parameters
    ----------
    tasks : sequence of Task
        Submitted in this order (put the longest first: the pool starts them in order).
    workers : int
        Worker processes (at most one per task is started; one task or ``workers=1`` runs here).
    threads : int, None or INHERIT
        BLAS / OpenMP threads of each task (:func:`replica_mlm._base.threads.blas_threads`): by default
        the enclosing limit of the caller (one thread outside any), so ``workers`` processes use
        ``workers`` cores; ``None`` leaves the libraries' own setting.
    on_result : callable, optional
        ``on_result(k, result)`` in the calling process as soon as task ``k`` has finished (in the
        order they finish), e.g. to write each result or advance a progress bar.

    Returns
    -------
    list
        The tasks' results, in the order of ``tasks`` whatever the order they finished in.

    Raises
    ------
    TypeError, ValueError
        If ``workers`` is not an int >= 1, ``threads`` is not a thread count, or a task is not a
        :class:`Task`.
    Exception
        The first task's exception to arrive: the tasks not yet started are cancelled, the running
        ones end first (and still reach ``on_result``).
    """
    workers = _checks.positive_int(workers, "workers")
    for k, task in enumerate(tasks):
        if not isinstance(task, Task):
            raise TypeError(f"tasks[{k}] must be a replica_mlm._base.pool.Task, got {type(task).__name__}")
    threads = resolve_threads(threads)
    results: list[Any] = [None] * len(tasks)
    if workers == 1 or len(tasks) <= 1:
        for k, task in enumerate(tasks):
            results[k] = _run(task, threads)
            if on_result is not None:
                on_result(k, results[k])
        return results
    error = None
    with process_pool(min(workers, len(tasks))) as pool:
        pending = {pool.submit(_run, task, threads): k for k, task in enumerate(tasks)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                k = pending.pop(fut)
                if fut.cancelled():
                    continue
                exc = fut.exception()
                if exc is not None:
                    if error is None:  # no new task starts; the running ones finish
                        error = exc
                        for other in pending:
                            other.cancel()
                    continue
                results[k] = fut.result()
                if on_result is not None:
                    on_result(k, results[k])
    if error is not None:
        raise error
    return results
