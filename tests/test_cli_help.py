"""`replica-mlm --help` is fast and complete: every option has help text, the ridge conventions
appear only where they apply, and --help imports neither sympy nor the other heavy libraries."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from replica_mlm.cli import main
from replica_mlm.cli._common import CONVENTIONS

#: imported only when a computation needs them, never for --help
HEAVY = ("sympy", "torch", "sklearn", "scipy.optimize", "scipy.integrate", "matplotlib", "pandas")


def _commands():
    return sorted(main.commands.items())


@pytest.mark.parametrize("name, command", _commands())
def test_every_option_has_help(name, command):
    ctx = click.Context(command, info_name=name)
    params = [p for p in command.get_params(ctx) if isinstance(p, click.Option)]
    assert params, name
    missing = [p.opts[0] for p in params if not (p.help or "").strip()]
    assert not missing, f"replica-mlm {name}: options without help text: {missing}"
    assert (command.help or "").strip(), f"replica-mlm {name} has no description"


def test_group_options_have_help():
    ctx = click.Context(main, info_name="replica-mlm")
    assert all((p.help or "").strip() for p in main.get_params(ctx) if isinstance(p, click.Option))


@pytest.mark.parametrize("name", ["potts", "attractor", "paper-fig2"])
def test_no_ridge_conventions_where_there_is_no_ridge(name):
    res = CliRunner().invoke(main, [name, "--help"])
    assert res.exit_code == 0, res.output
    assert "ridge penalty" not in res.output and "Moore-Penrose" not in res.output


@pytest.mark.parametrize("name", ["curve", "simulate", "phase", "validate", "equations"])
def test_ridge_conventions_where_there_is_ridge(name):
    res = CliRunner().invoke(main, [name, "--help"])
    assert res.exit_code == 0, res.output
    assert " ".join(CONVENTIONS.split()[:6]) in " ".join(res.output.split())


@pytest.mark.parametrize("args", [["--help"], ["curve", "--help"], ["validate", "--help"],
                                  ["potts", "--help"], ["--version"]])
def test_help_imports_nothing_heavy(args):
    code = ("import sys\n"
            "from replica_mlm.cli import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]


def test_import_replica_mlm_is_light():
    code = f"import sys, replica_mlm\nprint(sorted(m for m in {HEAVY!r} + ('scipy',) if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
