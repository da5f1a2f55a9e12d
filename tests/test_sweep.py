"""Sweep runner: seeds per point, serial == processes == Dask bit for bit, atomic files, resume."""

import json

import numpy as np
import pytest

from replica_mlm.sweep import point_rng, run_sweep
from replica_mlm.validation.mlm import simulate_point


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


def test_failure_half_way_keeps_finished_points_and_resume_completes(tmp_path):
    calls = []

    def flaky(point, rng):
        calls.append(point["k"])
        if point["k"] == 2:
            raise RuntimeError("worker lost")
        return _draw(point, rng)

    points = [{"k": k} for k in range(5)]
    with pytest.raises(RuntimeError, match="worker lost"):
        run_sweep(flaky, points, seed=1, out=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["point-00000.json", "point-00001.json"]
    calls.clear()
    resumed = run_sweep(_draw, points, seed=1, out=tmp_path, resume=True)
    assert resumed.resumed == 2 and resumed.computed == 3
    fresh = run_sweep(_draw, points, seed=1)
    assert resumed.results == fresh.results
    assert len(list(tmp_path.glob(".*.tmp"))) == 0  # no temporary file left behind
    # nothing left to do: everything is loaded
    again = run_sweep(flaky, points, seed=1, out=tmp_path, resume=True)
    assert again.computed == 0 and calls == [] and again.results == fresh.results


def test_failure_in_a_worker_process_propagates_and_keeps_finished_points(tmp_path):
    points = _points((0.5, 1.5, -1.0, 2.0))  # alpha = -1 is invalid
    with pytest.raises(ValueError, match="alpha must be > 0"):
        run_sweep(simulate_point, points, seed=0, workers=2, out=tmp_path)
    done = {p.name for p in tmp_path.glob("point-*.json")}
    assert "point-00002.json" not in done and "point-00000.json" in done


def test_resume_refuses_a_different_sweep(tmp_path):
    run_sweep(_draw, [{"k": 0}], seed=0, out=tmp_path)
    with pytest.raises(ValueError, match="cannot resume"):
        run_sweep(_draw, [{"k": 1}], seed=0, out=tmp_path, resume=True)


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
