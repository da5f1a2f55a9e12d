"""The code base stays ruff-clean: lint is part of the test suite (and so of CI)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff")
    cmd = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    try:
        proc = subprocess.run([*cmd, "check", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    except FileNotFoundError:  # pragma: no cover - ruff is in the [test] extra
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    assert proc.returncode == 0, proc.stdout + proc.stderr
