"""The sequences of a Stockholm alignment (Pfam, Rfam, HMMER), which biotite does not read.

Only what an alignment needs: ``name  aligned-sequence`` lines, joined in order when the
alignment is split into blocks; markup (``#=GF``, ``#=GS``, ``#=GR``, ``#=GC``), comments and blank
lines are skipped; the first ``//`` ends the alignment (a file holding several gives the first).
"""

from __future__ import annotations

from pathlib import Path


def parse_stockholm(text: str, path: Path) -> list[tuple[str, str, int]]:
    """(name, aligned string, line number of its first appearance) for every sequence.

    Raises
    ------
    ValueError
        Naming the file and the line: a sequence line that is not ``name sequence``, or no
        sequence at all.
    """
    parts: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("//"):
            break
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 2:
            raise ValueError(f"{path}, line {number}: expected 'name sequence' in a Stockholm "
                             f"alignment, found {line[:40]!r}")
        name, seq = fields
        parts.setdefault(name, []).append(seq)
        first_line.setdefault(name, number)
    if not parts:
        raise ValueError(f"{path}, line 1: empty alignment file (no sequence)")
    return [(name, "".join(chunks), first_line[name]) for name, chunks in parts.items()]
