"""The validation suite: every section, one report.

``replica-mlm validate --quick --out DIR`` (and ``python -m validation --quick --out DIR`` from a
checkout) runs :func:`run_suite`. Each section is a module of :mod:`replica_mlm.validation` with a
function ``run(out, *, quick, rng, ...) -> Section``; adding one is one line in :data:`SECTIONS`.
Sections whose module is not installed (an optional part of the package still being written) are
skipped and listed as such in the report. Keywords a section's ``run`` does not accept
(``workers``, ``scheduler``, ``resume``, ``progress``) are not passed to it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from replica_mlm.validation.report import Section, write_report

__all__ = ["SECTIONS", "run_suite"]

#: name -> module of the section (a module with ``run(out, *, quick, rng, ...) -> Section``)
SECTIONS: dict[str, str] = {
    "mlm": "replica_mlm.validation.mlm",
    "limit": "replica_mlm.validation.limit",
    "attractor": "replica_mlm.validation.attractor",
    "potts": "replica_mlm.validation.potts",
    "erm": "replica_mlm.validation.erm",
    "discrete": "replica_mlm.validation.discrete",
    "figure2": "replica_mlm.validation.figure2",
}

#: sections that need an optional dependency (skipped, and listed as such, when it is missing)
REQUIRES: dict[str, str] = {"figure2": "torch"}

_OPTIONAL = ("workers", "scheduler", "resume", "progress")


def available_sections() -> list[str]:
    """Names of the sections whose module is importable here."""
    return [name for name, mod in SECTIONS.items() if importlib.util.find_spec(mod) is not None
            and (name not in REQUIRES or importlib.util.find_spec(REQUIRES[name]) is not None)]


def run_suite(
    out: str | Path,
    *,
    quick: bool = True,
    seed: int = 0,
    sections: list[str] | None = None,
    workers: int = 1,
    scheduler: Any = None,
    resume: bool = False,
    progress: bool | None = None,
    echo=None,
) -> dict:
    """Run the validation sections and write ``report.json``, ``report.md`` and figures into ``out``.

    Parameters
    ----------
    out : path
        Output folder.
    quick : bool
        CI-sized sweeps (all sections together: under 3 minutes on 2 cores) or the full ones.
    seed : int
        Root seed passed to every section as ``rng``.
    sections : list of str, optional
        Names from :data:`SECTIONS` (default: all available).
    workers, scheduler, resume, progress
        Passed to the sections that take them (see :func:`replica_mlm.sweep.run_sweep`).
    echo : callable, optional
        Called with one line of text per finished section (e.g. ``click.echo``).

    Returns
    -------
    dict
        The report as written to ``report.json``; ``report["passed"]`` is the overall verdict.

    Raises
    ------
    ValueError
        For an unknown section name.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(sections) if sections else list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown section(s) {unknown}; known: {sorted(SECTIONS)}")
    available = set(available_sections())
    skipped = [n for n in names if n not in available]
    started = time.time()
    results: list[Section] = []
    timing: dict[str, float] = {}
    options = {"workers": workers, "scheduler": scheduler, "resume": resume, "progress": progress}
    for name in names:
        if name in skipped:
            if echo:
                echo(f"[skip] {name}: module {SECTIONS[name]} or {REQUIRES.get(name, 'its dependencies')} "
                     "is not installed")
            continue
        run = importlib.import_module(SECTIONS[name]).run
        accepted = inspect.signature(run).parameters
        kwargs = {k: v for k, v in options.items() if k in accepted}
        t0 = time.time()
        section = run(out, quick=quick, rng=seed, **kwargs)
        timing[name] = section.seconds = time.time() - t0
        results.append(section)
        if echo:
            echo(f"[{'ok' if section.passed else 'FAIL'}] {name} ({timing[name]:.1f} s)")
            for c in section.checks:
                echo(f"    [{'ok' if c.passed else 'FAIL'}] {c.name}: {c.detail}")
    from replica_mlm import __version__

    return write_report(
        out, results,
        mode="quick" if quick else "full",
        parameters={"quick": quick, "seed": seed, "sections": names, "workers": workers,
                    "scheduler": None if scheduler is None else str(scheduler), "resume": resume},
        seeds={"root": seed, "per_section": "each section derives its seeds from the root seed (see "
                                            "its parameters)"},
        skipped_sections=skipped,
        timing_seconds={"total": time.time() - started, **timing},
        environment={"replica_mlm": __version__, "python": platform.python_version(),
                     "numpy": np.__version__, "machine": platform.machine()},
    )
