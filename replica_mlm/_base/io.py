"""Files written by replica_mlm: atomic writes, one JSON and one CSV convention, safe reads.

It imports nothing from the package but its reading side, :mod:`replica_mlm._base.reading` (only
numpy and the standard library besides), so every layer may use it. The fingerprints and locks
of output folders are in :mod:`replica_mlm._base.run_folder`.

Atomic writes (every file the package writes)
    :func:`atomic_open` (bytes or text; :func:`atomic_write_text` is built on it) writes a temporary
    file in the target's folder and renames it over the target, so a reader (or a run killed at any
    moment) never sees a half-written file. The temporary file is created with mode ``0o666`` and
    the process umask applied by the kernel, exactly like ``open(path, "w")``; private files (the
    equation cache and its key) pass ``permissions=0o600``, and ``exclusive=True`` publishes a file
    only if its name is free (a hard link instead of the rename: of two processes creating it at
    once, one wins and the other gets :class:`FileExistsError`). A failed write
    (a full disk) raises an OSError naming the file. :func:`output_set` commits several files
    together, a manifest last; :func:`recording` lists what a block published (a command's run
    manifest) and :func:`remove_temporaries` clears a killed writer's temporary files.
    :func:`read_text_file` (from :mod:`replica_mlm._base.reading`) is the reading side.

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
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import io
import json
import math
import numbers
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from replica_mlm._base.reading import _named, read_text_file

__all__ = [
    "atomic_open",
    "atomic_write_text",
    "csv_text",
    "dumps",
    "loads",
    "output_set",
    "read_text_file",
    "recording",
    "remove_temporaries",
    "to_plain",
    "write_csv",
    "write_json",
]


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


#: the recording in force (:func:`recording`): (pid, resolved folder, set of the files published)
_recorded: contextvars.ContextVar[tuple[int, Path, set] | None] = contextvars.ContextVar("rm_recorded",
                                                                                       default=None)
#: the name :func:`atomic_open` gives a temporary file: ``.<name>.<12 hex digits>.tmp``
TEMPORARY = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")


def _record(path: Path) -> None:
    """Note ``path`` as published if a :func:`recording` of one of its folders is in force."""
    held = _recorded.get()
    if held is None or held[0] != os.getpid():
        return
    with contextlib.suppress(OSError, ValueError):
        held[2].add(path.resolve().relative_to(held[1]))


@contextlib.contextmanager
def recording(folder: str | os.PathLike) -> Iterator[set[Path]]:
    """Collect the files :func:`atomic_open` publishes under ``folder`` in the block (this
    process): the set yielded fills with their paths relative to ``folder``. A command's run
    lists with it what it wrote (its manifest, from which ``--overwrite`` removes exactly the
    files of the earlier run)."""
    written: set[Path] = set()
    token = _recorded.set((os.getpid(), Path(folder).resolve(), written))
    try:
        yield written
    finally:
        _recorded.reset(token)


def remove_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Remove the temporary files a killed :func:`atomic_open` left in ``folder`` and its
    subfolders (named exactly ``.<name>.<12 hex digits>.tmp``; a user's ``.notes.tmp`` stays).
    Call it only while holding the folder's lock (no writer of the package is then at work in
    it). Returns the files removed."""
    removed = []
    for root, _, files in os.walk(folder):
        for name in files:
            if TEMPORARY.fullmatch(name):
                path = Path(root) / name
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path)
    return removed


#: the output_set in force: (pid, resolved folder, {target: temporary} in writing order)
_staging: contextvars.ContextVar[tuple[int, Path, dict] | None] = contextvars.ContextVar("rm_staging",
                                                                                        default=None)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", *, encoding: str = "utf-8",
                permissions: int = 0o666, exclusive: bool = False) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success it is renamed over ``path``, on failure removed.

    The package's one writer. The temporary file is ``.<name>.<12 hex digits>.tmp`` in the
    target's folder (mode ``permissions`` less the umask); missing parent folders are created. Readers,
    and a run killed at any moment (``SIGKILL`` included), see the old file or the new one, never a
    part (a killed run may leave its temporary file behind). Inside :func:`output_set` the rename
    of a file of that set's folder waits for the end of the set.

    Parameters
    ----------
    path : path
        The file to write.
    mode : {"wb", "w"}
        Binary, or text in ``encoding`` (newlines as for ``open``).
    permissions : int, optional
        Permission bits the file is created with (the umask applies): ``0o666`` by default, ``0o600``
        for a file only its owner may read.
    exclusive : bool, optional
        If True, ``path`` is created only if it does not exist (``os.link`` of the complete
        temporary file, which fails if ``path`` exists), and at once, also inside
        :func:`output_set`.

    Yields
    ------
    file object

    Raises
    ------
    OSError
        If the folder cannot be created or the file written (``ENOSPC`` on a full disk, ...): the
        same class and ``errno``, with ``filename`` set to ``path`` where the system named no file;
        no temporary file is left behind.
    FileExistsError
        With ``exclusive=True``, if ``path`` exists (it is left as it is).
    ValueError
        For another ``mode``.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, permissions)
    except OSError as exc:
        raise _named(exc, path, tmp)  # noqa: B904 (the cause is set)
    try:
        fh = io.BufferedWriter(_FdWriter(fd), buffer_size=1 << 18)
        if mode == "w":
            fh = io.TextIOWrapper(fh, encoding=encoding)
        with fh:
            yield fh
        pid, folder, staged = _staging.get() or (None, None, {})
        if exclusive:
            os.link(tmp, path)
            tmp.unlink()
            _record(path)
        elif pid == os.getpid() and path.parent.resolve() == folder:
            if folder / path.name in staged:  # written twice: the last one counts
                staged.pop(folder / path.name).unlink(missing_ok=True)
            staged[folder / path.name] = tmp  # published (and recorded) when the set commits
        else:
            os.replace(tmp, path)
            _record(path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _named(exc, path, tmp)  # noqa: B904 (the cause is set)
        raise


def atomic_write_text(path: str | os.PathLike, text: str, *, permissions: int = 0o666,
                      exclusive: bool = False) -> None:
    """Write ``text`` to ``path`` atomically as UTF-8 (:func:`atomic_open` in text mode, which
    takes ``permissions`` and ``exclusive``).

    Raises
    ------
    OSError
        If the folder cannot be created or written, naming ``path``; no temporary file is left
        behind. :class:`FileExistsError` with ``exclusive=True`` if ``path`` exists.
    """
    with atomic_open(path, "w", permissions=permissions, exclusive=exclusive) as fh:
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
            _record(path)
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
        For text that is not JSON, nested too deep to parse, or a number that overflows a float
        (``1e999``: :func:`dumps` writes ``Infinity``).
    """
    try:
        return json.loads(text, parse_float=_json_float)
    except RecursionError:
        raise ValueError("the JSON text is nested deeper than Python's recursion limit (no file the "
                         "package writes nests more than a few levels)") from None


def write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = None,
               sort_keys: bool = False, permissions: int = 0o666) -> None:
    """Write ``obj`` to ``path`` as JSON (:func:`dumps`, then a newline), atomically
    (:func:`atomic_write_text`, which takes ``permissions``).

    Raises
    ------
    TypeError
        For values JSON cannot hold.
    OSError
        If the file cannot be written (nothing is left behind).
    """
    atomic_write_text(path, dumps(obj, indent=indent, sort_keys=sort_keys) + "\n",
                      permissions=permissions)


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
