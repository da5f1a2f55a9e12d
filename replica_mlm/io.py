"""Files written by replica_mlm: atomic writes, one JSON and one CSV convention, fingerprints, folder locks.

A leaf module: it imports nothing from the package (only numpy and the standard library; the folder
lock imports ``filelock`` when it is used), so every layer may use it.

Atomic writes (every file the package writes)
    :func:`atomic_open` (bytes or text; :func:`atomic_write_text` is built on it) writes a temporary
    file in the target's folder and renames it over the target, so a reader (or a run killed at any
    moment) never sees a half-written file. The temporary file is created with mode ``0o666`` and
    the process umask applied by the kernel, exactly like ``open(path, "w")``. A failed write
    (a full disk) raises an OSError naming the file. :func:`output_set` commits several files
    together, a manifest last. :func:`read_text_file` is the reading side: regular files only.

JSON convention (one for every file the package writes)
    :func:`write_json` writes a file atomically with :func:`dumps`, which turns numpy scalars
    and arrays into Python numbers and lists, paths into strings,
    and writes floats with Python's shortest round-trip ``repr``. Non-finite floats are written as
    the bare tokens ``Infinity``, ``-Infinity`` and ``NaN`` (JavaScript's names, also JSON5's), which
    :func:`loads` (= :func:`json.loads`) reads back as floats. Every float, ``inf`` and ``nan``
    included, therefore survives a write and a read bit for bit (``nan`` stays ``nan``), and a
    number never turns into a string. Strict JSON parsers (e.g. JavaScript's ``JSON.parse``) reject
    the three tokens; Python, pandas and JSON5 readers accept them. The interpolation peak of the
    theory is ``eg = inf``, so the package needs them.

CSV tables (one convention for every table the package writes)
    :func:`write_csv` (:func:`csv_text` for the text alone) writes one header row and one row per
    record: floats (numpy floats included) with Python's shortest round-trip ``repr`` (``inf``,
    ``-inf``, ``nan`` as such), integers as integers, booleans as ``True``/``False``, ``None``
    as an empty cell, strings as they are. :func:`replica_mlm.load` reads every number back bit
    for bit.

Fingerprints
    :func:`fingerprint` is a plain dict of everything that determines the files of a sweep folder;
    :func:`fingerprint_digest` hashes it; :func:`fingerprint_difference` names the first field in
    which two fingerprints differ (for one-line refusals of ``--resume``).

Folder locks
    :func:`folder_lock` takes an exclusive, non-blocking lock on a folder (a ``.lock`` file inside
    it, with the ``filelock`` package), so two runs cannot write into the same folder at once.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import hashlib
import io
import json
import math
import numbers
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = [
    "FolderBusy",
    "atomic_open",
    "atomic_write_text",
    "csv_text",
    "dumps",
    "fingerprint",
    "fingerprint_difference",
    "fingerprint_digest",
    "folder_lock",
    "loads",
    "output_set",
    "read_text_file",
    "to_plain",
    "write_csv",
    "write_json",
]

#: name of the lock file :func:`folder_lock` creates inside a folder
LOCK_NAME = ".replica-mlm.lock"


class _FdWriter(io.RawIOBase):
    # every byte through os.write (no fileno(), so no library writes to the descriptor itself)
    def __init__(self, fd: int):
        self._fd = fd

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        return os.write(self._fd, data)

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self._fd)
            finally:
                super().close()


def _named(exc: OSError, path: Path, tmp: Path | None = None) -> OSError:
    """``exc`` naming ``path`` if it names no file (or only the temporary one); same class, errno."""
    if exc.errno is None or exc.filename not in (None, None if tmp is None else os.fspath(tmp)):
        return exc
    try:
        named = type(exc)(exc.errno, exc.strerror, os.fspath(path))
    except Exception:  # a subclass with another constructor
        named = OSError(exc.errno, exc.strerror, os.fspath(path))
    named.__cause__, named.__suppress_context__ = exc, True
    return named.with_traceback(exc.__traceback__)


#: the output_set in force: (pid, resolved folder, {target: temporary} in writing order)
_staging: contextvars.ContextVar[tuple[int, Path, dict] | None] = contextvars.ContextVar("rm_staging",
                                                                                        default=None)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", *, encoding: str = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success it is renamed over ``path``, on failure removed.

    The package's one writer. The temporary file is ``.<name>.<12 hex digits>.tmp`` in the
    target's folder (mode ``0o666`` less the umask); missing parent folders are created. Readers,
    and a run killed at any moment (``SIGKILL`` included), see the old file or the new one, never a
    part (a killed run may leave its temporary file behind). Inside :func:`output_set` the rename
    of a file of that set's folder waits for the end of the set.

    Parameters
    ----------
    path : path
        The file to write.
    mode : {"wb", "w"}
        Binary, or text in ``encoding`` (newlines as for ``open``).

    Yields
    ------
    file object

    Raises
    ------
    OSError
        If the folder cannot be created or the file written (``ENOSPC`` on a full disk, ...): the
        same class and ``errno``, with ``filename`` set to ``path`` where the system named no file;
        no temporary file is left behind.
    ValueError
        For another ``mode``.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise _named(exc, path, tmp)  # noqa: B904 (the cause is set)
    try:
        fh = io.BufferedWriter(_FdWriter(fd), buffer_size=1 << 18)
        if mode == "w":
            fh = io.TextIOWrapper(fh, encoding=encoding)
        with fh:
            yield fh
        pid, folder, staged = _staging.get() or (None, None, {})
        if pid == os.getpid() and path.parent.resolve() == folder:
            if folder / path.name in staged:  # written twice: the last one counts
                staged.pop(folder / path.name).unlink(missing_ok=True)
            staged[folder / path.name] = tmp
        else:
            os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _named(exc, path, tmp)  # noqa: B904 (the cause is set)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically as UTF-8 (:func:`atomic_open` in text mode).

    Raises
    ------
    OSError
        If the folder cannot be created or written, naming ``path``; no temporary file is left
        behind.
    """
    with atomic_open(path, "w") as fh:
        fh.write(text)


@contextlib.contextmanager
def output_set(folder: str | os.PathLike, *, manifest: str) -> Iterator[Path]:
    """Write a set of files into ``folder`` all together, its ``manifest`` file last.

    The files :func:`atomic_open` writes into ``folder`` in the block (this process and thread) stay
    temporary; at its end the old manifest is removed, the files renamed in the order written, the
    manifest last. A failure in the block (a full disk) removes them all: the folder keeps its
    previous complete set, or none. A kill during the renames (milliseconds, no writing) leaves no
    manifest: a folder without its manifest is incomplete; run the command again.

    Raises
    ------
    ValueError
        If the block did not write ``manifest`` (the set is not committed).
    OSError
        As :func:`atomic_open`.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    staged: dict[Path, Path] = {}
    token = _staging.set((os.getpid(), folder.resolve(), staged))
    try:
        yield folder
        target = folder.resolve() / manifest
        if target not in staged:
            raise ValueError(f"output_set: {target} was not written; the files of {folder} are discarded")
        target.unlink(missing_ok=True)
        staged[target] = staged.pop(target)  # last
        while staged:
            path = next(iter(staged))
            try:
                os.replace(staged[path], path)
            except OSError as exc:
                raise _named(exc, path, staged[path])  # noqa: B904
            del staged[path]
    finally:
        _staging.reset(token)
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)


def to_plain(obj: Any) -> Any:
    """numpy scalars and arrays to Python numbers and lists, tuples to lists, paths to strings.

    Floats (finite or not) stay floats: see the module docstring for how they are written.
    """
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_plain(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    return obj


def dumps(obj: Any, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """``obj`` as JSON text in the package's convention (``Infinity``, ``-Infinity``, ``NaN``).

    Raises
    ------
    TypeError
        For values JSON cannot hold (e.g. arbitrary objects).
    """
    return json.dumps(to_plain(obj), allow_nan=True, indent=indent, sort_keys=sort_keys)


def _json_float(token: str) -> float:
    value = float(token)
    if math.isinf(value):  # dumps writes Infinity; 1e999 is no number the package wrote
        raise ValueError(f"the number {token} overflows to {value} (the package writes Infinity)")
    return value


def loads(text: str) -> Any:
    """Read JSON written by :func:`dumps` (floats, ``inf`` and ``nan`` exactly as written).

    Raises
    ------
    ValueError
        For text that is not JSON, or a number that overflows a float (``1e999``: :func:`dumps`
        writes ``Infinity``).
    """
    return json.loads(text, parse_float=_json_float)


_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def read_text_file(path: str | os.PathLike, *, max_bytes: int) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``max_bytes`` long; never blocks.

    Opened with ``O_NONBLOCK`` and checked with ``fstat`` before a byte is read: a FIFO, a device
    (a link to ``/dev/zero``) or a folder is refused at once instead of hanging or filling the
    memory. A leading UTF-8 byte order mark (spreadsheets write one; the package never does) is
    dropped, so a file reads the same with or without it.

    Raises
    ------
    ValueError
        Naming the file: not a regular file, longer than ``max_bytes``, or not UTF-8.
    OSError
        If it cannot be opened or read (``FileNotFoundError``, ...), naming it.
    """
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "a special file")
            raise ValueError(f"{path} is {kind}, not a regular file")
        chunks, size = [], 0
        while size <= max_bytes and (chunk := os.read(fd, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _named(exc, path)  # noqa: B904
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise ValueError(f"{path} is longer than {max_bytes} bytes (no file the package writes)")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = None,
               sort_keys: bool = False) -> None:
    """Write ``obj`` to ``path`` as JSON (:func:`dumps`, then a newline), atomically.

    Raises
    ------
    TypeError
        For values JSON cannot hold.
    OSError
        If the file cannot be written (nothing is left behind).
    """
    atomic_write_text(path, dumps(obj, indent=indent, sort_keys=sort_keys) + "\n")


def _cell(value: Any, column: str) -> str:
    """One CSV cell in the package's convention (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    raise TypeError(f"CSV column {column!r} holds {type(value).__name__} {value!r}; a cell must be a "
                    f"real number, a bool, a str or None")


def csv_text(rows: Iterable[Mapping[str, Any] | Sequence[Any]], *,
             columns: Sequence[str] | None = None) -> str:
    """CSV text of ``rows`` under the header ``columns`` (see the module docstring for the cells).

    Parameters
    ----------
    rows : iterable of dict or of sequence
        Records: dicts (their values are taken in the order of ``columns``) or sequences (one
        entry per column).
    columns : sequence of str, optional
        The header; by default the keys of the first record (which must then be a dict).

    Raises
    ------
    ValueError
        Without ``columns`` and without a first dict, or for a row whose length differs from the
        header's.
    TypeError
        For a cell that is not a real number, a bool, a str or None (e.g. a list).
    """
    rows = list(rows)
    if columns is None:
        if not rows or not isinstance(rows[0], Mapping):
            raise ValueError("csv_text needs columns= unless the rows are dicts (at least one)")
        columns = list(rows[0])
    columns = [str(c) for c in columns]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for k, row in enumerate(rows):
        cells = [row[c] for c in columns] if isinstance(row, Mapping) else list(row)
        if len(cells) != len(columns):
            raise ValueError(f"row {k} has {len(cells)} cells for {len(columns)} columns {columns}")
        writer.writerow([_cell(v, c) for v, c in zip(cells, columns, strict=True)])
    return buf.getvalue()


def write_csv(path: str | os.PathLike, rows: Iterable[Mapping[str, Any] | Sequence[Any]], *,
              columns: Sequence[str] | None = None) -> str:
    """Write :func:`csv_text` of ``rows`` to ``path`` atomically; returns the text.

    Raises
    ------
    ValueError, TypeError
        As :func:`csv_text`.
    OSError
        If the file cannot be written (nothing is left behind).
    """
    text = csv_text(rows, columns=columns)
    atomic_write_text(path, text)
    return text


def fingerprint(**fields: Any) -> dict[str, Any]:
    """A fingerprint: the given fields (e.g. function, points, seed, version) as plain JSON values.

    Two runs whose fingerprints are equal compute the same files; :func:`fingerprint_difference`
    says where two fingerprints differ.
    """
    return loads(dumps(fields))


def fingerprint_digest(fp: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of a fingerprint (sorted keys)."""
    return hashlib.sha256(dumps(fp, sort_keys=True).encode()).hexdigest()


def _same(a: Any, b: Any) -> bool:
    # JSON equality, with nan equal to nan (a stored nan is the same parameter as a fresh one)
    return dumps(a, sort_keys=True) == dumps(b, sort_keys=True)


def fingerprint_difference(stored: dict[str, Any], current: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """The first difference between two fingerprints, or ``None`` if they are equal.

    Returns
    -------
    (field, stored_value, current_value) or None
        ``field`` is a top-level key; where both values are lists of dicts of the same length
        (e.g. the points of a sweep) it is ``"key[index].subkey"`` and the values are the
        differing entries; where the lists have different lengths it is ``"len(key)"`` with the
        two lengths.
    """
    for key in list(stored) + [k for k in current if k not in stored]:
        a, b = stored.get(key), current.get(key)
        if _same(a, b):
            continue
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return f"len({key})", len(a), len(b)
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                if _same(x, y):
                    continue
                if isinstance(x, dict) and isinstance(y, dict):
                    for sub in list(x) + [s for s in y if s not in x]:
                        if not _same(x.get(sub), y.get(sub)):
                            return f"{key}[{i}].{sub}", x.get(sub), y.get(sub)
                return f"{key}[{i}]", x, y
        return key, a, b
    return None


class FolderBusy(OSError):
    """Another process holds the lock of an output folder."""


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike) -> Iterator[Path]:
    """Hold an exclusive lock on ``folder`` (created if missing) for the duration of the block.

    The lock is the file ``folder/.replica-mlm.lock`` locked with ``filelock`` (``flock`` on
    POSIX); it does not block: if another process holds it, :class:`FolderBusy` is raised at once.
    The operating system releases the lock when the holder exits, even by ``SIGKILL``.

    Raises
    ------
    FolderBusy
        If another run is writing into ``folder``.
    OSError
        If the folder cannot be created, or no file can be created in it (``/proc/self``, a
        read-only folder: "not a writable folder", naming it).
    """
    from filelock import FileLock, Timeout

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:  # the real reason a lock cannot be taken (filelock would report any failure as "busy")
        os.close(os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666))
    except OSError as exc:
        raise type(exc)(exc.errno, f"not a writable folder (cannot create {LOCK_NAME} in it: "
                                   f"{exc.strerror})", os.fspath(folder)) from None
    lock = FileLock(folder / LOCK_NAME, timeout=0, is_singleton=False, thread_local=False)
    try:
        lock.acquire()
    except Timeout:
        raise FolderBusy(
            f"another run is writing into {folder} (it holds {folder / LOCK_NAME}); wait for it to "
            f"finish or choose another output folder") from None
    try:
        yield folder
    finally:
        lock.release()
