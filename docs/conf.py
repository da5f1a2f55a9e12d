"""Sphinx configuration of the replica_mlm documentation.

Built with ``sphinx-build -W -b html docs <out>`` (warnings are errors; tests/test_docs.py does it in
CI). Sphinx rather than MkDocs: the API reference is generated from the numpy-style docstrings by
autodoc + napoleon, the CLI reference from the click commands themselves by sphinx-click, and the
markdown pages (theory.md, limit.md) with their LaTeX are read by myst-parser, all offline.
"""

import re

import replica_mlm

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
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
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
