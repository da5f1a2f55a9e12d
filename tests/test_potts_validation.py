"""The validation entry and the ``replica-mlm potts`` command (quick mode)."""

import json

from click.testing import CliRunner

from replica_mlm.cli import main
from replica_mlm.validation.potts import run


def test_quick_validation_entry(tmp_path):
    section = run(tmp_path, quick=True, rng=0)
    data = json.loads((tmp_path / "potts.json").read_text())
    assert data["passed"] == section.passed
    names = {c.name: c for c in section.checks}
    assert names["potts.pseudolikelihood_equivalence"].passed
    assert names["potts.sampler.chi_square"].passed
    assert names["potts.consistency.reconstruction_slope"].passed
    for f in section.figures:
        assert (tmp_path / f).stat().st_size > 1000
    assert {"potts_reconstruction.pdf", "potts_test_loss.png", "potts_small_lam.png",
            "potts_gibbs.png"} <= set(section.figures)


def test_cli_bad_options_exit_2(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["potts", "--seed", "-1", "--out", str(tmp_path)])
    assert res.exit_code == 2
    res = runner.invoke(main, ["potts", "--bogus"])
    assert res.exit_code == 2
    res = runner.invoke(main, ["potts", "--help"])
    assert res.exit_code == 0 and "--quick / --full" in res.output
