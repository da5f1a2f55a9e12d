"""Reports of the validation suite: checks with numbers, written as JSON and Markdown."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# atomic_write_text is re-exported for the validation sections, which import it from here
from replica_mlm._base.io import atomic_write_text, to_plain, write_json
from replica_mlm.validation import known_deviations


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
    known_deviation : str or None
        Why the claim is measured and not reproduced, from
        :data:`~replica_mlm.validation.known_deviations.KNOWN_DEVIATIONS` (filled in from the check's
        name); None for a claim expected to hold.
    """

    name: str
    passed: bool
    value: Any
    threshold: Any
    detail: str = ""
    known_deviation: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.known_deviation = known_deviations.reason(self.name)

    @property
    def ok(self) -> bool:
        """The verdict: a claim expected to hold passed, or a known deviation failed as documented."""
        return self.passed != (self.known_deviation is not None)

    @property
    def status(self) -> str:
        """``"passed"``, ``"failed"``, ``"known deviation"`` or ``"unexpectedly passed"``."""
        if self.known_deviation is None:
            return "passed" if self.passed else "failed"
        return "unexpectedly passed" if self.passed else "known deviation"

    @property
    def label(self) -> str:
        """The tag printed before the check on a terminal."""
        return {"passed": "ok", "failed": "FAIL", "known deviation": "known deviation",
                "unexpectedly passed": "UNEXPECTED PASS"}[self.status]


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
        """Every check's verdict is as expected (:attr:`Check.ok`): known deviations may fail."""
        return all(c.ok for c in self.checks)


def summary(checks: list[Check]) -> str:
    """One line: ``"N passed, K known deviations (not reproduced: a, b)"``, and what went wrong.

    Failed checks (``"M failed: x, y"``) and known deviations that passed (``"J known deviations
    unexpectedly passed: z"``) are named after the counts.

    Parameters
    ----------
    checks : list of Check
    """
    def named(status: str) -> list[str]:
        return [c.name for c in checks if c.status == status]

    known, failed, unexpected = named("known deviation"), named("failed"), named("unexpectedly passed")
    parts = [f"{len(named('passed'))} passed"]
    if failed:
        parts.append(f"{len(failed)} failed ({', '.join(failed)})")
    if known:
        parts.append(f"{len(known)} known deviation{'s' if len(known) > 1 else ''} "
                     f"(not reproduced: {', '.join(known)})")
    if unexpected:
        parts.append(f"{len(unexpected)} known deviation{'s' if len(unexpected) > 1 else ''} "
                     f"unexpectedly passed ({', '.join(unexpected)})")
    return ", ".join(parts)


def write_report(out: str | os.PathLike, sections: list[Section], **metadata: Any) -> dict:
    """Write ``report.json`` and ``report.md`` for ``sections`` into folder ``out``.

    The JSON is shaped ``{"passed": bool, "summary": str, "checks": [{"name", "passed", "status",
    "value", "threshold", "detail", "known_deviation"}, ...], "sections": [...], **metadata}``;
    ``passed`` is the verdict (every check as expected, :attr:`Check.ok`), ``summary`` the line of
    :func:`summary`.
    """
    from replica_mlm._version import __version__

    out = Path(out)
    checks = [c for s in sections for c in s.checks]
    report = {
        "passed": all(c.ok for c in checks),
        "summary": summary(checks),
        "version": __version__,
        "checks": [{**asdict(c), "status": c.status} for c in checks],
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
    lines.append(f"**Overall: {'PASSED' if report['passed'] else 'FAILED'}**: {report['summary']}.")
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
                f"| {c.name} | {_STATUS[c.status]} | {_fmt(c.value)} | "
                f"{_fmt(c.threshold)} | {c.detail} |"
            )
        known = [c for c in s.checks if c.known_deviation is not None]
        if known:
            lines += ["", "Known deviations (measured, not reproduced; the run passes while they fail):", ""]
            lines += [f"* `{c.name}`: {c.known_deviation}." for c in known]
        lines.append("")
        lines += _figure_links(s.figures)
        lines.append("")
    atomic_write_text(out / "report.md", "\n".join(lines) + "\n")
    return report


#: how report.md shows a check's status
_STATUS = {"passed": "yes", "failed": "**NO**", "known deviation": "no (known deviation)",
           "unexpectedly passed": "**yes (known deviation passed)**"}


def _fmt_s(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds:.1f}"


#: significant digits of the numbers in report.md (report.json keeps every digit)
DIGITS = 4
#: entries of a list shown in report.md before the rest is counted
LIST_SHOWN = 8


def _fmt(v: Any) -> str:
    """A value or threshold for a Markdown table cell: numbers to :data:`DIGITS` significant
    digits, dicts as ``key: value`` pairs, long lists cut after :data:`LIST_SHOWN` entries."""
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        return f"{float(v):.{DIGITS}g}"
    if isinstance(v, np.ndarray):
        return _fmt(v.tolist())
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items())
    if isinstance(v, list | tuple):
        shown = ", ".join(_fmt(x) for x in v[:LIST_SHOWN])
        more = f", ... ({len(v)} values)" if len(v) > LIST_SHOWN else ""
        return f"[{shown}{more}]"
    return str(v).replace("|", "\\|")


def _figure_links(figures: list[str]) -> list[str]:
    """Markdown for a section's figure files: each PNG shown (viewers render PNG, not PDF), with a
    link to its PDF beside it; a PDF without a PNG is linked."""
    names = list(dict.fromkeys(figures))
    out = []
    for fig in names:
        path = Path(fig)
        pdf = str(path.with_suffix(".pdf"))
        if path.suffix.lower() == ".png":
            out.append(f"![{path.stem}]({fig})" + (f" ([PDF]({pdf}))" if pdf in names else ""))
        elif path.suffix.lower() != ".pdf" or str(path.with_suffix(".png")) not in names:
            out.append(f"[{path.name}]({fig})")
    return out
