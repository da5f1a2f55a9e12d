"""The validation suite: every section, one report.

``replica-mlm validate --quick --out DIR`` (and ``python -m validation --quick --out DIR`` from a
checkout) runs :func:`run_suite`. Each section is a module of :mod:`replica_mlm.validation` with a
function ``run(out, *, quick, rng, ...) -> Section``; adding one is one line in :data:`SECTIONS`.
Sections whose module is not installed (an optional part of the package still being written) are
skipped and listed as such in the report. Keywords a section's ``run`` does not accept
(``workers``, ``scheduler``, ``resume``, ``progress``) are not passed to it.

The report records each section's wall time and CPU time (:func:`cpu_seconds`: user + system time
of this process and of its child processes that have ended, so a section's process-pool workers
count, once the pool is shut down; the CPU of Dask workers, which are not children of this process,
does not).
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

__all__ = ["SECTIONS", "cpu_seconds", "run_suite"]

#: name -> module of the section (a module with ``run(out, *, quick, rng, ...) -> Section``)
SECTIONS: dict[str, str] = {
    "mlm": "replica_mlm.validation.mlm_section",
    "limit": "replica_mlm.validation.limit_section",
    "attractor": "replica_mlm.validation.attractor_section",
    "potts": "replica_mlm.validation.potts_section",
    "erm": "replica_mlm.validation.erm_section",
    "discrete": "replica_mlm.validation.discrete_section",
    "figure2": "replica_mlm.validation.figure2_section",
    "bayes": "replica_mlm.validation.bayes_section",
    "dynamics": "replica_mlm.validation.dynamics_section",
}

#: sections that need an optional dependency (skipped, and listed as such, when it is missing)
REQUIRES: dict[str, str] = {"figure2": "torch"}

_OPTIONAL = ("workers", "scheduler", "resume", "progress")


def cpu_seconds() -> float | None:
    """User + system CPU seconds of this process and of its ended, waited-for child processes.

    ``resource.getrusage(RUSAGE_SELF)`` plus ``getrusage(RUSAGE_CHILDREN)``: the workers of a
    :class:`concurrent.futures.ProcessPoolExecutor` are children and count once the pool has shut
    down; Dask workers (processes of a cluster, not children of this one) do not. ``None`` where
    the :mod:`resource` module does not exist (Windows).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Unix
        return None
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


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
        Passed to the sections that take them (see :func:`replica_mlm._base.sweep.run_sweep`).
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
    started, cpu_started = time.time(), cpu_seconds()
    results: list[Section] = []
    timing: dict[str, float] = {}
    cpu: dict[str, float | None] = {}
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
        t0, c0 = time.time(), cpu_seconds()
        section = run(out, quick=quick, rng=seed, **kwargs)
        timing[name] = section.seconds = time.time() - t0
        cpu[name] = section.cpu_seconds = None if c0 is None else cpu_seconds() - c0
        results.append(section)
        if echo:
            used = "" if cpu[name] is None else f", CPU {cpu[name]:.1f} s"
            echo(f"[{'ok' if section.passed else 'FAIL'}] {name} ({timing[name]:.1f} s{used})")
            for c in section.checks:
                echo(f"    [{c.label}] {c.name}: {c.detail}")
    from replica_mlm._version import __version__

    return write_report(
        out, results,
        mode="quick" if quick else "full",
        parameters={"quick": quick, "seed": seed, "sections": names, "workers": workers,
                    "scheduler": None if scheduler is None else str(scheduler), "resume": resume},
        seeds={"root": seed, "per_section": "each section derives its seeds from the root seed (see "
                                            "its parameters)"},
        skipped_sections=skipped,
        timing_seconds={"total": time.time() - started, **timing},
        cpu_seconds={"total": None if cpu_started is None else cpu_seconds() - cpu_started, **cpu},
        cpu_seconds_counts="user + system time of this process and its ended child processes "
                           "(process-pool workers), not of Dask workers",
        environment={"replica_mlm": __version__, "python": platform.python_version(),
                     "numpy": np.__version__, "machine": platform.machine()},
    )
