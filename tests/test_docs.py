"""The documentation builds with Sphinx, warnings as errors, and documents every public name."""

import os
import re
import subprocess
import sys
from pathlib import Path

import replica_mlm as rm

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_without_warnings(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d",
         str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = tmp_path / "html"
    for page in ("index", "getting_started", "theory", "limit", "potts", "attractor", "figures", "api",
                 "cli"):
        assert (html / f"{page}.html").exists(), page
    cli = (html / "cli.html").read_text()
    for cmd in ("curve", "phase", "simulate", "validate", "equations", "attractor", "potts"):
        assert f"<h3>{cmd}" in cli and f"replica-mlm-{cmd}" in cli, cmd
    api = (html / "api.html").read_text()
    assert "replica_mlm.solve" in api and "Moore-Penrose" in api


def test_api_page_lists_every_public_name():
    text = (ROOT / "docs" / "api.rst").read_text()
    documented = set(re.findall(r"replica_mlm\.(\w+)", text))
    missing = [n for n in rm.__all__ if n != "__version__" and n not in documented]
    assert not missing, f"add to docs/api.rst: {missing}"
