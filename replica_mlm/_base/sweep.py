"""Run a function over the points of a sweep: serially, on local processes or on a Dask cluster.

A sweep is a list of points (JSON-serialisable dicts, e.g. ``{"L": 400, "alpha": 1.5}``) and a
per-point function ``func(point, rng) -> dict``. Three properties make sweeps safe to scale out:

* **Deterministic seeds.** Point ``k`` receives ``numpy.random.default_rng(SeedSequence(seed,
  spawn_key=(k,)))``, a stream that depends only on the root ``seed`` and the index ``k`` (it is
  the ``k``-th child of ``SeedSequence(seed).spawn``). Serial, process-parallel and Dask runs
  therefore return the same numbers bit for bit.
* **Atomic, resumable output.** With ``out=DIR`` each finished point is written to
  ``DIR/point-00000.json`` (temporary file and rename, never half-written) as soon as it is
  done; a run that fails or is killed half-way leaves the finished points intact, and
  ``resume=True`` loads them instead of recomputing them. The temporary files a killed run
  leaves (``.point-00003.json.<12 hex digits>.tmp``) are removed by the next run into the
  folder; no other file of the folder is touched (a user's ``.notes.tmp`` stays).
* **Resume only what was asked.** ``DIR/fingerprint.json`` records what determines every point
  besides the point itself: the function's qualified name, the root seed and the package
  version; each point file carries the point, its index and the fingerprint's SHA-256. A resume
  whose fingerprint or points differ is refused with a :class:`ResumeMismatch` naming the first
  difference (``seed differs: folder has 7, this run asks 8``); a point file that is truncated
  or does not belong to the sweep is refused with a :class:`BadPointFile` naming it. Appending
  points to a sweep and resuming keeps the finished ones (a point depends only on the
  fingerprint, itself and its index).
* **One run per folder.** The run holds a lock on ``DIR`` (:func:`replica_mlm._base.run_folder.folder_lock`);
  a second run into the same folder at the same time fails at once with
  :class:`replica_mlm._base.run_folder.FolderBusy`.
* **Same results from fresh and resumed runs.** Results pass through JSON (floats round-trip
  exactly, ``inf`` and ``nan`` included: the convention of :mod:`replica_mlm._base.io`), so a value
  computed now and a value read from disk are identical.
* **One BLAS thread per worker by default** (``threads=``, scoped with threadpoolctl inside each
  worker; see :mod:`replica_mlm._base.threads` for why).

``workers=N`` uses a :class:`concurrent.futures.ProcessPoolExecutor` whose workers exit when the
run's process dies, even by ``SIGKILL`` (:func:`replica_mlm._base.pool.process_pool`);
``scheduler=ADDRESS`` (or a ``dask.distributed.Client``) sends the points to a Dask distributed
cluster, which needs the optional extra ``pip install "replica-mlm[dask]"``. ``func`` must be
picklable (a module-level function) for either.
"""

from __future__ import annotations

import contextlib
import functools
import numbers
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.io import dumps, loads, read_text_file, to_plain, write_json
from replica_mlm._base.pool import Task, run_tasks
from replica_mlm._base.run_folder import fingerprint, fingerprint_difference, fingerprint_digest, folder_lock
from replica_mlm._base.threads import INHERIT, blas_threads, resolve_threads

__all__ = ["BadPointFile", "ResumeMismatch", "ResumeRefused", "SweepResult", "point_rng", "run_sweep"]

PointFunction = Callable[[dict, np.random.Generator], dict]

#: name of the fingerprint file in a sweep folder
FINGERPRINT = "fingerprint.json"
#: the largest point or fingerprint file a resume reads (bytes)
MAX_POINT_BYTES = 2**28
#: seconds to wait for a Dask scheduler given by address before giving up
SCHEDULER_TIMEOUT = 10.0
_POINT_FILE = re.compile(r"point-(\d{5,})\.json")
#: a temporary file of io.atomic_open for a point or fingerprint file
_TEMPORARY = re.compile(r"\.(?:point-\d{5,}\.json|fingerprint\.json)\.[0-9a-f]{12}\.tmp")


class ResumeRefused(ValueError):
    """``resume=True`` on a folder that cannot be resumed by this sweep (base of the two below)."""


class ResumeMismatch(ResumeRefused):
    """A resumed sweep differs from the one in its folder.

    Attributes
    ----------
    folder : pathlib.Path
    field : str
        What differs: ``"seed"``, ``"function"``, ``"version"`` or ``"points[k].key"`` (the
        first differing key of point ``k``).
    stored, current
        Its value in the folder and in this run.
    """

    def __init__(self, folder: Path, field: str, stored: Any, current: Any):
        self.folder, self.field, self.stored, self.current = folder, field, stored, current
        super().__init__(f"cannot resume {folder}: {field} differs: folder has {stored!r}, this run asks "
                         f"{current!r}; use another output folder or run without resume")


class BadPointFile(ResumeRefused):
    """A file of a sweep folder that is truncated or does not belong to the resumed sweep."""

    def __init__(self, path: Path, why: str):
        self.path, self.why = path, why
        super().__init__(f"{path.name} in {path.parent} is truncated or not a point file of this sweep "
                         f"({why}); delete it or run without resume")


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
    threads : int or None
        BLAS threads of each worker (None: the libraries' own setting).
    """

    points: list[dict]
    results: list[dict]
    seed: int
    computed: int
    resumed: int
    elapsed: float
    backend: str
    threads: int | None = None


def point_rng(seed: int, index: int) -> np.random.Generator:
    """The generator of point ``index`` of a sweep with root ``seed``.

    Equal to ``numpy.random.default_rng(numpy.random.SeedSequence(seed).spawn(index + 1)[index])``.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))


def _call(func: PointFunction, point: dict, seed: int, index: int, threads: int | None = None) -> str:
    """Run one point in a worker, with its BLAS threads limited; return its result as JSON text."""
    with blas_threads(threads):
        return dumps(func(point, point_rng(seed, index)))


def _point_path(out: Path, index: int) -> Path:
    return out / f"point-{index:05d}.json"


def function_name(func: Callable) -> str:
    """``module.qualname`` of a point function (of the wrapped function for ``functools.partial``)."""
    if isinstance(func, functools.partial):
        return (f"functools.partial({function_name(func.func)}, args={dumps(func.args)}, "
                f"keywords={dumps(func.keywords, sort_keys=True)})")
    module = getattr(func, "__module__", None) or type(func).__module__
    name = getattr(func, "__qualname__", None) or type(func).__qualname__
    return f"{module}.{name}"


def sweep_fingerprint(func: Callable, seed: int) -> dict[str, Any]:
    """What determines every point of a sweep besides the point and its index."""
    from replica_mlm._version import __version__

    return fingerprint(format="replica_mlm sweep 1", function=function_name(func), seed=seed,
                       version=__version__)


def _point_files(out: Path) -> dict[int, Path]:
    found = {}
    for path in out.iterdir():
        m = _POINT_FILE.fullmatch(path.name)
        if m:
            found[int(m.group(1))] = path
    return found


def _remove_temporaries(out: Path) -> None:
    """Remove what a sweep killed while writing left: temporary files of its own point and
    fingerprint files, named exactly as :func:`replica_mlm._base.io.atomic_open` names them
    (``.point-00001.json.<12 hex digits>.tmp``). Any other file stays, a user's ``.notes.tmp``
    too. Safe under the folder lock: no other run writes there."""
    for path in out.iterdir():
        if _TEMPORARY.fullmatch(path.name):
            path.unlink(missing_ok=True)


def _read_json(path: Path, why: str) -> Any:
    # never blocks (a FIFO or a link to /dev/zero is refused at once): the run holds the folder lock
    try:
        text = read_text_file(path, max_bytes=MAX_POINT_BYTES)
    except ValueError as exc:  # "<path> is a FIFO (named pipe), not a regular file", ...
        rest = str(exc).removeprefix(f"{path} is ")
        raise BadPointFile(path, why if rest.startswith("not UTF-8") else rest) from None
    try:
        return loads(text)
    except ValueError:
        raise BadPointFile(path, why) from None


def _load_finished(out: Path, points: list[dict], fp: dict, digest: str) -> dict[int, dict]:
    """Check the folder's fingerprint and point files against this sweep; return finished points."""
    files = _point_files(out)
    fp_path = out / FINGERPRINT
    if os.path.lexists(fp_path):
        stored_fp = _read_json(fp_path, "not a fingerprint")
        if not isinstance(stored_fp, dict):
            raise BadPointFile(fp_path, "not a fingerprint")
        stored_fp.pop("sha256", None)  # a copy of the digest, for readers of the folder
        diff = fingerprint_difference(stored_fp, fp)
        if diff is not None:
            raise ResumeMismatch(out, *diff)
    elif files:
        raise ResumeRefused(f"cannot resume {out}: it holds point files but no {FINGERPRINT} (written by "
                            f"an older replica_mlm?); run without resume")
    done: dict[int, dict] = {}
    for k, path in sorted(files.items()):
        if k >= len(points):
            continue  # a longer earlier sweep with the same fingerprint: not needed now
        stored = _read_json(path, "not valid JSON")
        if not isinstance(stored, dict) or not {"index", "point", "result", "fingerprint"} <= stored.keys():
            raise BadPointFile(path, "keys index, point, result, fingerprint missing")
        if stored["index"] != k or stored["fingerprint"] != digest:
            raise BadPointFile(path, "its index or fingerprint is another sweep's")
        diff = fingerprint_difference({"points": [stored["point"]]}, {"points": [points[k]]})
        if diff is not None:
            field, a, b = diff
            raise ResumeMismatch(out, field.replace("points[0]", f"points[{k}]"), a, b)
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
    threads: int | None = INHERIT,
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
        Folder for ``fingerprint.json`` and the per-point files ``point-NNNNN.json`` (written
        atomically as each point finishes). The run locks the folder. Without ``resume``, point
        files already in the folder are deleted first (they would be overwritten).
    resume : bool
        Load points already present in ``out`` instead of recomputing them. A folder whose
        fingerprint (function, seed, package version) or stored points differ from this sweep's
        is refused with :class:`ResumeMismatch`; a truncated or foreign point file with
        :class:`BadPointFile`.
    progress : bool, optional
        Show a tqdm progress bar on stderr; default: only when stderr is a terminal.
    desc : str
        Label of the progress bar.
    threads : int or None
        BLAS threads in each worker while it runs a point (threadpoolctl, scoped to the point).
        Default: the enclosing :func:`replica_mlm._base.threads.blas_threads` setting, else 1 (many
        small LAPACK calls: threads only fight, worst with several workers on few cores).
        ``None`` leaves the BLAS libraries' own setting. At most ``MAX_THREADS`` (1024).

    Returns
    -------
    SweepResult

    Raises
    ------
    ValueError
        For bad arguments, or a resume folder holding a different sweep (:class:`ResumeMismatch`,
        :class:`BadPointFile`).
    replica_mlm._base.run_folder.FolderBusy
        If another run holds the lock of ``out``.
    ConnectionError
        If the scheduler given by address cannot be reached within ``SCHEDULER_TIMEOUT`` seconds.
    ImportError
        If ``scheduler`` is given and dask.distributed is not installed.
    """
    points = [to_plain(dict(p)) for p in points]
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    seed = int(seed)
    workers = _checks.positive_int(workers, "workers")
    threads = resolve_threads(threads)
    if resume and out is None:
        raise ValueError("resume=True needs an output folder (out=...)")
    started = time.time()
    out_dir = Path(out) if out is not None else None
    with folder_lock(out_dir) if out_dir is not None else contextlib.nullcontext():
        results: dict[int, dict] = {}
        if out_dir is not None:
            results, digest = _prepare_folder(out_dir, func, seed, points, resume)
        resumed = len(results)
        todo = [k for k in range(len(points)) if k not in results]

        def finish(k: int, text: str) -> None:
            result = loads(text)
            results[k] = result
            if out_dir is not None:
                write_json(_point_path(out_dir, k), {"index": k, "seed": seed, "point": points[k],
                                                      "result": result, "fingerprint": digest})

        bar = _progress(len(points), resumed, progress, desc)
        try:
            backend = _run_todo(func, points, todo, seed, threads, workers, scheduler, finish, bar)
        finally:
            bar.close()
    return SweepResult(points=points, results=[results[k] for k in range(len(points))], seed=seed,
                       computed=len(todo), resumed=resumed, elapsed=time.time() - started,
                       backend=backend, threads=threads)


def _prepare_folder(out_dir: Path, func, seed: int, points: list[dict],
                    resume: bool) -> tuple[dict[int, dict], str]:
    """Ready ``out_dir`` for this sweep: the points it already holds (resume) and the fingerprint's digest.

    Removes a killed run's temporaries; with ``resume`` checks and loads the finished points,
    otherwise deletes the point files; then writes this sweep's fingerprint.
    """
    results: dict[int, dict] = {}
    fp = sweep_fingerprint(func, seed)
    digest = fingerprint_digest(fp)
    _remove_temporaries(out_dir)
    if resume:
        results = _load_finished(out_dir, points, fp, digest)
    else:
        for path in _point_files(out_dir).values():
            path.unlink()
    write_json(out_dir / FINGERPRINT, {**fp, "sha256": digest}, indent=1)
    return results, digest


def _run_todo(func, points, todo, seed, threads, workers, scheduler, finish, bar) -> str:
    """Compute the points ``todo`` on Dask, local processes or here; the name of the backend used."""
    if scheduler is not None:
        return _run_dask(func, points, todo, seed, threads, scheduler, finish, bar)
    if workers > 1 and len(todo) > 1:
        _run_processes(func, points, todo, seed, threads, workers, finish, bar)
        return f"processes({workers})"
    for k in todo:
        finish(k, _call(func, points[k], seed, k, threads))
        bar.update(1)
    return "serial"


def _run_processes(func, points, todo, seed, threads, workers, finish, bar) -> None:
    # Each point is written as it ends. On a failure no new point starts, but the points already
    # running finish and are written; then the first error is raised.
    def done(j: int, text: str) -> None:
        finish(todo[j], text)
        bar.update(1)

    run_tasks([Task(_call, (func, points[k], seed, k, threads)) for k in todo], workers=workers,
              threads=threads, on_result=done)


def _run_dask(func, points, todo, seed, threads, scheduler, finish, bar) -> str:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise ImportError(
            "scheduler= needs dask.distributed: pip install \"replica-mlm[dask]\" "
            "(or pip install \"dask[distributed]\")"
        ) from None
    own = not isinstance(scheduler, Client)
    if own:
        try:
            client = Client(scheduler, timeout=SCHEDULER_TIMEOUT)
        except OSError as exc:  # refused, unreachable, timed out
            raise ConnectionError(f"cannot reach the Dask scheduler at {scheduler} (waited up to "
                                  f"{SCHEDULER_TIMEOUT:g} s): {exc}") from None
    else:
        client = scheduler
    address = getattr(client.scheduler, "address", None) or str(scheduler)
    try:
        futures = {client.submit(_call, func, points[k], seed, k, threads, pure=False): k for k in todo}
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
