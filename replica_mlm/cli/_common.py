"""Pieces shared by the subcommands: task options, output folder, metadata."""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from replica_mlm import __version__
from replica_mlm.validation.report import _jsonable, atomic_write_text


def task_options(f):
    """Options that pick the learning task: a finite Gaussian Potts instance and a masked site."""
    f = click.option("--site", "site", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Masked site i (0 <= i < L).")(f)
    f = click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Seed of the GOE couplings J.")(f)
    f = click.option("--L", "L", type=click.IntRange(min=2), default=500, show_default=True,
                     help="Number of sites; p = L - 1 inputs.")(f)
    f = click.option("--shift", type=click.FloatRange(min=0, min_open=True), default=3.0,
                     show_default=True, help="Shift s of the precision s I - J (s > 2 for large L).")(f)
    return f


def make_task(*, L: int, shift: float, seed: int, site: int):
    """The masked site of a random Gaussian Potts model, with errors turned into usage errors."""
    from replica_mlm import GaussianPotts

    try:
        return GaussianPotts.random(L=L, shift=shift, seed=seed).masked_site(site)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def alpha_grid(alpha_min: float, alpha_max: float, points: int) -> np.ndarray:
    if not 0 < alpha_min < alpha_max:
        raise click.UsageError(f"need 0 < --alpha-min < --alpha-max, got {alpha_min}, {alpha_max}")
    return np.linspace(alpha_min, alpha_max, points)


def write_metadata(out: Path, name: str, parameters: dict[str, Any], *, started: float,
                   files: list[str | Path], extra: dict[str, Any] | None = None) -> Path:
    """Write ``<name>.json``: parameters, version, seeds, timing and the files written."""
    meta = {
        "command": " ".join(["replica-mlm", *sys.argv[1:]]),
        "version": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "parameters": parameters,
        "elapsed_seconds": time.time() - started,
        "files": [str(Path(f).name) for f in files],
        **(extra or {}),
    }
    path = out / f"{name}.json"
    atomic_write_text(path, json.dumps(_jsonable(meta), indent=2) + "\n")
    return path
