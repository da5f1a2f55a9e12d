"""Sweep runner: seeds per point, serial == processes == Dask bit for bit, atomic files, resume,
fingerprints, the folder lock, BLAS threads, JSON round trips and file permissions."""

import json
import os
import stat

import numpy as np
import pytest

import replica_mlm
import replica_mlm._version
from replica_mlm._base import io as rio
from replica_mlm._base import run_folder
from replica_mlm._base.sweep import BadPointFile, ResumeMismatch, ResumeRefused, point_rng, run_sweep
from replica_mlm.validation.mlm_section import simulate_point


def _points(alphas=(0.5, 1.5, 2.0, 0.8)):
    return [{"L": 40, "instance": 0, "instance_seed": 3, "shift": 3.0, "site": 0, "alpha": a,
             "lams": [0.0, 0.1], "seeds": 4} for a in alphas]


def _draw(point, rng):
    return {"x": rng.standard_normal(3), "k": point["k"]}


def test_point_rng_is_the_spawned_child():
    child = np.random.SeedSequence(7).spawn(5)[3]
    assert np.array_equal(point_rng(7, 3).standard_normal(4), np.random.default_rng(child).standard_normal(4))
    assert not np.array_equal(point_rng(7, 3).standard_normal(4), point_rng(7, 2).standard_normal(4))


def test_serial_equals_processes_and_does_not_depend_on_order(tmp_path):
    points = _points()
    serial = run_sweep(simulate_point, points, seed=11)
    procs = run_sweep(simulate_point, points, seed=11, workers=2, out=tmp_path)
    assert procs.backend == "processes(2)" and serial.backend == "serial"
    assert serial.results == procs.results  # bit for bit: floats compared exactly
    # point k's result depends only on (seed, k), not on the other points
    alone = run_sweep(simulate_point, points[:2], seed=11)
    assert alone.results == serial.results[:2]
    other = run_sweep(simulate_point, points, seed=12)
    assert other.results[0]["eg_mean"] != serial.results[0]["eg_mean"]
    stored = json.loads((tmp_path / "point-00002.json").read_text())
    assert stored["point"] == points[2] and stored["result"] == serial.results[2] and stored["seed"] == 11


def test_dask_local_cluster_equals_serial():
    distributed = pytest.importorskip("distributed", reason="dask.distributed is in the [test] extra")
    points = _points()
    serial = run_sweep(simulate_point, points, seed=5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        by_address = run_sweep(simulate_point, points, seed=5, scheduler=cluster.scheduler_address)
        with distributed.Client(cluster) as client:
            by_client = run_sweep(simulate_point, points, seed=5, scheduler=client)
    assert by_address.backend.startswith("dask(")
    assert by_address.results == serial.results
    assert by_client.results == serial.results


_FLAKY = {"fail_at": None, "calls": []}


def _flaky(point, rng):
    """_draw, failing at point ``_FLAKY["fail_at"]`` (serial runs only: module state)."""
    _FLAKY["calls"].append(point["k"])
    if point["k"] == _FLAKY["fail_at"]:
        raise RuntimeError("worker lost")
    return _draw(point, rng)


def test_failure_half_way_keeps_finished_points_and_resume_completes(tmp_path):
    points = [{"k": k} for k in range(5)]
    _FLAKY.update(fail_at=2, calls=[])
    with pytest.raises(RuntimeError, match="worker lost"):
        run_sweep(_flaky, points, seed=1, out=tmp_path)
    assert sorted(p.name for p in tmp_path.glob("point-*")) == ["point-00000.json", "point-00001.json"]
    _FLAKY.update(fail_at=None, calls=[])
    resumed = run_sweep(_flaky, points, seed=1, out=tmp_path, resume=True)
    assert resumed.resumed == 2 and resumed.computed == 3 and _FLAKY["calls"] == [2, 3, 4]
    fresh = run_sweep(_flaky, points, seed=1)
    assert resumed.results == fresh.results
    assert len(list(tmp_path.glob(".*.tmp"))) == 0  # no temporary file left behind
    # nothing left to do: everything is loaded
    _FLAKY.update(fail_at=2, calls=[])
    again = run_sweep(_flaky, points, seed=1, out=tmp_path, resume=True)
    assert again.computed == 0 and _FLAKY["calls"] == [] and again.results == fresh.results


def test_failure_in_a_worker_process_propagates_and_keeps_finished_points(tmp_path):
    points = _points((0.5, 1.5, -1.0, 2.0))  # alpha = -1 is invalid
    with pytest.raises(ValueError, match="alpha must be > 0"):
        run_sweep(simulate_point, points, seed=0, workers=2, out=tmp_path)
    done = {p.name for p in tmp_path.glob("point-*.json")}
    assert "point-00002.json" not in done and "point-00000.json" in done


def test_resume_refuses_a_different_sweep(tmp_path):
    run_sweep(_draw, [{"k": 0}], seed=0, out=tmp_path)
    with pytest.raises(ResumeMismatch, match=r"points\[0\].k differs: folder has 0, this run asks 1"):
        run_sweep(_draw, [{"k": 1}], seed=0, out=tmp_path, resume=True)


def _draw_other(point, rng):
    return {"x": rng.standard_normal(3) + 1, "k": point["k"]}


def test_resume_with_another_seed_function_or_version_is_refused(tmp_path, monkeypatch):
    """Before the fingerprint, a folder made with seed 7 resumed with seed 8 returned seed 7's numbers."""
    points = [{"k": 0}, {"k": 1}]
    first = run_sweep(_draw, points, seed=7, out=tmp_path)
    with pytest.raises(ResumeMismatch, match="seed differs: folder has 7, this run asks 8") as err:
        run_sweep(_draw, points, seed=8, out=tmp_path, resume=True)
    assert (err.value.field, err.value.stored, err.value.current) == ("seed", 7, 8)
    assert "\n" not in str(err.value)
    with pytest.raises(ResumeMismatch, match=r"function differs.*_draw'.*_draw_other'"):
        run_sweep(_draw_other, points, seed=7, out=tmp_path, resume=True)
    monkeypatch.setattr(replica_mlm._version, "__version__", "99.0")  # the version lives there
    with pytest.raises(ResumeMismatch, match=r"version differs: folder has '0\.1\.0', this run asks '99\.0'"):
        run_sweep(_draw, points, seed=7, out=tmp_path, resume=True)
    monkeypatch.undo()
    # nothing was overwritten by the refusals; the right resume loads everything
    again = run_sweep(_draw, points, seed=7, out=tmp_path, resume=True)
    assert again.resumed == 2 and again.results == first.results
    # appending points keeps the finished ones: a point depends only on (fingerprint, point, index)
    longer = run_sweep(_draw, [*points, {"k": 2}], seed=7, out=tmp_path, resume=True)
    assert (longer.resumed, longer.computed) == (2, 1)
    assert longer.results == run_sweep(_draw, [*points, {"k": 2}], seed=7).results


@pytest.mark.parametrize("content,why", [
    ('{"index": 1, "seed": 0, "poi', "not valid JSON"),  # truncated
    ("", "not valid JSON"),
    ("[1, 2]", "keys index, point, result, fingerprint missing"),
    ('{"a": 1}', "keys index, point, result, fingerprint missing"),
    (b"\xff\xfe", "not valid JSON"),
])
def test_a_truncated_or_foreign_point_file_is_named(tmp_path, content, why):
    points = [{"k": 0}, {"k": 1}, {"k": 2}]
    run_sweep(_draw, points, seed=0, out=tmp_path)
    path = tmp_path / "point-00001.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(BadPointFile) as err:
        run_sweep(_draw, points, seed=0, out=tmp_path, resume=True)
    msg = str(err.value)
    assert msg.startswith(f"point-00001.json in {tmp_path} is truncated or not a point file of this sweep")
    assert why in msg and "\n" not in msg


def test_a_point_file_of_another_sweep_is_named(tmp_path):
    points = [{"k": 0}, {"k": 1}]
    run_sweep(_draw, points, seed=0, out=tmp_path / "a")
    run_sweep(_draw, points, seed=1, out=tmp_path / "b")
    # same index, same point, other seed: only the fingerprint digest tells it apart
    (tmp_path / "a" / "point-00001.json").write_bytes((tmp_path / "b" / "point-00001.json").read_bytes())
    with pytest.raises(BadPointFile, match=r"point-00001\.json .* fingerprint is another sweep's"):
        run_sweep(_draw, points, seed=0, out=tmp_path / "a", resume=True)


def test_a_folder_with_points_but_no_fingerprint_is_not_resumed(tmp_path):
    run_sweep(_draw, [{"k": 0}], seed=0, out=tmp_path)
    (tmp_path / "fingerprint.json").unlink()
    with pytest.raises(ResumeRefused, match=r"no fingerprint\.json"):
        run_sweep(_draw, [{"k": 0}], seed=0, out=tmp_path, resume=True)


def test_a_fresh_run_replaces_the_point_files_of_an_earlier_one(tmp_path):
    run_sweep(_draw, [{"k": k} for k in range(4)], seed=3, out=tmp_path)
    run_sweep(_draw, [{"k": 0}], seed=4, out=tmp_path)  # not a resume: the 4 old points go
    assert sorted(p.name for p in tmp_path.glob("point-*")) == ["point-00000.json"]
    res = run_sweep(_draw, [{"k": k} for k in range(4)], seed=4, out=tmp_path, resume=True)
    assert (res.resumed, res.computed) == (1, 3)


def test_a_second_run_into_a_locked_folder_is_refused(tmp_path):
    with run_folder.folder_lock(tmp_path):
        with pytest.raises(run_folder.FolderBusy, match=f"another run is writing into {tmp_path}"):
            run_sweep(_draw, [{"k": 0}], seed=0, out=tmp_path)
        assert not list(tmp_path.glob("point-*"))
    assert run_sweep(_draw, [{"k": 0}], seed=0, out=tmp_path).computed == 1  # released


def test_unreachable_scheduler_is_named_after_a_bounded_wait(monkeypatch):
    pytest.importorskip("distributed", reason="dask.distributed is in the [test] extra")
    import time

    import replica_mlm._base.sweep as sweep

    monkeypatch.setattr(sweep, "SCHEDULER_TIMEOUT", 1.0)
    started = time.time()
    with pytest.raises(ConnectionError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:1 "):
        run_sweep(_draw, [{"k": 0}], scheduler="tcp://127.0.0.1:1")
    assert time.time() - started < 20


def _blas_threads(point, rng):
    from threadpoolctl import threadpool_info

    return {"threads": sorted({lib["num_threads"] for lib in threadpool_info()})}


def test_each_worker_runs_with_the_asked_blas_threads():
    from threadpoolctl import threadpool_info

    before = threadpool_info()
    if not before:
        pytest.skip("no BLAS/OpenMP library visible to threadpoolctl")
    points = [{"k": 0}, {"k": 1}]
    assert [r["threads"] for r in run_sweep(_blas_threads, points, workers=2).results] == [[1], [1]]
    assert [r["threads"] for r in run_sweep(_blas_threads, points, threads=2).results] == [[2], [2]]
    two = run_sweep(_blas_threads, points, threads=2, workers=2)
    assert [r["threads"] for r in two.results] == [[2], [2]] and two.threads == 2
    assert threadpool_info() == before  # scoped: nothing changed in this process
    with pytest.raises(ValueError, match="threads must be an int >= 1 or None"):
        run_sweep(_draw, points, threads=0)
    with pytest.raises(TypeError, match="threads must be an int >= 1 or None"):
        run_sweep(_draw, points, threads=1.5)


def test_simulate_inherits_the_threads_of_its_scope(monkeypatch):
    import importlib

    from replica_mlm._base.threads import blas_threads

    # the module replica_mlm.learners.simulate is imported on first use
    sim_module = importlib.import_module("replica_mlm.learners.simulate")
    seen = []
    real = sim_module.blas_threads

    def spy(threads):
        seen.append(threads)
        return real(threads)

    monkeypatch.setattr(sim_module, "blas_threads", spy)
    site = replica_mlm.GaussianPotts.random(L=20, shift=3.0, seed=0).masked_site(0)
    with blas_threads(2):
        inner = replica_mlm.simulate(site, alpha=2.0, lam=0.1, seeds=2, rng=0)
    outer = replica_mlm.simulate(site, alpha=2.0, lam=0.1, seeds=2, rng=0, threads=1)
    assert np.array_equal(inner.eg, outer.eg)
    from replica_mlm._base.threads import INHERIT, resolve_threads

    assert seen[0] is INHERIT and seen[1] == 1
    with blas_threads(2):
        assert resolve_threads(INHERIT) == 2
        with blas_threads(None):
            assert resolve_threads(INHERIT) is None
    assert resolve_threads(INHERIT) == 1


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077, 0o002])
def test_files_are_written_with_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        rio.atomic_write_text(tmp_path / "x.json", "{}\n")
        run_sweep(_draw, [{"k": 0}], out=tmp_path / "sweep")
        with open(tmp_path / "plain.txt", "w") as fh:  # what open() gives: the reference
            fh.write("x")
    finally:
        os.umask(old)
    expected = 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode) == expected
    for path in (tmp_path / "x.json", tmp_path / "sweep" / "point-00000.json",
                 tmp_path / "sweep" / "fingerprint.json"):
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    with pytest.raises(TypeError):
        rio.atomic_write_text(tmp_path / "x.txt", 3)  # not text
    assert list(tmp_path.iterdir()) == []


def test_json_convention_round_trips_every_float_exactly():
    values = [0.1, 1 / 3, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -0.0, np.inf, -np.inf,
              np.nan, np.float64(2.0) ** 0.5, np.float32(0.1)]
    text = rio.dumps({"v": values, "a": np.array([[np.inf, 1.5]]), "b": np.bool_(True), "i": np.int64(3)})
    back = rio.loads(text)
    for x, y in zip(values, back["v"], strict=True):
        if np.isnan(x):
            assert isinstance(y, float) and np.isnan(y)
        else:
            assert float(x) == y and np.signbit(x) == np.signbit(y)
    assert back["a"] == [[np.inf, 1.5]] and back["b"] is True and back["i"] == 3
    assert "Infinity" in text and "NaN" in text  # tokens, not the strings "inf" / "nan"


def test_infinity_survives_the_round_trip(tmp_path):
    def peak(point, rng):
        return {"eg": np.inf, "v": np.array([1.0, np.nan])}

    res = run_sweep(peak, [{"k": 0}], out=tmp_path)
    again = run_sweep(peak, [{"k": 0}], out=tmp_path, resume=True)
    assert res.results[0]["eg"] == np.inf and again.results[0]["eg"] == np.inf
    assert np.isnan(again.results[0]["v"][1])


@pytest.mark.parametrize("kwargs,match", [
    (dict(seed=-1), "seed must be"),
    (dict(seed=1.5), "seed must be"),
    (dict(workers=0), "workers must be >= 1"),
    (dict(resume=True), "resume=True needs an output folder"),
])
def test_bad_sweep_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_sweep(_draw, [{"k": 0}], **kwargs)


def _waits_for_point_zero(point, rng):
    """Point 1 finishes only once the parent has written point 0's file: a runner that writes a
    point only when every point is done (not as each one finishes) makes it time out."""
    import time
    from pathlib import Path

    if point["k"] == 1:
        deadline = time.time() + 20
        while not (Path(point["dir"]) / "point-00000.json").exists():
            if time.time() > deadline:
                raise TimeoutError("point 0 was not written while point 1 was running")
            time.sleep(0.05)
    return {"k": point["k"]}


def test_processes_write_each_point_as_it_finishes(tmp_path):
    points = [{"k": 0, "dir": str(tmp_path)}, {"k": 1, "dir": str(tmp_path)}]
    res = run_sweep(_waits_for_point_zero, points, seed=0, workers=2, out=tmp_path)
    assert [r["k"] for r in res.results] == [0, 1]
