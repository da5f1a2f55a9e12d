"""Output folders of the command line: one default scheme (replica-mlm-out/<command>, git-ignored),
no second run into a folder that holds files unless --overwrite (or --resume), no lock file left."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from replica_mlm._base.run_folder import LOCK_NAME, FolderBusy, folder_lock
from replica_mlm.cli import main
from replica_mlm.cli._common import OUT_ROOT

ROOT = Path(__file__).resolve().parents[1]
CURVE = ["curve", "--L", "20", "--points", "4", "--lam", "0.1"]
SIM = ["simulate", "--L", "20", "--alpha", "2", "--lam", "0.1", "--seeds", "2"]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_every_command_writes_under_one_git_ignored_root():
    from click import Context

    ctx = Context(main)
    defaults = {}
    for name in main.list_commands(ctx):
        out = [p for p in main.get_command(ctx, name).params if p.name == "out"]
        if out:
            defaults[name] = Path(out[0].default)
    assert {"curve", "phase", "simulate", "validate", "potts", "attractor", "contacts",
            "paper-fig2"} <= set(defaults)
    assert all(d == OUT_ROOT / name for name, d in defaults.items()), defaults
    assert f"{OUT_ROOT}/" in (ROOT / ".gitignore").read_text().splitlines()


def test_a_second_run_into_a_folder_with_files_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    first = CliRunner().invoke(main, [*CURVE, "--out", str(out)])
    assert first.exit_code == 0, first.output
    before = _files(out)
    # no lock file; the run manifest lists what the run wrote (what --overwrite replaces)
    assert sorted(before) == [".replica-mlm-curve.files.json", "curve.csv", "curve.json", "curve.pdf",
                              "curve.png"]
    again = CliRunner().invoke(main, [*CURVE, "--lam", "0.2", "--out", str(out)])
    assert again.exit_code == 2
    assert f"--out {out} already holds files" in again.output and "--overwrite" in again.output
    assert _files(out) == before  # nothing replaced
    forced = CliRunner().invoke(main, [*CURVE, "--lam", "0.2", "--out", str(out), "--overwrite"])
    assert forced.exit_code == 0, forced.output
    assert _files(out)["curve.csv"] != before["curve.csv"]
    assert not (out / LOCK_NAME).exists()


def test_resume_is_a_way_into_a_folder_with_files(tmp_path):
    first = CliRunner().invoke(main, [*SIM, "--out", str(tmp_path)])
    assert first.exit_code == 0, first.output
    refused = CliRunner().invoke(main, [*SIM, "--out", str(tmp_path)])
    assert refused.exit_code == 2 and "--resume" in refused.output
    resumed = CliRunner().invoke(main, [*SIM, "--out", str(tmp_path), "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert not (tmp_path / LOCK_NAME).exists()


def test_the_lock_file_goes_with_the_lock(tmp_path):
    with folder_lock(tmp_path):
        assert (tmp_path / LOCK_NAME).exists()
        with pytest.raises(FolderBusy), folder_lock(tmp_path):
            pass
        assert (tmp_path / LOCK_NAME).exists()  # a refused second taker leaves the holder's file
    assert list(tmp_path.iterdir()) == []
    with folder_lock(tmp_path):  # taken again at once: a new file
        assert (tmp_path / LOCK_NAME).exists()
    assert list(tmp_path.iterdir()) == []
