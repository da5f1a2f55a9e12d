"""What the package cites exists for its users: no reference to a file outside the package."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the project's internal notes file; spelled in two pieces so that this test does not match itself
_INTERNAL_NOTES = "THEORY" + ".md"
SHIPPED_DIRS = ("replica_mlm", "docs", "tests", "benchmarks", "validation", ".ci")
SHIPPED_FILES = ("README.md", "pyproject.toml", "CITATION.cff")
_SKIP_DIRS = {"__pycache__", "_build", "auto_examples"}


def shipped_text_files(root: Path = ROOT) -> list[Path]:
    """Every text file of the package, its docs, tests, benchmarks and validation, and top-level files."""
    files = [root / name for name in SHIPPED_FILES if (root / name).exists()]
    for name in SHIPPED_DIRS:
        for path in sorted((root / name).rglob("*")):
            if not path.is_file() or _SKIP_DIRS.intersection(path.relative_to(root).parts):
                continue
            try:
                path.read_text(encoding="utf-8")
            except UnicodeDecodeError:  # images and other binary files
                continue
            files.append(path)
    return files


def internal_references(root: Path = ROOT) -> list[str]:
    """``path:line`` of every mention of the internal notes file."""
    hits = []
    for path in shipped_text_files(root):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _INTERNAL_NOTES in line:
                hits.append(f"{path.relative_to(root)}:{number}")
    return hits


def test_scan_covers_the_package_and_its_docs():
    names = {str(p.relative_to(ROOT)) for p in shipped_text_files()}
    for expected in ("README.md", "docs/theory.md", "replica_mlm/__init__.py", "tests/conftest.py",
                     "docs/conf.py", "benchmarks/README.md"):
        assert expected in names, expected


def test_scan_finds_a_planted_reference(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("clean line\nsee " + _INTERNAL_NOTES + " section 3\n")
    (tmp_path / "README.md").write_text("nothing here\n")
    assert internal_references(tmp_path) == ["docs/page.md:2"]


def test_no_reference_to_the_internal_notes_file():
    hits = internal_references()
    assert not hits, (f"{_INTERNAL_NOTES} is not part of the package and users never see it; cite the "
                      f"package's own docs instead (e.g. docs/theory.md, section N): {hits}")


# "docs/theory.md, section 3", "sections 2-4", "sections 3 and 6", "s. 1", "section 'The general engine'"
_REF = re.compile(
    r"docs/(\w+)\.md,?[ ]\(?(?:sections?|s\.)[ ]"
    r"(?:(\d+)(?:[ ]?(?:-|–|and)[ ]?(\d+))?|['\"]([^'\"\n]+)['\"])"
)
_PAGE_TITLE = re.compile(r"docs/(\w+)\.md,[ ]['\"]([^'\"\n]+)['\"]")  # docs/potts.md, 'Random instances'
_PAGE = re.compile(r"docs/(\w+)\.md")


def _headings(page: Path) -> list[str]:
    """Heading texts of a markdown page, without the leading '#'s and without a section number."""
    out = []
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#{1,4}\s+(?:(\d+)\.\s+)?(.*)", line)
        if m:
            out.append((m.group(1), m.group(2).strip()))
    return out


def broken_doc_references(root: Path = ROOT) -> list[str]:
    """Every ``docs/<page>.md`` reference whose page, numbered section or titled section is missing."""
    bad = []
    for path in shipped_text_files(root):
        if path.parent == root / "docs" or path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(root))
        for m in _PAGE.finditer(text):
            if not (root / "docs" / f"{m.group(1)}.md").exists():
                bad.append(f"{where}: {m.group(0)} does not exist")
        for m in list(_REF.finditer(text)) + list(_PAGE_TITLE.finditer(text)):
            page = root / "docs" / f"{m.group(1)}.md"
            if not page.exists():
                continue
            heads = _headings(page)
            if m.re is _REF and m.group(2):
                lo, hi = int(m.group(2)), int(m.group(3) or m.group(2))
                numbers = {n for n, _ in heads if n}
                missing = [n for n in {lo, hi} if str(n) not in numbers]
                if missing or hi < lo:
                    bad.append(f"{where}: {m.group(0)!r}: no section {missing or (lo, hi)} in {page.name}")
            else:
                title = m.group(4) if m.re is _REF else m.group(2)
                if not any(h.startswith(title) for _, h in heads):
                    bad.append(f"{where}: {m.group(0)!r}: no section titled {title!r} in {page.name}")
    return bad


def test_reference_checker_finds_missing_pages_and_sections(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "theory.md").write_text("# T\n## 1. Ridge\n## 2. Free energy\n### Sub part\n")
    (tmp_path / "README.md").write_text(
        "docs/theory.md, section 2\ndocs/theory.md, sections 1-2\ndocs/theory.md, section 'Free energy'\n"
        "docs/theory.md, 'Sub part'\n"  # all four resolve
        "docs/theory.md, section 3\ndocs/theory.md, sections 1 and 4\ndocs/theory.md, section 'Peak'\n"
        "docs/nowhere.md\ndocs/theory.md, 'Nothing'\n"
    )
    bad = broken_doc_references(tmp_path)
    assert len(bad) == 5, bad
    assert all(line.startswith("README.md: ") for line in bad)
    for fragment in ("section 3", "1 and 4", "'Peak'", "nowhere.md", "'Nothing'"):
        assert sum(fragment in line for line in bad) == 1, (fragment, bad)


def test_every_docs_reference_resolves():
    bad = broken_doc_references()
    assert not bad, "\n".join(bad)


def test_citing_page_matches_citation_cff():
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    page = (ROOT / "docs" / "citing.md").read_text(encoding="utf-8")
    version = re.search(r"^version:\s*([\w.]+)", cff, re.M).group(1)
    assert f"version = {{{version}}}" in page
    dois = re.findall(r'doi:\s*"([^"]+)"', cff)
    arxiv = re.findall(r'"arXiv:([\d.]+)"', cff)
    assert dois and len(arxiv) == 2
    for doi in dois:
        assert f"doi     = {{{doi}}}" in page, doi
    for number in arxiv:
        assert f"eprint  = {{{number}}}" in page or f"eprint    = {{{number}}}" in page, number
    titles = re.findall(r'^\s+title:\s*"([^"]+)"', cff, re.M)
    assert len(titles) == 2
    for title in titles:  # BibTeX braces protect capitals: compare without them
        assert title in page.replace("{Potts}", "Potts"), title
