"""Sphinx configuration of the replica_mlm documentation.

Built with ``sphinx-build -W -b html docs <out>`` (warnings are errors; tests/test_docs.py does it in
CI). Sphinx rather than MkDocs: the API reference is generated from the numpy-style docstrings by
autodoc + napoleon, the CLI reference from the click commands themselves by sphinx-click, the
markdown pages (theory.md, limit.md, ...) with their LaTeX are read by myst-parser, and the gallery
of examples is run by sphinx-gallery, all offline.
"""

import os
import re
import sys
from pathlib import Path

import replica_mlm

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _gallery.py, named in sphinx_gallery_conf

project = "replica_mlm"
author = "replica_mlm developers"
release = version = replica_mlm.__version__
copyright = "replica_mlm developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",  # math is rendered by MathJax when the page is viewed
    "sphinx_click",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "examples/GALLERY_HEADER.rst"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_ivar = True  # "Attributes" of dataclasses as :ivar:, not duplicate attribute entries
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
# dataclass fields are listed in the "Attributes" sections already
autodoc_class_signature = "mixed"
# ":ivar alpha:" fields of several result classes link the same short names (alpha, lam): ambiguous
# but harmless cross-references
suppress_warnings = ["myst.header", "ref.python"]

# --- the gallery (docs/examples/plot_*.py, run at build time, a few seconds each). Which examples
# run is set by REPLICA_MLM_DOCS_EXAMPLES: "all" (default), "none" (pages with code, no output), or
# a regular expression matched against the example's path (tests/test_docs.py runs one in the
# build and every other one as a plain script, tests/test_examples.py, so that the suite stays fast).
_EXAMPLES = os.environ.get("REPLICA_MLM_DOCS_EXAMPLES", "all").strip()
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_" if _EXAMPLES in ("all", "none") else _EXAMPLES,
    "plot_gallery": _EXAMPLES != "none",
    "within_subsection_order": "FileNameSortKey",  # plot_01_..., plot_02_..., in that order
    "abort_on_example_error": True,  # an example that raises fails the build
    "download_all_examples": False,
    "write_computation_times": False,
    "remove_config_comments": True,
    "image_scrapers": ("_gallery.tight_scraper",),
}

html_theme = "alabaster"
html_theme_options = {"description": "Replica theory of masked language modelling", "fixed_sidebar": True}
html_static_path = []


# --- plain-text docstrings and click help use |w|^2 for norms; reST would read |...| as a
# substitution reference, so bars outside ``literals`` are escaped before parsing.
_LITERAL = re.compile(r"(``.*?``)")


def _escape_bars(lines: list[str]) -> None:
    for i, line in enumerate(lines):
        if "|" not in line or line.lstrip().startswith(("+", "|")):  # keep grid and line blocks
            continue
        parts = _LITERAL.split(line)
        lines[i] = "".join(p if p.startswith("``") else p.replace("|", "\\|") for p in parts)


def _docstring(app, what, name, obj, options, lines):
    _escape_bars(lines)


def _click(app, ctx, lines):
    _escape_bars(lines)


def setup(app):
    app.connect("autodoc-process-docstring", _docstring)
    for event in ("description", "epilog", "options", "usage"):
        app.connect(f"sphinx-click-process-{event}", _click)
