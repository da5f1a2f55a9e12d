"""The documentation builds with Sphinx, warnings as errors, and documents every public name."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import replica_mlm as rm

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("plot_*.py"))
#: the gallery example run inside the build; tests/test_examples.py runs the others as scripts
BUILD_EXAMPLE = "plot_01_learning_curve"


def test_docs_build_without_warnings(tmp_path):
    # built from a copy: sphinx-gallery writes the example pages into the source folder
    src = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", src, ignore=shutil.ignore_patterns("_build", "auto_examples",
                                                                     "__pycache__"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "agg",
           "REPLICA_MLM_DOCS_EXAMPLES": f"/{BUILD_EXAMPLE}"}
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d",
         str(tmp_path / "doctrees"), str(src), str(tmp_path / "html")],
        capture_output=True, text=True, cwd=ROOT, env=env,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html = tmp_path / "html"
    for page in ("index", "getting_started", "theory", "limit", "potts", "attractor", "figures", "api",
                 "cli", "changelog", "citing", "auto_examples/index"):
        assert (html / f"{page}.html").exists(), page
    cli = (html / "cli.html").read_text()
    for cmd in ("curve", "phase", "simulate", "validate", "equations", "attractor", "potts"):
        assert f"<h3>{cmd}" in cli and f"replica-mlm-{cmd}" in cli, cmd
    api = (html / "api.html").read_text()
    assert "replica_mlm.solve" in api and "Moore-Penrose" in api
    # every example has its page; the one run in the build shows its figure and its output
    assert len(EXAMPLES) >= 9
    gallery = (html / "auto_examples" / "index.html").read_text()
    for example in EXAMPLES:
        assert (html / "auto_examples" / f"{example.stem}.html").exists(), example.name
        assert f"{example.stem}.html" in gallery, example.name
    assert (html / "_images" / f"sphx_glr_{BUILD_EXAMPLE}_001.png").stat().st_size > 10_000
    assert "largest residual" in (html / "auto_examples" / f"{BUILD_EXAMPLE}.html").read_text()


def test_api_page_lists_every_public_name():
    text = (ROOT / "docs" / "api.rst").read_text()
    documented = set(re.findall(r"replica_mlm\.(\w+)", text))
    missing = [n for n in rm.__all__ if n != "__version__" and n not in documented]
    assert not missing, f"add to docs/api.rst: {missing}"
