"""The ``replica-mlm potts`` command (its quick section runs in tests/test_validation_suite.py)."""

from click.testing import CliRunner

from replica_mlm.cli import main


def test_cli_bad_options_exit_2(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["potts", "--seed", "-1", "--out", str(tmp_path)])
    assert res.exit_code == 2
    res = runner.invoke(main, ["potts", "--bogus"])
    assert res.exit_code == 2
    res = runner.invoke(main, ["potts", "--help"])
    assert res.exit_code == 0 and "--quick / --full" in res.output
