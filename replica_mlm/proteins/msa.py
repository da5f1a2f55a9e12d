"""Multiple sequence alignments of a protein family: read, filter, reweight.

``MSA.read(path)`` reads FASTA (also gzip-compressed, ``.gz``), A2M/A3M and Stockholm files into
an (N, L) integer array over ``ALPHABET = "-ACDEFGHIKLMNPQRSTVWY"`` (0 = gap, 1..20 the amino acids,
q = 21). FASTA is read with biotite (``biotite.sequence.io.fasta``); Stockholm, for which biotite
has no reader, by :mod:`replica_mlm.proteins.stockholm`.

Letters: upper and lower case are the same amino acid in FASTA and Stockholm; in A2M/A3M files
(``.a2m``, ``.a3m``) lower-case letters and ``'.'`` are insertions relative to the match columns
and are dropped, as HHblits does. ``'-'`` and ``'.'`` are gaps. Any other letter (B, Z, X, J, U,
O, ``'*'``, ...) is read as a gap; how many there were is ``msa.unknown_letters`` and a warning
names the file and the count.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.io import read_text_file
from replica_mlm.proteins.stockholm import parse_stockholm

ALPHABET = "-ACDEFGHIKLMNPQRSTVWY"
#: number of colours: 20 amino acids and the gap
Q = len(ALPHABET)
#: largest alignment text read (decompressed), so that a wrong file cannot fill the memory
MAX_BYTES = 2**31
#: rows compared at once by :meth:`MSA.weights` (its four buffers: about 3.3 times this)
_BLOCK_BYTES = 16 * 2**20

_CODE = np.full(256, -1, dtype=np.int16)  # -1: unknown letter
for _k, _c in enumerate(ALPHABET):
    _CODE[ord(_c)] = _k
    _CODE[ord(_c.lower())] = _k
_CODE[ord(".")] = 0
_FORMATS = ("fasta", "a2m", "a3m", "stockholm")
_SUFFIXES = {".a2m": "a2m", ".a3m": "a3m", ".sto": "stockholm", ".sth": "stockholm",
             ".stk": "stockholm", ".stockholm": "stockholm"}


def _read_text(path: Path, max_bytes: int) -> str:
    """The text of ``path`` (gunzipped if it ends in .gz, inflating no more than max_bytes):
    regular files only, read in bounded chunks, any newline convention."""
    return read_text_file(path, max_bytes=max_bytes, compressed=path.suffix == ".gz",
                          universal_newlines=True)


def _fasta_records(text: str, path: Path) -> list[tuple[str, str, int]]:
    """(name, aligned string, line number of its header) for every record, read by biotite."""
    import io

    from biotite.sequence.io.fasta import FastaFile

    lines = text.splitlines()
    content = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(";")]
    if not content:
        raise ValueError(f"{path}, line 1: empty alignment file (no sequence)")
    if not lines[content[0]].lstrip().startswith(">"):
        raise ValueError(f"{path}, line {content[0] + 1}: expected a FASTA header ('>name'), "
                         f"found {lines[content[0]].strip()[:40]!r}")
    headers = [i + 1 for i in content if lines[i].lstrip().startswith(">")]
    records = list(FastaFile.read_iter(io.StringIO(text)))
    return [(name, seq, line) for (name, seq), line in zip(records, headers, strict=True)]


@dataclass(frozen=True, eq=False)
class MSA:
    """A multiple sequence alignment over ``ALPHABET`` (q = 21, 0 = gap).

    Attributes
    ----------
    sequences : ndarray of int8, shape (N, L)
        The aligned sequences, 0 = gap, 1..20 the amino acids in the order of ``ALPHABET``.
    names : tuple of str
        The sequence names (FASTA headers without '>', Stockholm names).
    columns : ndarray of int, shape (L,)
        Each column's index in the file's alignment (its match columns for A2M/A3M).
    unknown_letters : int
        Letters outside the alphabet that were read as gaps.
    path : str or None
        The file read.
    """

    sequences: np.ndarray
    names: tuple[str, ...]
    columns: np.ndarray
    unknown_letters: int = 0
    path: str | None = None
    #: the rows of the file's full alignment (all its columns) and which of them these rows are;
    #: a structure maps the reference sequence with all its residues, not only the kept columns
    source: np.ndarray | None = field(default=None, repr=False)
    rows: np.ndarray | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        seqs = np.asarray(self.sequences)
        if seqs.ndim != 2 or seqs.shape[0] == 0 or seqs.shape[1] == 0:
            raise ValueError(f"sequences must be a non-empty (N, L) array, got shape {seqs.shape}")
        if seqs.dtype.kind not in "iu" or seqs.min() < 0 or seqs.max() >= Q:
            raise ValueError(f"sequences must be integers in 0..{Q - 1} (0 = gap)")
        object.__setattr__(self, "sequences", seqs.astype(np.int8, copy=False))
        if len(self.names) != seqs.shape[0] or len(self.columns) != seqs.shape[1]:
            raise ValueError("names must have one entry per sequence and columns one per column")
        object.__setattr__(self, "names", tuple(self.names))
        object.__setattr__(self, "columns", np.asarray(self.columns, dtype=np.intp))
        if self.source is None:
            object.__setattr__(self, "source", self.sequences)
            object.__setattr__(self, "rows", np.arange(seqs.shape[0]))

    q = Q

    @property
    def N(self) -> int:
        """Number of sequences."""
        return self.sequences.shape[0]

    @property
    def L(self) -> int:
        """Number of columns."""
        return self.sequences.shape[1]

    def __repr__(self) -> str:
        where = f", from {self.path}" if self.path else ""
        return f"MSA(N={self.N}, L={self.L}{where})"

    # ------------------------------------------------------------------------------------ reading
    @classmethod
    def read(cls, path: str | os.PathLike, *, format: str | None = None,
             max_bytes: int = MAX_BYTES) -> MSA:
        """Read an alignment file.

        Parameters
        ----------
        path : str or path-like
            FASTA (``.fasta``, ``.fa``, ``.faa``, ...), A2M (``.a2m``), A3M (``.a3m``) or
            Stockholm (``.sto``, ``.sth``, or a first line ``# STOCKHOLM``); any of them
            gzip-compressed if the name ends in ``.gz``.
        format : {"fasta", "a2m", "a3m", "stockholm"}, optional
            Overrides the guess from the file name.
        max_bytes : int
            Largest (decompressed) text read; a longer file is refused.

        Raises
        ------
        ValueError
            Naming the file and the line: an empty file, a record before any header, sequences
            of unequal aligned lengths; or a file that is not regular, too long or not text.
        """
        if not isinstance(path, str | os.PathLike) or (isinstance(path, str) and not path):
            raise TypeError(f"path must be a file name (str or path-like), got {path!r}"[:200])
        path = Path(path)
        max_bytes = _checks.positive_int(max_bytes, "max_bytes")
        text = _read_text(path, max_bytes)
        stem = Path(path.stem) if path.suffix == ".gz" else path
        if format is None:
            format = _SUFFIXES.get(stem.suffix.lower(), "fasta")
            if text.lstrip("\ufeff").startswith("# STOCKHOLM"):
                format = "stockholm"
        format = _checks.choice(format, _FORMATS, "format")
        if format == "stockholm":
            records = parse_stockholm(text, path)
        else:
            records = _fasta_records(text, path)
        if format in ("a2m", "a3m"):  # insertions (lower case and '.') are not alignment columns
            records = [(n, re.sub(r"[a-z.]", "", s), line) for n, s, line in records]
        lengths = {len(s) for _, s, _ in records}
        if len(lengths) > 1:
            first = len(records[0][1])
            name, seq, line = next(r for r in records if len(r[1]) != first)
            raise ValueError(f"{path}, line {line}: sequence {name!r} has {len(seq)} aligned "
                             f"columns, the first sequence {first}: not an alignment")
        if 0 in lengths:
            raise ValueError(f"{path}, line {records[0][2]}: the sequences are empty")
        raw = np.frombuffer("".join(s for _, s, _ in records).encode("utf-8", "replace"), np.uint8)
        if raw.size != len(records) * lengths.pop():  # a multi-byte character
            raise ValueError(f"{path}: non-ASCII letters in the alignment")
        codes = _CODE[raw].reshape(len(records), -1)
        unknown = int(np.count_nonzero(codes < 0))
        if unknown:
            warnings.warn(f"{path}: {unknown} letters outside {ALPHABET[1:]} (B, Z, X, ...) "
                          "read as gaps", stacklevel=2)
        seqs = np.where(codes < 0, 0, codes).astype(np.int8)
        return cls(seqs, tuple(n for n, _, _ in records), np.arange(seqs.shape[1]),
                   unknown_letters=unknown, path=str(path))

    # ------------------------------------------------------------------------- rows and columns
    def _derived(self, rows: np.ndarray, cols: np.ndarray) -> MSA:
        return MSA(self.sequences[np.ix_(rows, cols)], tuple(self.names[i] for i in rows),
                   self.columns[cols], unknown_letters=self.unknown_letters, path=self.path,
                   source=self.source, rows=self.rows[rows])

    def subset(self, indices) -> MSA:
        """The MSA of the rows ``indices`` (integers in [0, N) or a boolean mask of length N),
        all columns kept."""
        idx = np.asarray(indices)
        if idx.dtype == bool and idx.shape == (self.N,):
            idx = np.flatnonzero(idx)
        elif idx.dtype.kind not in "iu" or idx.ndim != 1:
            raise TypeError("indices must be a 1-d array of row numbers or a boolean mask of "
                            f"length N = {self.N}")
        if idx.size == 0 or idx.min() < 0 or idx.max() >= self.N:
            raise ValueError(f"indices must select at least one row, each in [0, {self.N})")
        return self._derived(idx, np.arange(self.L))

    def filter(self, max_gap_fraction: float | None = None, *,
               min_coverage: float | None = None) -> MSA:
        """Drop gappy columns, then sequences that cover too few of the kept columns.

        Parameters
        ----------
        max_gap_fraction : float in [0, 1], optional
            Keep the columns whose fraction of gaps (over all sequences, unweighted) is at most
            this.
        min_coverage : float in [0, 1], optional
            Then keep the sequences with at least this fraction of residues (non-gaps) among
            the kept columns.

        Raises
        ------
        ValueError
            If a fraction is outside [0, 1] or nothing would be left.
        """
        cols, rows = np.arange(self.L), np.arange(self.N)
        gap = self.sequences == 0
        if max_gap_fraction is not None:
            frac = _checks.as_scalar(max_gap_fraction, "max_gap_fraction")
            if not 0 <= frac <= 1:
                raise ValueError(f"max_gap_fraction must be in [0, 1], got {frac}")
            cols = np.flatnonzero(gap.mean(axis=0) <= frac)
            if cols.size == 0:
                raise ValueError(f"max_gap_fraction={frac} drops every column")
        if min_coverage is not None:
            cover = _checks.as_scalar(min_coverage, "min_coverage")
            if not 0 <= cover <= 1:
                raise ValueError(f"min_coverage must be in [0, 1], got {cover}")
            rows = np.flatnonzero(1 - gap[:, cols].mean(axis=1) >= cover)
            if rows.size == 0:
                raise ValueError(f"min_coverage={cover} drops every sequence")
        return self._derived(rows, cols)

    # --------------------------------------------------------------------------------- weights
    def weights(self, identity: float = 0.8) -> np.ndarray:
        """Sequence weights: 1 / (number of sequences with identity > ``identity`` to it).

        The identity of two rows is the fraction of the L columns where they carry the same
        colour (a gap facing a gap counts as the same), as in mean-field and pseudo-likelihood
        DCA (Morcos et al. 2011, Ekeberg et al. 2013: Hamming distance < 1 - identity). Every
        sequence counts itself. Computed by blocks of rows, in buffers of about 50 MB.

        Raises
        ------
        ValueError
            If identity is outside [0, 1].
        """
        ident = _checks.as_scalar(identity, "identity")
        if not 0 <= ident <= 1:
            raise ValueError(f"identity must be in [0, 1], got {ident}")
        if ident in self._cache:
            return self._cache[ident].copy()
        N, L = self.N, self.L
        block = min(N, max(1, _BLOCK_BYTES // (4 * N)))  # rows per block of the (block, N) match counts
        width = min(L, max(1, _BLOCK_BYTES // (4 * N * Q)))  # columns per one-hot chunk (N, width * q)
        # four buffers written in place for every block: nothing of the loop's size is allocated
        # (and left in the allocator's heap) once per pass
        matches = np.empty((block, N), dtype=np.float32)  # exact below 2**24
        product = np.empty((block, N), dtype=np.float32)
        near = np.empty((block, N), dtype=bool)
        onehot = np.empty((N, width * Q), dtype=np.float32)
        counts = np.empty(N)
        limit = (1.0 - ident) * L  # neighbours: fewer mismatches than this
        for start in range(0, N, block):
            rows = min(block, N - start)
            m, prod = matches[:rows], product[:rows]
            m[...] = 0.0
            for c in range(0, L, width):
                chunk = self.sequences[:, c:c + width]
                oh = onehot[:, :chunk.shape[1] * Q]
                oh[...] = 0.0
                oh[np.arange(N)[:, None], np.arange(chunk.shape[1]) * Q + chunk] = 1.0
                m += np.matmul(oh[start:start + rows], oh.T, out=prod)
            np.less(np.subtract(L, m, out=prod), limit, out=near[:rows])
            counts[start:start + rows] = np.count_nonzero(near[:rows], axis=1)
        w = 1.0 / counts
        self._cache[ident] = w
        return w.copy()

    @property
    def effective_size(self) -> float:
        """Sum of the weights at 80 % identity (:meth:`weights`)."""
        return float(self.weights(0.8).sum())
