"""report.md states numbers to their meaning (4 significant digits, beside the threshold) and shows
the PNG of each figure with a link to its PDF; report.json keeps every digit."""

from __future__ import annotations

import json

from replica_mlm.validation.report import DIGITS, Check, Section, write_report


def test_report_numbers_and_figures(tmp_path):
    value = {"max_abs_z": 2.718281828459045, "n": 240, "per_lam": [0.1234567891, 1e-9 / 3]}
    checks = [Check("demo.dict", True, value, {"max_abs_z": 3.0}, "a dict of numbers"),
              Check("demo.float", False, 0.333333333333, 0.25, "one number")]
    section = Section("demo", checks=checks, figures=["demo_fig.png", "demo_fig.pdf", "only.pdf"])
    write_report(tmp_path, [section])
    md = (tmp_path / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| demo.dict |"))
    assert "max_abs_z: 2.718, n: 240, per_lam: [0.1235, 3.333e-10]" in row
    assert "| max_abs_z: 3 |" in row  # the threshold beside the value
    assert "{" not in row and "2.71828" not in row  # no raw dict, no 16 digits
    assert "| 0.3333 | 0.25 |" in md
    assert DIGITS == 4
    assert "![demo_fig](demo_fig.png) ([PDF](demo_fig.pdf))" in md
    assert "](demo_fig.pdf)" not in md.replace("([PDF](demo_fig.pdf))", "")  # no PDF shown as an image
    assert "[only.pdf](only.pdf)" in md and "![only]" not in md
    stored = json.loads((tmp_path / "report.json").read_text())
    assert stored["checks"][0]["value"]["max_abs_z"] == 2.718281828459045  # every digit kept
