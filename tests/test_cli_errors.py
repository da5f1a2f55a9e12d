"""The command line's failures: OS errors, non-finite numbers, locked folders, unreachable schedulers
and refused resumes all end in ONE line on stderr and exit status 2; CSV and JSON follow the umask."""

import os
import stat

import pytest
from click.testing import CliRunner

from replica_mlm._base.run_folder import folder_lock
from replica_mlm.cli import main

SMALL_SIM = ["simulate", "--L", "20", "--alpha", "2", "--lam", "0.1", "--seeds", "2", "--no-progress"]
SMALL_CURVE = ["curve", "--L", "20", "--points", "3", "--lam", "0.1"]


def _one_line_exit_2(res, *needles):
    assert res.exit_code == 2, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr  # not a traceback
    assert lines[0].startswith("Error: ") and res.stdout == ""
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_out_that_cannot_be_created_is_one_line(tmp_path):
    """Before: `replica-mlm curve --out /proc/forbidden/x` printed a 33-line traceback."""
    runner = CliRunner()
    if os.path.isdir("/proc/self"):
        _one_line_exit_2(runner.invoke(main, [*SMALL_CURVE, "--out", "/proc/forbidden/x"]), "/proc/forbidden")
    (tmp_path / "file").write_text("x")
    _one_line_exit_2(runner.invoke(main, [*SMALL_CURVE, "--out", str(tmp_path / "file" / "sub")]),
                     str(tmp_path / "file"), "a file is where a folder is needed")


def test_point_subfolder_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "simulate_points").write_text("not a folder")
    res = CliRunner().invoke(main, [*SMALL_SIM, "--out", str(tmp_path)])
    _one_line_exit_2(res, str(tmp_path / "simulate_points"), "a folder is needed")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_out_is_one_line(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        res = CliRunner().invoke(main, [*SMALL_CURVE, "--out", str(ro / "x")])
        _one_line_exit_2(res, "Permission denied")
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize("args,option", [
    (["curve", "--lam", "nan"], "--lam"),
    (["curve", "--alpha-max", "inf"], "--alpha-max"),
    (["curve", "--alpha-min", "-inf"], "--alpha-min"),
    (["curve", "--shift", "nan"], "--shift"),
    (["simulate", "--alpha", "inf"], "--alpha"),
    (["simulate", "--lam", "nan"], "--lam"),
    (["phase", "--lam-max", "inf"], "--lam-max"),
    (["phase", "--shift-max", "nan"], "--shift-max"),
])
def test_non_finite_numbers_are_bad_options(tmp_path, args, option):
    res = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "x")])
    assert res.exit_code == 2, res.output
    assert f"Invalid value for '{option}'" in res.stderr and "is not a finite number" in res.stderr
    assert not (tmp_path / "x").exists()  # refused before anything is written


def test_a_locked_out_folder_is_refused(tmp_path):
    out = tmp_path / "run"
    with folder_lock(out):  # as if another run were writing there
        line = _one_line_exit_2(CliRunner().invoke(main, [*SMALL_CURVE, "--out", str(out)]),
                                f"another run is writing into {out}")
        assert not (out / "curve.csv").exists()
    assert CliRunner().invoke(main, [*SMALL_CURVE, "--out", str(out)]).exit_code == 0
    assert "choose another output folder" in line


def test_unreachable_scheduler_is_one_line(tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="dask.distributed is in the [test] extra")
    import replica_mlm._base.sweep as sweep

    monkeypatch.setattr(sweep, "SCHEDULER_TIMEOUT", 1.0)
    res = CliRunner().invoke(main, [*SMALL_SIM, "--scheduler", "tcp://127.0.0.1:1", "--out", str(tmp_path)])
    _one_line_exit_2(res, "cannot reach the Dask scheduler at tcp://127.0.0.1:1", "waited up to 1 s")


def test_resume_refusals_are_one_line(tmp_path):
    runner = CliRunner()
    out = ["--out", str(tmp_path)]
    assert runner.invoke(main, [*SMALL_SIM, "--sample-seed", "7", *out]).exit_code == 0
    _one_line_exit_2(runner.invoke(main, [*SMALL_SIM, "--sample-seed", "8", "--resume", *out]),
                     "--resume: --sample-seed differs: folder has 7, this run asks 8")
    res = runner.invoke(main, [*SMALL_SIM, "--sample-seed", "7", "--seeds", "3", "--resume", *out])
    _one_line_exit_2(res,
                     "--resume: --seeds differs (point 0): folder has 2, this run asks 3")
    (tmp_path / "simulate_points" / "point-00000.json").write_text('{"index": 0, "seed": 7, "poi')
    _one_line_exit_2(runner.invoke(main, [*SMALL_SIM, "--sample-seed", "7", "--resume", *out]),
                     "point-00000.json in", "is truncated or not a point file of this sweep",
                     "delete it or run without --resume")
    # JSON nested past the recursion limit (a RecursionError traceback before issue 38), in a point
    # file and in the fingerprint
    (tmp_path / "simulate_points" / "point-00000.json").write_text("[" * 100_000 + "]" * 100_000)
    _one_line_exit_2(runner.invoke(main, [*SMALL_SIM, "--sample-seed", "7", "--resume", *out]),
                     "point-00000.json in", "is truncated or not a point file of this sweep")
    (tmp_path / "simulate_points" / "fingerprint.json").write_text("[" * 100_000 + "]" * 100_000)
    _one_line_exit_2(runner.invoke(main, [*SMALL_SIM, "--sample-seed", "7", "--resume", *out]),
                     "fingerprint.json in", "--resume")


def test_threads_option(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, [*SMALL_SIM, "--threads", "2", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert runner.invoke(main, [*SMALL_SIM, "--out", str(tmp_path / "b")]).exit_code == 0
    import json

    meta = json.loads((tmp_path / "a" / "simulate.json").read_text())
    assert meta["parameters"]["threads"] == 2
    assert runner.invoke(main, [*SMALL_SIM, "--threads", "0", "--out", str(tmp_path / "c")]).exit_code == 2
    for cmd in ("simulate", "validate"):
        assert "--threads" in runner.invoke(main, [cmd, "--help"]).output


def test_csv_and_json_follow_the_umask_like_the_figures(tmp_path):
    old = os.umask(0o027)
    try:
        res = CliRunner().invoke(main, [*SMALL_CURVE, "--out", str(tmp_path)])
    finally:
        os.umask(old)
    assert res.exit_code == 0, res.output
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir() if not p.name.startswith(".")}
    assert set(modes) == {"curve.csv", "curve.json", "curve.png", "curve.pdf"}
    assert set(modes.values()) == {0o640}, modes  # before: curve.csv and curve.json were 0o600
