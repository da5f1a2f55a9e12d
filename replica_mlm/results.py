"""Read back the files the command line writes: :func:`load`.

A sweep run on a cluster writes CSV and JSON (``replica-mlm curve``, ``simulate``, ``phase``,
``validate`` and the sections); :func:`load` turns them into the package's result objects or
pandas DataFrames, with every number exactly as computed. The CSV files hold numbers written with
Python's shortest round-trip ``repr`` (``inf`` and ``nan`` as such), the JSON files follow the one
convention of :mod:`replica_mlm.io` (``Infinity``, ``NaN``), so nothing is lost in the round trip.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from replica_mlm import io

__all__ = ["load"]


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
          as floats (:func:`replica_mlm.io.loads`).
        * ``curve.csv`` (columns ``lam, alpha, eg, ..., rho, noise``) and anything written by
          :meth:`LearningCurve.to_csv` / :func:`~replica_mlm.theory.curve.curves_to_csv`: a list of
          :class:`~replica_mlm.LearningCurve`, one per run of rows with the same lam, in file order,
          equal field by field to the curves that were written.
        * any other CSV (``simulate.csv``, ``phase.csv``, ``phase_lines.csv``): a DataFrame, one
          column per CSV column, floats parsed exactly (bit for bit as written).

    Raises
    ------
    TypeError
        If ``path`` is not a str or path.
    ValueError
        If the file is neither ``.json`` nor ``.csv``.
    FileNotFoundError
        If there is no such file.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a str or os.PathLike naming a .csv or .json file, got "
                        f"{type(path).__name__}")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise ValueError(f"path must name a .csv or .json file written by replica-mlm, got {path.name!r}")
    text = path.read_text(encoding="utf-8")
    if suffix == ".json":
        return io.loads(text)
    from replica_mlm.theory.curve import COLUMNS

    header = next(csv.reader([text.partition("\n")[0]]), [])
    if header[:len(COLUMNS) + 3] == ["lam", *COLUMNS, "rho", "noise"]:
        return _curves(text)
    import pandas as pd

    # pandas < 3 parses floats exactly only when asked; pandas 3 does by default (and deprecates asking)
    exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    return pd.read_csv(path, **exact)


def _curves(text: str) -> list:
    from replica_mlm.theory.curve import COLUMNS, LearningCurve

    rows = list(csv.DictReader(text.splitlines()))
    blocks: list[list[dict]] = []
    for row in rows:
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
        curves.append(LearningCurve(**cols, lam=float(first["lam"]), rho=float(first["rho"]),
                                    noise=float(first["noise"]), method=method,
                                    converged=first.get("converged", "True") == "True",
                                    loss=loss, channel=channel))
    return curves


def _number(text: str, column: str):
    """A CSV cell as written by repr: int for the iteration counts, float otherwise."""
    if column == "iterations":
        try:
            return int(text)
        except ValueError:  # a float count (iterate) written as "12.0"
            return float(text)
    return float(text)
