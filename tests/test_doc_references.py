"""What the package cites exists for its users: no reference to a file outside the package."""

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
