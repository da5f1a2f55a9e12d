"""A protein chain's C-beta coordinates (biotite), and its residues mapped onto an alignment.

``Structure.read(path)`` takes one chain of a PDB file (the first protein chain by default): one
point per residue, the C-beta atom (C-alpha for glycine, and for a residue whose C-beta is not
in the file), and the one-letter sequence. ``structure.map_to(msa)`` aligns a reference sequence
of the alignment (its residues over all the file's columns, gaps removed) to the chain with
biotite's optimal pairwise alignment (``align_optimal``, BLOSUM62, gap opening -10, extension -1,
end gaps free: semi-global, since either may be a fragment of the other) and gives a
:class:`MappedStructure`: the (L, L) C-beta distances over the msa's columns, NaN where a column
has no residue, the identity and the coverage of the mapping. :func:`map_structure` maps every
protein chain of a file (or the one asked for) and keeps the chain that maps best;
:meth:`MappedStructure.mapping_problem` says when a mapping is too poor for contact precisions
(identity below :data:`MIN_IDENTITY` or coverage below :data:`MIN_COVERAGE`: docs/proteins.md,
"Contacts").
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.proteins.msa import ALPHABET, MSA

_EXTRA = 'pip install "replica-mlm[proteins]"'

#: identity of the reference-to-chain alignment below which a mapping is refused for contacts
#: (docs/proteins.md, "Contacts": a chain of another family or the wrong chain maps at 0.31-0.50)
MIN_IDENTITY = 0.6
#: fraction of the alignment's columns holding a residue below which a mapping is refused
MIN_COVERAGE = 0.5


def _biotite():
    try:
        import biotite.sequence as bseq
        import biotite.sequence.align as balign
        import biotite.structure as bstruc
        import biotite.structure.io.pdb as bpdb
    except ImportError as exc:
        raise ImportError(f"reading structures needs biotite: {_EXTRA} ({exc})") from exc
    return bseq, balign, bstruc, bpdb


@dataclass(frozen=True)
class Structure:
    """One protein chain: a point per residue (C-beta; C-alpha for glycine) and its sequence.

    Attributes
    ----------
    coordinates : ndarray, shape (n, 3)
        In angstrom.
    sequence : str
        One letter per residue (X for one biotite cannot name).
    residue_ids : ndarray of int, shape (n,)
        The residue numbers in the file (insertion codes are separate residues).
    chain : str
    path : str
    """

    coordinates: np.ndarray
    sequence: str
    residue_ids: np.ndarray
    chain: str
    path: str

    @classmethod
    def read(cls, path: str | os.PathLike, *, chain: str | None = None) -> Structure:
        """Read one chain of the first model of a PDB file.

        Parameters
        ----------
        path : str or path-like
        chain : str, optional
            The chain identifier; by default the first chain holding amino acids.

        Raises
        ------
        ValueError
            If the file has no protein chain, or not the one asked for (naming the file).
        """
        atoms, chains, path = _protein_atoms(path)
        if chain is None:
            chain = chains[0]
        elif chain not in chains:
            raise ValueError(f"{path}: chain must be one of {chains}, got {chain!r}")
        return _chain(atoms, chain, path)

    @classmethod
    def read_chains(cls, path: str | os.PathLike) -> list[Structure]:
        """Every protein chain of the first model of a PDB file, in the file's order.

        Raises
        ------
        ValueError
            If the file is not a readable PDB file or has no protein chain (naming the file).
        """
        atoms, chains, path = _protein_atoms(path)
        return [_chain(atoms, c, path) for c in chains]

    def __len__(self) -> int:
        return len(self.sequence)

    def map_to(self, msa: MSA, *, reference: int | str = 0) -> MappedStructure:
        """Map the chain onto the columns of ``msa`` through one of its sequences.

        Parameters
        ----------
        msa : MSA
        reference : int, str or "best"
            The row (index in ``msa``) or name of the sequence aligned to the chain; ``"best"``
            tries the five sequences sharing most 3-mers with the chain (and the first one) and
            keeps the mapping of highest identity (then the most aligned residues).

        Returns
        -------
        MappedStructure
        """
        if not isinstance(msa, MSA):
            raise TypeError(f"msa must be an MSA, got {type(msa).__name__}")
        if isinstance(reference, str) and reference == "best":
            rows = [0, *_closest_rows(msa, self.sequence, 5)]
            maps = [self.map_to(msa, reference=int(r)) for r in dict.fromkeys(rows)]
            return max(maps, key=lambda m: (m.identity, m.aligned))
        if isinstance(reference, str):
            if reference not in msa.names:
                raise ValueError(f"reference must be a sequence name of the msa, got {reference!r}")
            row = msa.names.index(reference)
        elif isinstance(reference, (int, np.integer)) and not isinstance(reference, bool):
            if not -msa.N <= reference < msa.N:
                raise ValueError(f"reference must be a row in [0, {msa.N}), got {reference}")
            row = int(reference) % msa.N
        else:
            raise TypeError(f"reference must be a row index, a name or 'best', got {reference!r}")
        full = msa.source[msa.rows[row]]  # all the file's columns
        file_cols = np.flatnonzero(full)
        if file_cols.size == 0:
            raise ValueError(f"reference {msa.names[row]!r} has no residue")
        residue_of = np.full(full.size, -1)
        ref_res, chain_res = _align(self.sequence, "".join(ALPHABET[c] for c in full[file_cols]))
        residue_of[file_cols[ref_res]] = chain_res
        same = sum(ALPHABET[full[file_cols[i]]] == self.sequence[j]
                   for i, j in zip(ref_res, chain_res, strict=True))
        identity = same / max(len(ref_res), 1)
        return MappedStructure(self, msa.names[row], residue_of, float(identity), len(ref_res),
                               msa.columns.copy())

    def distances_for(self, msa: MSA, *, reference: int | str = 0) -> np.ndarray:
        """The (L, L) C-beta distances over ``msa``'s columns (:meth:`map_to`), NaN off the chain."""
        return self.map_to(msa, reference=reference).distances


def _protein_atoms(path) -> tuple:
    """``(amino-acid atoms of model 1, chain identifiers in file order, path)`` of a PDB file."""
    _, _, bstruc, bpdb = _biotite()
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path} is not a regular file")
    try:
        atoms = bpdb.PDBFile.read(str(path)).get_structure(model=1)
    except Exception as exc:  # biotite raises its own InvalidFileError, ValueError, ...
        raise ValueError(f"{path}: not a readable PDB file ({exc})") from exc
    atoms = atoms[bstruc.filter_amino_acids(atoms)]
    chains = list(dict.fromkeys(atoms.chain_id.tolist()))
    if not chains:
        raise ValueError(f"{path}: no protein chain")
    return atoms, chains, path


def _chain(atoms, chain: str, path: Path) -> Structure:
    """The :class:`Structure` of one chain of :func:`_protein_atoms`'s atoms."""
    bseq, _, bstruc, _ = _biotite()
    atoms = atoms[atoms.chain_id == chain]
    starts = bstruc.get_residue_starts(atoms, add_exclusive_stop=True)
    coords, letters, ids = [], [], []
    for a, b in itertools.pairwise(starts):
        res = atoms[a:b]
        pick = res[res.atom_name == ("CA" if res.res_name[0] == "GLY" else "CB")]
        if len(pick) == 0:
            pick = res[res.atom_name == "CA"]
        if len(pick) == 0:
            continue  # a residue without C-alpha has no position
        coords.append(pick.coord[0])
        try:
            letters.append(bseq.ProteinSequence.convert_letter_3to1(res.res_name[0]))
        except KeyError:
            letters.append("X")
        ids.append(res.res_id[0])
    letters = [c if c in ALPHABET[1:] else "X" for c in letters]
    return Structure(np.array(coords, dtype=float), "".join(letters), np.array(ids), chain, str(path))


def _align(chain_seq: str, ref_seq: str) -> tuple[np.ndarray, np.ndarray]:
    """Indices (into ref_seq, into chain_seq) of the residue pairs of the optimal alignment."""
    bseq, balign, _, _ = _biotite()
    matrix = balign.SubstitutionMatrix.std_protein_matrix()
    ali = balign.align_optimal(bseq.ProteinSequence(ref_seq), bseq.ProteinSequence(chain_seq),
                               matrix, gap_penalty=(-10, -1), terminal_penalty=False,
                               max_number=1)[0]
    trace = ali.trace[(ali.trace >= 0).all(axis=1)]
    return trace[:, 0], trace[:, 1]


def _closest_rows(msa: MSA, chain_seq: str, k: int) -> list[int]:
    """The k rows of the file's alignment (restricted to msa's rows) sharing most 3-mers with
    the chain: the candidates for a reference sequence."""
    code = {c: i for i, c in enumerate(ALPHABET)}
    s = [code.get(c, 0) for c in chain_seq]
    target = {(s[i] * 21 + s[i + 1]) * 21 + s[i + 2] for i in range(len(s) - 2)}
    target = np.array(sorted(target))
    scores = np.empty(msa.N)
    for r in range(msa.N):
        res = msa.source[msa.rows[r]]
        res = res[res > 0].astype(np.int64)
        kmers = (res[:-2] * 21 + res[1:-1]) * 21 + res[2:]
        scores[r] = np.isin(np.unique(kmers), target, assume_unique=True).sum()
    return np.argsort(-scores, kind="stable")[:k].tolist()


@dataclass(frozen=True)
class MappedStructure:
    """A :class:`Structure` mapped onto an alignment's columns (:meth:`Structure.map_to`).

    Attributes
    ----------
    structure : Structure
    reference : str
        The name of the alignment's sequence aligned to the chain.
    residue_of_column : ndarray of int
        For every column of the file's alignment, the chain residue it holds (-1: none).
    identity : float
        Identical residues / aligned residue pairs of the reference-to-chain alignment.
    aligned : int
        Number of aligned residue pairs.
    columns : ndarray of int
        The file columns of the msa it was mapped for (those of :attr:`distances`).
    chains : tuple of str
        The protein chains of the file the chain was chosen from (:func:`map_structure`; empty
        when mapped with :meth:`Structure.map_to`).
    """

    structure: Structure
    reference: str
    residue_of_column: np.ndarray
    identity: float
    aligned: int
    columns: np.ndarray
    chains: tuple[str, ...] = ()

    def distances_for(self, msa: MSA) -> np.ndarray:
        """The (L, L) C-beta distances over the columns of ``msa`` (an msa of the same file,
        e.g. filtered or a subset), NaN where a column has no residue."""
        if not isinstance(msa, MSA) or msa.source.shape[1] != self.residue_of_column.size:
            raise ValueError("msa must be an MSA of the alignment file this structure was mapped to")
        return self._distances(msa.columns)

    def _distances(self, columns: np.ndarray) -> np.ndarray:
        res = self.residue_of_column[columns]
        xyz = np.where(res[:, None] >= 0, self.structure.coordinates[res], np.nan)
        return np.sqrt(((xyz[:, None, :] - xyz[None, :, :]) ** 2).sum(axis=-1))

    @property
    def distances(self) -> np.ndarray:
        """The (L, L) C-beta distances over :attr:`columns`, NaN where a column has no residue."""
        return self._distances(self.columns)

    @property
    def coverage(self) -> float:
        """Fraction of the msa's columns that hold a residue of the chain."""
        return float(np.mean(self.residue_of_column[self.columns] >= 0))

    @property
    def mapped_columns(self) -> int:
        """Number of the msa's columns that hold a residue of the chain (``coverage * L``)."""
        return int(np.sum(self.residue_of_column[self.columns] >= 0))

    def mapping_problem(self, *, min_identity: float = MIN_IDENTITY,
                        min_coverage: float = MIN_COVERAGE) -> str | None:
        """One line naming the identity and the coverage if either is below its threshold, else None.

        A chain of another family or the wrong chain of the right file maps only a few columns,
        at an identity that means nothing; contact precisions against it are near zero and say
        nothing of the fit (docs/proteins.md, "Contacts").
        """
        min_identity = _checks.as_scalar(min_identity, "min_identity")
        min_coverage = _checks.as_scalar(min_coverage, "min_coverage")
        if self.identity >= min_identity and self.coverage >= min_coverage:
            return None
        return (f"the structure {Path(self.structure.path).name} chain {self.structure.chain} maps "
                f"poorly onto the alignment: identity {self.identity:.3f} (at least {min_identity:g} "
                f"needed), coverage {self.coverage:.3f} ({self.mapped_columns} of {self.columns.size} "
                f"columns; at least {min_coverage:g} needed)")

    def describe(self) -> str:
        """One line: file, chain (and the chains it was chosen from), reference, identity, coverage."""
        among = (f" (the best-mapping of chains {', '.join(self.chains)})" if len(self.chains) > 1
                 else "")
        return (f"structure {Path(self.structure.path).name} chain {self.structure.chain}{among} "
                f"through {self.reference}: identity {self.identity:.3f}, coverage {self.coverage:.3f} "
                f"({self.mapped_columns} of {self.columns.size} columns)")


def map_structure(path: str | os.PathLike, msa: MSA, *, chain: str | None = None,
                  reference: int | str = "best") -> MappedStructure:
    """Map a chain of a PDB file onto the columns of ``msa`` (:meth:`Structure.map_to`).

    Parameters
    ----------
    path : str or path-like
    msa : MSA
    chain : str, optional
        The chain to map. By default every protein chain of the file is mapped and the one with
        the largest ``identity * coverage`` is kept (the first in the file on a tie): the chain
        whose residues cover most of the alignment's columns, identically.
    reference : int, str or "best"
        As in :meth:`Structure.map_to`.

    Returns
    -------
    MappedStructure
        With :attr:`MappedStructure.chains` the file's protein chains.

    Raises
    ------
    ValueError
        An unreadable file, a file without protein chain or without the chain asked for.
    """
    if not isinstance(msa, MSA):
        raise TypeError(f"msa must be an MSA, got {type(msa).__name__}")
    if chain is not None and not isinstance(chain, str):
        raise TypeError(f"chain must be a chain identifier (str) or None, got {chain!r}")
    structures = Structure.read_chains(path)
    chains = tuple(s.chain for s in structures)
    if chain is not None:
        if chain not in chains:
            raise ValueError(f"{path}: chain must be one of {list(chains)}, got {chain!r}")
        structures = [structures[chains.index(chain)]]
    maps = [s.map_to(msa, reference=reference) for s in structures]
    best = max(maps, key=lambda m: m.identity * m.coverage)  # max keeps the first on a tie
    return replace(best, chains=chains)
