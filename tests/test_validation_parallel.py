"""_pool.run_tasks: order, same results in one process and in a pool, bad input, errors."""

import os

import numpy as np
import pytest

from replica_mlm._base.pool import Task, run_tasks


def _draw(seed, n=5, *, scale=1.0):
    return scale * np.random.default_rng(seed).standard_normal(n), os.getpid()


def _fail_if(x):
    if x == 2:
        raise ArithmeticError(f"task {x} fails")
    return x


def test_results_in_task_order_and_independent_of_workers():
    tasks = [Task(_draw, (seed,), {"scale": seed + 1.0}) for seed in range(5)]
    serial = run_tasks(tasks, workers=1)
    pooled = run_tasks(tasks, workers=2)
    for (a, pid_a), (b, _), seed in zip(serial, pooled, range(5), strict=True):
        np.testing.assert_array_equal(a, (seed + 1.0) * np.random.default_rng(seed).standard_normal(5))
        np.testing.assert_array_equal(a, b)
        assert pid_a == os.getpid()
    assert os.getpid() not in {pid for _, pid in pooled}  # the pool really ran them elsewhere
    assert run_tasks([], workers=2) == []


def test_bad_input_and_failing_task():
    for bad in (0, -1):
        with pytest.raises(ValueError, match="workers"):
            run_tasks([Task(_draw, (0,))], workers=bad)
    for bad in (1.5, True, "2"):
        with pytest.raises(TypeError, match="workers"):
            run_tasks([Task(_draw, (0,))], workers=bad)
    with pytest.raises(TypeError, match=r"tasks\[1\] must be a replica_mlm._base.pool.Task"):
        run_tasks([Task(_draw, (0,)), (_draw, (1,))])
    for workers in (1, 2):
        with pytest.raises(ArithmeticError, match="task 2 fails"):
            run_tasks([Task(_fail_if, (x,)) for x in range(4)], workers=workers)


def _scope_threads(x):
    from replica_mlm._base.threads import INHERIT, resolve_threads

    return x, resolve_threads(INHERIT)


def test_on_result_sees_every_result_and_threads_reach_the_workers():
    """The one runner (validation sections, figure 2, discrete, the sweep): each result is handed
    to ``on_result`` as it ends, and ``threads`` is the BLAS limit every task runs under."""
    for workers in (1, 2):
        seen = {}
        out = run_tasks([Task(_scope_threads, (x,)) for x in range(4)], workers=workers, threads=3,
                        on_result=seen.__setitem__)
        assert out == [(x, 3) for x in range(4)]
        assert seen == dict(enumerate(out))
    with pytest.raises(ValueError, match="threads"):
        run_tasks([Task(_draw, (0,))], threads=0)
