"""Reports of the validation suite: checks with numbers, written as JSON and Markdown."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# atomic_write_text is re-exported for the validation sections, which import it from here
from replica_mlm.io import atomic_write_text, to_plain, write_json


@dataclass
class Check:
    """One claim stated with a number.

    Attributes
    ----------
    name : str
        Short identifier, e.g. ``"potts.pseudolikelihood_equivalence"``.
    passed : bool
        Whether ``value`` satisfies ``threshold``.
    value, threshold
        The measured number(s) and the bound they are held to (JSON-serialisable).
    detail : str
        One sentence saying what was measured and against what.
    """

    name: str
    passed: bool
    value: Any
    threshold: Any
    detail: str = ""


@dataclass
class Section:
    """The outcome of one entry of the suite: its checks, figures and raw numbers."""

    name: str
    checks: list[Check] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    #: wall-clock seconds of the section's run (set by the suite)
    seconds: float | None = None
    #: CPU seconds (user + system) of the run, its process-pool workers included, Dask workers not
    #: (set by the suite, see :func:`replica_mlm.validation.suite.cpu_seconds`)
    cpu_seconds: float | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


def write_report(out: str | os.PathLike, sections: list[Section], **metadata: Any) -> dict:
    """Write ``report.json`` and ``report.md`` for ``sections`` into folder ``out``.

    The JSON is shaped ``{"passed": bool, "checks": [{"name", "passed", "value",
    "threshold", "detail"}, ...], "sections": [...], **metadata}``.
    """
    from replica_mlm import __version__

    out = Path(out)
    checks = [c for s in sections for c in s.checks]
    report = {
        "passed": all(c.passed for c in checks),
        "version": __version__,
        "checks": [asdict(c) for c in checks],
        "sections": [
            {
                "name": s.name,
                "passed": s.passed,
                "seconds": s.seconds,
                "cpu_seconds": s.cpu_seconds,
                "figures": s.figures,
                "parameters": s.parameters,
                "data": s.data,
            }
            for s in sections
        ],
        **metadata,
    }
    report = to_plain(report)
    write_json(out / "report.json", report, indent=2)

    lines = [f"# replica_mlm validation report (version {__version__})", ""]
    lines.append(f"**Overall: {'PASSED' if report['passed'] else 'FAILED'}**")
    lines.append("")
    if "mode" in metadata:
        lines += [f"Mode: {metadata['mode']}.", ""]
    timed = [s for s in sections if s.seconds is not None]
    if timed:
        total = (metadata.get("timing_seconds") or {}).get("total")
        cpu_total = (metadata.get("cpu_seconds") or {}).get("total")
        lines += ["| section | passed | wall time [s] | CPU time [s] |", "|---|---|---|---|"]
        lines += [f"| {s.name} | {'yes' if s.passed else '**NO**'} | {s.seconds:.1f} | "
                  f"{_fmt_s(s.cpu_seconds)} |" for s in timed]
        if total is not None:
            lines.append(f"| total | {'yes' if report['passed'] else '**NO**'} | {total:.1f} | "
                         f"{_fmt_s(cpu_total)} |")
        lines += ["", "CPU time: user + system seconds of the run and its process-pool workers (the "
                      "workers of a Dask cluster are not counted).", ""]
    for s in sections:
        lines += [f"## {s.name}", ""]
        if s.seconds is not None:
            cpu = "" if s.cpu_seconds is None else f", CPU time: {s.cpu_seconds:.1f} s"
            lines += [f"Wall time: {s.seconds:.1f} s{cpu}.", ""]
        lines += ["| check | passed | value | threshold | what |", "|---|---|---|---|---|"]
        for c in s.checks:
            lines.append(
                f"| {c.name} | {'yes' if c.passed else '**NO**'} | {_fmt(c.value)} | "
                f"{_fmt(c.threshold)} | {c.detail} |"
            )
        lines.append("")
        for fig in s.figures:
            lines.append(f"![{Path(fig).stem}]({fig})")
        lines.append("")
    atomic_write_text(out / "report.md", "\n".join(lines) + "\n")
    return report


def _fmt_s(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds:.1f}"


def _fmt(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.6g}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)
