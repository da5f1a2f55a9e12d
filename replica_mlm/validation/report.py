"""Reports of the validation suite: checks with numbers, written as JSON and Markdown."""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


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

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.bool_ | bool):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        x = float(obj)
        return x if math.isfinite(x) else str(x)  # JSON has no inf/nan: write them as strings
    if isinstance(obj, Path):
        return str(obj)
    return obj


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
                "figures": s.figures,
                "parameters": s.parameters,
                "data": s.data,
            }
            for s in sections
        ],
        **metadata,
    }
    report = _jsonable(report)
    atomic_write_text(out / "report.json", json.dumps(report, indent=2) + "\n")

    lines = [f"# replica_mlm validation report (version {__version__})", ""]
    lines.append(f"**Overall: {'PASSED' if report['passed'] else 'FAILED'}**")
    lines.append("")
    for s in sections:
        lines += [f"## {s.name}", "", "| check | passed | value | threshold | what |",
                  "|---|---|---|---|---|"]
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


def _fmt(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return f"{float(v):.6g}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)
