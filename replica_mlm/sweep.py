"""Run a function over the points of a sweep: serially, on local processes or on a Dask cluster.

A sweep is a list of points (JSON-serialisable dicts, e.g. ``{"L": 400, "alpha": 1.5}``) and a
per-point function ``func(point, rng) -> dict``. Three properties make sweeps safe to scale out:

* **Deterministic seeds.** Point ``k`` receives ``numpy.random.default_rng(SeedSequence(seed,
  spawn_key=(k,)))``, a stream that depends only on the root ``seed`` and the index ``k`` (it is
  the ``k``-th child of ``SeedSequence(seed).spawn``). Serial, process-parallel and Dask runs
  therefore return the same numbers bit for bit.
* **Atomic, resumable output.** With ``out=DIR`` each finished point is written to
  ``DIR/point-00000.json`` (temporary file and rename, never half-written) as soon as it is
  done; a run that fails half-way leaves the finished points intact, and ``resume=True`` loads
  them instead of recomputing them.
* **Same results from fresh and resumed runs.** Results pass through JSON (floats round-trip
  exactly, ``inf`` and ``nan`` included), so a value computed now and a value read from disk
  are identical.

``workers=N`` uses a :class:`concurrent.futures.ProcessPoolExecutor`; ``scheduler=ADDRESS`` (or
a ``dask.distributed.Client``) sends the points to a Dask distributed cluster, which needs the
optional extra ``pip install "replica-mlm[dask]"``. ``func`` must be picklable (a module-level
function) for either.
"""

from __future__ import annotations

import json
import numbers
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from replica_mlm import _checks
from replica_mlm.validation.report import atomic_write_text

__all__ = ["SweepResult", "point_rng", "run_sweep"]

PointFunction = Callable[[dict, np.random.Generator], dict]


@dataclass(frozen=True)
class SweepResult:
    """Results of a sweep, in the order of its points.

    Attributes
    ----------
    points : list of dict
        The points, as given.
    results : list of dict
        ``func(point, rng)`` for each point (after a JSON round trip).
    seed : int
        Root seed; point ``k`` used ``SeedSequence(seed, spawn_key=(k,))``.
    computed, resumed : int
        Points computed in this run, and points loaded from an earlier run (``resume=True``).
    elapsed : float
        Wall-clock seconds of this run.
    backend : str
        ``"serial"``, ``"processes(N)"`` or ``"dask(ADDRESS)"``.
    """

    points: list[dict]
    results: list[dict]
    seed: int
    computed: int
    resumed: int
    elapsed: float
    backend: str


def point_rng(seed: int, index: int) -> np.random.Generator:
    """The generator of point ``index`` of a sweep with root ``seed``.

    Equal to ``numpy.random.default_rng(numpy.random.SeedSequence(seed).spawn(index + 1)[index])``.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))


def _to_plain(obj: Any) -> Any:
    """numpy scalars and arrays to Python numbers and lists (JSON keeps inf and nan)."""
    if isinstance(obj, dict):
        return {str(k): _to_plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_to_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _to_plain(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    return obj


def _dumps(obj: Any) -> str:
    # allow_nan: Infinity and NaN survive the round trip (the interpolation peak is eg = inf)
    return json.dumps(_to_plain(obj), allow_nan=True)


def _call(func: PointFunction, point: dict, seed: int, index: int) -> str:
    """Run one point in a worker; return its result as JSON text (cheap to ship back)."""
    return _dumps(func(point, point_rng(seed, index)))


def _point_path(out: Path, index: int) -> Path:
    return out / f"point-{index:05d}.json"


def _load_finished(out: Path, points: list[dict]) -> dict[int, dict]:
    done: dict[int, dict] = {}
    for k, point in enumerate(points):
        path = _point_path(out, k)
        if not path.exists():
            continue
        stored = json.loads(path.read_text())
        if stored.get("point") != point:
            raise ValueError(
                f"cannot resume: {path} holds point {stored.get('point')!r}, but this sweep's point {k} "
                f"is {point!r}; use another output folder or run without resume"
            )
        done[k] = stored["result"]
    return done


def _progress(total: int, initial: int, progress: bool | None, desc: str):
    from tqdm.auto import tqdm

    if progress is None:
        progress = sys.stderr.isatty()
    return tqdm(total=total, initial=initial, disable=not progress, desc=desc or None, unit="pt",
                file=sys.stderr, dynamic_ncols=True)


def run_sweep(
    func: PointFunction,
    points: Sequence[dict],
    *,
    seed: int = 0,
    workers: int = 1,
    scheduler: Any = None,
    out: str | os.PathLike | None = None,
    resume: bool = False,
    progress: bool | None = None,
    desc: str = "",
) -> SweepResult:
    """Evaluate ``func(point, rng)`` at every point, with per-point seeds from ``(seed, index)``.

    Parameters
    ----------
    func : callable
        ``func(point: dict, rng: numpy.random.Generator) -> dict`` returning JSON-serialisable
        values (numbers, lists, numpy arrays). Must be a module-level (picklable) function when
        ``workers > 1`` or ``scheduler`` is given.
    points : sequence of dict
        JSON-serialisable points.
    seed : int
        Root seed; point ``k`` gets the generator :func:`point_rng(seed, k) <point_rng>`.
    workers : int
        Local worker processes (1: run in this process).
    scheduler : str or dask.distributed.Client, optional
        Address of a Dask scheduler (``"tcp://host:8786"``) or a connected client; overrides
        ``workers``. Needs the ``[dask]`` extra.
    out : path, optional
        Folder for the per-point files ``point-NNNNN.json`` (written atomically as each point
        finishes).
    resume : bool
        Load points already present in ``out`` instead of recomputing them. A stored point that
        differs from this sweep's point at the same index is an error.
    progress : bool, optional
        Show a tqdm progress bar on stderr; default: only when stderr is a terminal.
    desc : str
        Label of the progress bar.

    Returns
    -------
    SweepResult

    Raises
    ------
    ValueError
        For bad arguments, or a resume folder holding a different sweep.
    ImportError
        If ``scheduler`` is given and dask.distributed is not installed.
    """
    points = [_to_plain(dict(p)) for p in points]
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    seed = int(seed)
    workers = _checks.positive_int(workers, "workers")
    if resume and out is None:
        raise ValueError("resume=True needs an output folder (out=...)")
    started = time.time()
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict] = _load_finished(out_dir, points) if resume else {}
    resumed = len(results)
    todo = [k for k in range(len(points)) if k not in results]

    def finish(k: int, text: str) -> None:
        result = json.loads(text)
        results[k] = result
        if out_dir is not None:
            atomic_write_text(_point_path(out_dir, k),
                              json.dumps({"index": k, "seed": seed, "point": points[k], "result": result},
                                         allow_nan=True) + "\n")

    bar = _progress(len(points), resumed, progress, desc)
    try:
        if scheduler is not None:
            backend = _run_dask(func, points, todo, seed, scheduler, finish, bar)
        elif workers > 1 and len(todo) > 1:
            backend = f"processes({workers})"
            _run_processes(func, points, todo, seed, workers, finish, bar)
        else:
            backend = "serial"
            for k in todo:
                finish(k, _call(func, points[k], seed, k))
                bar.update(1)
    finally:
        bar.close()
    return SweepResult(points=points, results=[results[k] for k in range(len(points))], seed=seed,
                       computed=len(todo), resumed=resumed, elapsed=time.time() - started,
                       backend=backend)


def _run_processes(func, points, todo, seed, workers, finish, bar) -> None:
    # On a failure no new point starts, but the points already running finish and are written;
    # then the first error is raised.
    error = None
    with ProcessPoolExecutor(max_workers=min(workers, len(todo))) as pool:
        pending = {pool.submit(_call, func, points[k], seed, k): k for k in todo}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)  # write each point as it ends
            for fut in done:
                k = pending.pop(fut)
                if fut.cancelled():
                    continue
                exc = fut.exception()
                if exc is not None:
                    if error is None:
                        error = exc
                        for other in pending:
                            other.cancel()
                    continue
                finish(k, fut.result())
                bar.update(1)
    if error is not None:
        raise error


def _run_dask(func, points, todo, seed, scheduler, finish, bar) -> str:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise ImportError(
            "scheduler= needs dask.distributed: pip install \"replica-mlm[dask]\" "
            "(or pip install \"dask[distributed]\")"
        ) from None
    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    address = getattr(client.scheduler, "address", None) or str(scheduler)
    try:
        futures = {client.submit(_call, func, points[k], seed, k, pure=False): k for k in todo}
        error = None
        for fut in as_completed(list(futures)):
            if fut.status == "cancelled":
                continue
            if fut.status == "error":
                if error is None:  # stop what has not started; keep what finishes
                    error = fut.exception()
                    client.cancel([f for f in futures if not f.done()])
                continue
            finish(futures[fut], fut.result())
            bar.update(1)
        if error is not None:
            raise error
    finally:
        if own:
            client.close()
    return f"dask({address})"
