"""Command-line messages a newcomer meets: a comma list for a repeatable option, the help of
unbounded numbers, and the usage line of python -m validation (which must run as printed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from replica_mlm.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_a_comma_list_says_to_repeat_the_option(tmp_path):
    res = CliRunner().invoke(main, ["simulate", "--lam", "0.1,0.01", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2
    expected = "'0.1,0.01' is not one number: repeat --lam for several values (--lam 0.1 --lam 0.01)"
    assert expected in res.output
    assert not (tmp_path / "x").exists()


def test_unbounded_numbers_show_no_empty_range():
    for cmd in ("curve", "phase", "simulate"):
        text = CliRunner().invoke(main, [cmd, "--help"], terminal_width=200).output
        assert "None" not in text, cmd
    text = CliRunner().invoke(main, ["curve", "--help"], terminal_width=200).output
    assert "Largest alpha.  [default: 12.0]" in text


def test_the_usage_line_of_python_m_validation_runs():
    out = subprocess.run([sys.executable, "-m", "validation", "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    usage = out.stdout.splitlines()[0]
    assert out.returncode == 0 and usage.startswith("Usage: python -m validation")
    command = usage.removeprefix("Usage: ").replace("[OPTIONS]", "--help").split()
    again = subprocess.run([sys.executable, *command[1:]], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0 and again.stdout == out.stdout
