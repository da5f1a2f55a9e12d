"""Kill-and-resume: `replica-mlm simulate --workers 2` is SIGKILLed (the whole process group) after
some points are written and resumed; the resumed folder equals an uninterrupted run byte for byte, no
finished point is lost or recomputed, a resume with another seed is refused with one line and exit
status 2, a truncated point file is named. A run_sweep in a subprocess is killed twice (cheap points:
no solver, no figures) with the same guarantees. A second run into a folder another process holds is
refused."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from replica_mlm._base.run_folder import folder_lock
from replica_mlm.cli import main

ROOT = Path(__file__).resolve().parents[1]
ALPHAS = [round(0.3 + 0.2 * k, 1) for k in range(16)]  # 16 points, ~0.07 s of CPU each
ARGS = ["simulate", "--L", "60", *[x for a in ALPHAS for x in ("--alpha", str(a))], "--lam", "0",
        "--lam", "0.1", "--seeds", "40", "--sample-seed", "5", "--no-progress"]
WAIT = 120.0  # seconds: bound on every wait (the machine may be busy); the test fails beyond it


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def _cli(*args):
    return [sys.executable, "-m", "replica_mlm.cli", *args]


def _points(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Point files: name -> (content, inode, mtime in ns)."""
    out = {}
    for p in sorted(folder.glob("point-*.json")):
        st = p.stat()
        out[p.name] = (p.read_bytes(), st.st_ino, st.st_mtime_ns)
    return out


def _run_and_kill(args, folder: Path, at_least: int) -> dict:
    """Start the CLI in its own process group; SIGKILL the group once ``at_least`` point files exist."""
    return _run_and_kill_cmd(_cli(*args), folder, at_least)


def _run_and_kill_cmd(cmd, folder: Path, at_least: int) -> dict:
    proc = subprocess.Popen(cmd, env=_env(), cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + WAIT
    try:
        while len(list(folder.glob("point-*.json"))) < at_least:
            if proc.poll() is not None:
                pytest.fail(f"the run ended before it was killed: {proc.returncode} {proc.stderr.read()!r}")
            if time.time() > deadline:
                pytest.fail(f"no {at_least} point files in {WAIT} s")
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)  # the parent and its two workers
    finally:
        proc.wait(timeout=WAIT)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return _points(folder)


def test_killed_simulate_resumes_to_the_uninterrupted_files_byte_for_byte(tmp_path):
    started = time.time()
    ref, out = tmp_path / "ref", tmp_path / "run"
    points = out / "simulate_points"
    n = len(ALPHAS)
    res = CliRunner().invoke(main, [*ARGS, "--out", str(ref)])  # uninterrupted, serial, in this process
    assert res.exit_code == 0, res.output

    # the kill: a fresh run with 2 workers, SIGKILLed after >= 2 points
    at_kill = _run_and_kill([*ARGS, "--workers", "2", "--out", str(out)], points, 2)
    assert 2 <= len(at_kill) < n

    # a resume with another seed is refused, in one line, and touches nothing
    bad = CliRunner().invoke(main, [*ARGS, "--sample-seed", "6", "--resume", "--out", str(out)])
    assert bad.exit_code == 2 and len(bad.stderr.splitlines()) == 1, bad.output
    assert "--resume: --sample-seed differs: folder has 5, this run asks 6" in bad.stderr
    assert _points(points) == at_kill

    # the resume, to the end, with 2 workers
    proc = subprocess.run(_cli(*ARGS, "--workers", "2", "--resume", "--out", str(out)), env=_env(), cwd=ROOT,
                          capture_output=True, text=True, timeout=WAIT)
    assert proc.returncode == 0, proc.stderr
    final = _points(points)
    meta = json.loads((out / "simulate.json").read_text())["sweep"]
    # the points finished before the kill were loaded, not rewritten: same bytes, inode and mtime
    lost_or_rewritten = [k for k, v in at_kill.items() if final.get(k) != v]
    assert lost_or_rewritten == []
    assert meta["resumed"] == len(at_kill) and meta["computed"] == n - len(at_kill)

    # byte for byte: the table, every point file and the fingerprint
    assert (out / "simulate.csv").read_bytes() == (ref / "simulate.csv").read_bytes()
    ref_points = _points(ref / "simulate_points")
    assert sorted(final) == sorted(ref_points) and len(final) == n
    assert all(final[k][0] == ref_points[k][0] for k in final)
    fingerprint = "simulate_points/fingerprint.json"
    assert (out / fingerprint).read_bytes() == (ref / fingerprint).read_bytes()
    assert not list(points.glob(".*.tmp"))  # temporaries of the killed writers were cleared

    # a truncated point file is named
    victim = points / "point-00003.json"
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    trunc = CliRunner().invoke(main, [*ARGS, "--resume", "--out", str(out)])
    assert trunc.exit_code == 2 and len(trunc.stderr.splitlines()) == 1, trunc.output
    assert f"point-00003.json in {points} is truncated or not a point file of this sweep" in trunc.stderr
    print(f"\nsimulate: {n} points, 1 kill, {len(at_kill)} written before it, lost 0, finished points "
          f"recomputed 0, computed by the resume {meta['computed']} (= {n} - {len(at_kill)}); "
          f"{time.time() - started:.1f} s")


def slow_draw(point, rng):
    """A cheap point (no solver, no figures): sleeps, then draws; for the two-kill sweep below."""
    time.sleep(point["sleep"])
    return {"k": point["k"], "x": rng.standard_normal(3)}


SWEEP_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_resume import slow_draw
from replica_mlm._base.sweep import run_sweep
points = [{{"k": k, "sleep": 0.1}} for k in range({n})]
res = run_sweep(slow_draw, points, seed=3, workers=2, out={out!r}, resume={resume})
print(res.computed, res.resumed)
"""


def test_run_sweep_killed_twice_loses_and_recomputes_nothing(tmp_path):
    from replica_mlm._base.sweep import run_sweep

    started = time.time()
    n, out = 12, tmp_path / "sweep"

    def script(resume):
        code = SWEEP_SCRIPT.format(tests=str(ROOT / "tests"), n=n, out=str(out), resume=resume)
        return [sys.executable, "-c", code]

    at_kill = []
    for resume in (False, True):
        before = len(at_kill[-1]) if at_kill else 0
        at_kill.append(_run_and_kill_cmd(script(resume), out, before + 2))
        assert before + 2 <= len(at_kill[-1]) < n
    assert {k: at_kill[1][k] for k in at_kill[0]} == at_kill[0]  # loaded, not rewritten
    proc = subprocess.run(script(True), env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=WAIT)
    assert proc.returncode == 0, proc.stderr
    computed, resumed = map(int, proc.stdout.split())
    final = _points(out)
    lost_or_rewritten = [k for k, v in at_kill[1].items() if final.get(k) != v]
    assert lost_or_rewritten == [] and resumed == len(at_kill[1]) and computed == n - len(at_kill[1])
    fresh = run_sweep(slow_draw, [{"k": k, "sleep": 0.0} for k in range(n)], seed=3)
    assert [loads_result(final[f"point-{k:05d}.json"][0]) for k in range(n)] == fresh.results
    print(f"\nrun_sweep: {n} points, 2 kills, written before them {len(at_kill[0])} and {len(at_kill[1])}, "
          f"lost 0, finished points recomputed 0, computed by the last resume {computed} "
          f"(= {n} - {len(at_kill[1])}); {time.time() - started:.1f} s")


def loads_result(data: bytes):
    return json.loads(data)["result"]


def test_a_second_process_into_a_held_folder_is_refused(tmp_path):
    with folder_lock(tmp_path):  # this process is "the first run"
        proc = subprocess.run(_cli("curve", "--L", "20", "--points", "3", "--out", str(tmp_path)), env=_env(),
                              cwd=ROOT, capture_output=True, text=True, timeout=WAIT)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"Error: another run is writing into {tmp_path} (it holds {tmp_path / '.replica-mlm.lock'}); "
        f"wait for it to finish or choose another output folder"]
    assert not (tmp_path / "curve.csv").exists()
