"""The Python of README.md and docs/*.md runs as a reader would run it, and the names it mentions
exist.

Each file's ```python blocks run in order, in one namespace, in a temporary folder (so nothing is
written into the repository), with matplotlib's Agg backend. A block is skipped only if the line
just before its fence (blank lines aside) is ``<!-- skip-test: reason -->``, the documented
convention (docs/getting_started.md, "Examples in the docs"); skips are few and counted here.
Every ``rm.<name>`` and ``rm.<name>.<attribute>...`` in those files must resolve.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from pathlib import Path

import pytest

import replica_mlm as rm

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!--\s*skip-test:\s*(.+?)\s*-->")
#: blocks skipped on purpose, at most (each with its reason in the page)
MAX_SKIPS = 3


def blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """(line number, code, skip reason or None) of each ```python block of ``page``."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            reason = SKIP.search(lines[j]).group(1) if j >= 0 and SKIP.search(lines[j]) else None
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            out.append((i + 1, "\n".join(lines[i + 1:end]), reason))
            i = end
        i += 1
    return out


def resolve(dotted: str):
    """``rm.a.b.c`` as an attribute chain from ``rm``, importing ``replica_mlm.a.b`` where needed."""
    parts = dotted.split(".")
    obj = rm
    for k, part in enumerate(parts):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module("replica_mlm." + ".".join(parts[:k + 1]))
    return obj


PAGES_WITH_CODE = [p for p in PAGES if blocks(p)]


def test_the_pages_have_code_and_few_skips():
    assert {p.name for p in PAGES_WITH_CODE} >= {"README.md", "getting_started.md"}
    skipped = [(p.name, line, why) for p in PAGES for line, _, why in blocks(p) if why]
    assert len(skipped) <= MAX_SKIPS, skipped


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: p.name)
def test_the_blocks_of_a_page_run_in_order(page, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    namespace: dict = {"__name__": "__docs__"}
    # a page may set a style (plt.style.use): its rcParams end with the page, not leak into other tests
    with matplotlib.rc_context():
        for line, code, reason in blocks(page):
            if reason:
                continue
            started = time.perf_counter()
            try:
                exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
            except Exception as exc:  # the page and line, not a traceback into exec
                pytest.fail(f"{page.name}, block at line {line}: {type(exc).__name__}: {exc}")
            finally:
                plt.close("all")
            print(f"{page.name}:{line}: {time.perf_counter() - started:.1f} s")



@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_rm_name_a_page_mentions_exists(page):
    text = page.read_text(encoding="utf-8")
    names = sorted(set(re.findall(r"(?<![\w.])rm\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)", text)))
    missing = []
    for name in names:
        try:
            resolve(name)
        except (AttributeError, ImportError):
            missing.append(f"rm.{name}")
    assert not missing, f"{page.name} names what does not exist: {missing}"


#: what an example may give --out: the default root's folders, or the placeholder of a syntax line
OUT_FOLDER = re.compile(r"(replica-mlm-out/\S*|DIR|''|\"\")$")


def _code(text: str) -> list[str]:
    """Fenced blocks and inline code spans of a page (a span may wrap onto the next line)."""
    return re.findall(r"```.*?```|`[^`]+`", text, flags=re.S)


@pytest.mark.parametrize("page", [p for p in [*PAGES, *sorted((ROOT / "docs").glob("*.rst"))]
                                  if p.name != "changelog.md"], ids=lambda p: p.name)
def test_examples_spell_rng_and_write_under_one_folder(page):
    """Every example spells randomness ``rng=`` (``seed=`` only where the alias itself is named)
    and writes under ``replica-mlm-out/``: each ``--out`` and each ``path=`` of a figure."""
    bad = []
    for code in _code(page.read_text(encoding="utf-8")):
        if re.search(r"\bseed=", code) and code.strip("`") != "seed=":
            bad.append(f"seed= in {code[:80]!r}")
        bad += [f"--out {o}" for o in re.findall(r"--out[ =]([^\s`]+)", code) if not OUT_FOLDER.match(o)]
        bad += [f"path={p!r}" for p in re.findall(r"\bpath=[\"']([^\"']+)", code)
                if not p.startswith("replica-mlm-out/")]
    assert not bad, f"{page.name}: {bad}"


def test_the_gallery_spells_rng():
    """The gallery's scripts (docs/examples) spell randomness as the pages do."""
    bad = [f"{p.name}:{k}" for p in sorted((ROOT / "docs" / "examples").glob("*.py"))
           for k, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if re.search(r"\bseed=", line)]
    assert not bad, bad
