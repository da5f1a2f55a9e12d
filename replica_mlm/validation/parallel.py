"""Independent pieces of a validation section in worker processes, results in a fixed order.

A section whose work falls into independent pieces (one ERM simulation per alpha, one training run
per configuration of a scan) lists them as :class:`Task` objects and calls :func:`run_tasks`. Every
task carries its own seed or generator, so its result does not depend on which process runs it or
in which order: ``workers=1`` and ``workers=2`` give the same numbers bit for bit. Each task runs
under the enclosing BLAS-thread limit (:func:`replica_mlm._threads.blas_threads`, default one
thread), so ``workers`` processes use ``workers`` cores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from replica_mlm import _checks
from replica_mlm._threads import INHERIT, blas_threads, resolve_threads

__all__ = ["Task", "run_tasks"]


@dataclass(frozen=True)
class Task:
    """One call ``func(*args, **kwargs)``; ``func`` must be a module-level (picklable) function."""

    func: Callable[..., Any]
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def _run(task: Task, threads: int | None) -> Any:
    with blas_threads(threads):
        return task.func(*task.args, **task.kwargs)


def run_tasks(tasks: Sequence[Task], *, workers: int = 1) -> list[Any]:
    """Run ``tasks`` in this process (``workers=1``) or in a pool of ``workers`` processes.

    Parameters
    ----------
    tasks : sequence of Task
        Submitted in this order (put the longest first: the pool starts them in order).
    workers : int
        Worker processes (at most one per task is started).

    Returns
    -------
    list
        The tasks' results, in the order of ``tasks`` whatever the order they finished in.

    Raises
    ------
    TypeError, ValueError
        If ``workers`` is not an int >= 1 or a task is not a :class:`Task`.
    Exception
        The first failed task's exception (in task order); tasks not yet started are cancelled,
        running ones end first.
    """
    workers = _checks.positive_int(workers, "workers")
    for k, task in enumerate(tasks):
        if not isinstance(task, Task):
            raise TypeError(f"tasks[{k}] must be a replica_mlm.validation.parallel.Task, got "
                            f"{type(task).__name__}")
    threads = resolve_threads(INHERIT)
    if workers == 1 or len(tasks) <= 1:
        return [_run(task, threads) for task in tasks]
    from replica_mlm._pool import process_pool

    with process_pool(min(workers, len(tasks))) as pool:
        futures = [pool.submit(_run, task, threads) for task in tasks]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:  # the tasks not started yet do not start
                f.cancel()
            raise
