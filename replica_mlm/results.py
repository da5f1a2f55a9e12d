"""Read back the files the command line writes: :func:`load`.

A sweep run on a cluster writes CSV and JSON (``replica-mlm curve``, ``simulate``, ``phase``,
``validate`` and the sections); :func:`load` turns them into the package's result objects or
pandas DataFrames, with every number exactly as computed. The CSV files hold numbers written with
Python's shortest round-trip ``repr`` (``inf`` and ``nan`` as such), the JSON files follow the one
convention of :mod:`replica_mlm._base.io` (``Infinity``, ``NaN``), so nothing is lost in the round trip.
"""

from __future__ import annotations

import csv
import io as stdio
import os
import re
from pathlib import Path

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base import io
from replica_mlm._base.keywords import keywords

__all__ = ["load"]

#: the largest file :func:`load` reads (bytes)
MAX_BYTES = 2**30
#: an integer as ``str(int)`` writes it
_INT = re.compile(r"0|-?[1-9][0-9]*")


@keywords
def load(path: str | os.PathLike):
    """Read a file written by ``replica-mlm`` (or by the package's ``to_csv``) back into Python.

    Parameters
    ----------
    path : path
        A ``.json`` or ``.csv`` file.

    Returns
    -------
    dict, list of LearningCurve or pandas.DataFrame
        * ``*.json`` (``curve.json``, ``simulate.json``, ``phase.json``, ``report.json``, the
          sections' JSON files, sweep fingerprints and points): a dict, with ``inf`` and ``nan``
          as floats (:func:`replica_mlm._base.io.loads`).
        * ``curve.csv`` (columns ``lam, alpha, eg, ..., rho, noise``) and anything written by
          :meth:`LearningCurve.to_csv` / :func:`~replica_mlm.theory.studies.curve.curves_to_csv`: a list of
          :class:`~replica_mlm.LearningCurve`, one per run of rows with the same lam, in file order,
          equal field by field to the curves that were written.
        * any other CSV (``simulate.csv``, ``phase.csv``, ``phase_lines.csv``): a DataFrame, one
          column per CSV column, floats parsed exactly (bit for bit as written).

    The file is read with :func:`replica_mlm._base.io.read_text_file` (a FIFO, a device or a folder is
    refused at once, a file over :data:`MAX_BYTES` too; a UTF-8 byte order mark is dropped) and
    checked against what the writer writes: every CSV row ends with a newline and has one cell per
    column, numeric columns hold numbers exactly as ``repr`` writes them (``1e999``, which would
    read as ``inf``, is refused; the writer writes ``inf``), a JSON number does not overflow, and
    a table has as many rows as the metadata the command wrote with it records (``"rows"`` of
    ``curve.json``, ``simulate.json``, ``phase.json``).

    Raises
    ------
    TypeError
        If ``path`` is not a str or path.
    ValueError
        If the file is neither ``.json`` nor ``.csv``, or is not what replica-mlm writes (truncated,
        not a regular file, too large, not UTF-8, a token the writer never writes, rows missing);
        the message names the file.
    OSError
        If the file cannot be read (``FileNotFoundError`` if there is no such file), naming it.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or os.PathLike naming a .csv or .json file, got "
                        f"{type(path).__name__}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise ValueError(f"path must name a .csv or .json file written by replica-mlm, got {path.name!r}")
    text = io.read_text_file(path, max_bytes=MAX_BYTES)
    if suffix == ".json":
        try:
            return io.loads(text)
        except ValueError as exc:
            raise ValueError(f"{path} is not a JSON file written by replica-mlm: {exc}") from None
    rows = _table(text, path)
    from replica_mlm.theory.studies.curve import COLUMNS, TRAILER

    head = ["lam", *COLUMNS, *TRAILER[:2]]
    if rows[0][:len(head)] == head:
        extra = rows[0][len(head):]
        if len(set(extra)) != len(extra) or not set(extra) <= set(TRAILER[2:]):
            raise ValueError(f"{path}: a learning-curve table with unexpected columns {extra} after "
                             f"{head[-1]!r} (allowed: {', '.join(TRAILER[2:])})")
        return _curves(rows, path)
    import pandas as pd

    # pandas < 3 parses floats exactly only when asked; pandas 3 does by default (and deprecates asking)
    exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    try:
        return pd.read_csv(stdio.StringIO(text), **exact)
    except ValueError as exc:  # e.g. no columns at all
        raise ValueError(f"{path} is not a CSV table written by replica-mlm: {exc}") from None


def _table(text: str, path: Path) -> list[list[str]]:
    """The rows of a CSV file, header first, checked against what :func:`replica_mlm._base.io.write_csv`
    writes: a newline after every row, one cell per column, numbers as ``repr`` / ``str`` write
    them, and as many rows as the metadata written with the file records."""
    if not text.endswith("\n"):
        raise ValueError(f"{path} is {'empty' if not text else 'cut inside its last row (truncated)'}; "
                         f"replica-mlm ends every row with a newline")
    try:
        rows = list(csv.reader(stdio.StringIO(text, newline="")))
    except csv.Error as exc:
        raise ValueError(f"{path} is not a CSV table written by replica-mlm: {exc}") from None
    width = len(rows[0])
    for k, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise ValueError(f"{path}, line {k}: {len(row)} cells for the {width} columns of the header "
                             f"(truncated or not written by replica-mlm)")
    for j, column in enumerate(rows[0]):
        cells = [row[j] for row in rows[1:] if row[j]]
        if cells and all(map(_is_number, cells)):  # a numeric column: exactly the writer's tokens
            for cell in cells:
                if _INT.fullmatch(cell) is None and repr(float(cell)) != cell:
                    raise ValueError(f"{path}: column {column!r} holds {cell!r}, which replica-mlm never "
                                     f"writes (a float is written as its repr: {float(cell)!r})")
    if _check_row_count(path, len(rows) - 1) is None and len(rows) < 2:
        raise ValueError(f"{path} holds a header and no rows; replica-mlm writes no empty table unless "
                         "the metadata written with it records 0 rows")
    return rows


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _check_row_count(path: Path, n: int) -> int | None:
    """Compare ``n`` with the rows recorded by the metadata the command wrote with the table
    (``curve.json`` for ``curve.csv``, ``phase.json`` for ``phase.csv`` and ``phase_lines.csv``);
    returns the count recorded. A table without such metadata (``LearningCurve.to_csv``) is not
    counted (None)."""
    for stem in dict.fromkeys([path.stem, path.stem.split("_")[0]]):
        meta_path = path.with_name(f"{stem}.json")
        try:
            meta = io.loads(io.read_text_file(meta_path, max_bytes=MAX_BYTES))
        except (OSError, ValueError):
            continue  # no metadata (or not ours): nothing to count against
        if not (isinstance(meta, dict) and isinstance(meta.get("files"), list)
                and path.name in meta["files"] and isinstance(meta.get("rows"), dict)):
            continue
        recorded = meta["rows"].get(path.name)
        if isinstance(recorded, int) and recorded != n:
            raise ValueError(f"{path} has {n} rows, but {meta_path.name}, written with it, records "
                             f"{recorded}: the table is truncated (or was rewritten without its metadata)")
        if isinstance(recorded, int):
            return recorded
    return None


def _curves(rows: list[list[str]], path: Path) -> list:
    from replica_mlm.theory.studies.curve import COLUMNS, LearningCurve

    header = rows[0]
    if len(rows) < 2:
        raise ValueError(f"{path}: a learning-curve table with a header and no rows (a curve has at least "
                         "one alpha)")
    blocks: list[list[dict]] = []
    for cells in rows[1:]:
        row = dict(zip(header, cells, strict=True))
        if not blocks or row["lam"] != blocks[-1][0]["lam"]:
            blocks.append([])
        blocks[-1].append(row)
    curves = []
    for block in blocks:
        first = block[0]
        cols = {c: np.array([_number(r[c], c) for r in block]) for c in COLUMNS}
        # files of before 0.1 (no method/loss columns) were written by the CLI's default choice
        loss, channel = first.get("loss", "square"), first.get("channel", "gaussian")
        method = first.get("method") or ("root" if (loss, channel) == ("square", "gaussian") else "general")
        if first.get("converged", "True") not in ("True", "False"):
            raise ValueError(f"{path}: converged must be True or False, got {first['converged']!r}")
        try:
            _checks.nonnegative(float(first["lam"]), "lam")
            curves.append(LearningCurve(**cols, lam=float(first["lam"]), rho=float(first["rho"]),
                                        noise=float(first["noise"]), method=method,
                                        converged=first.get("converged", "True") == "True",
                                        loss=loss, channel=channel))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    return curves


def _number(text: str, column: str):
    """A CSV cell as written by repr: int for the iteration counts, float otherwise."""
    if column == "iterations" and _INT.fullmatch(text):
        return int(text)
    return float(text)  # a float count (iterate) written as "12.0"; _table has checked the token
