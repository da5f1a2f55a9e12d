"""The mlm validation section's full-mode seeds rule, and its agreement checks failing when they must."""

import math

import numpy as np
import pytest

from replica_mlm.validation import mlm_section as mlm


def test_full_seeds_fall_as_one_over_p():
    cfg = mlm.settings(quick=False)
    for L, _instances, seeds in cfg.sizes:
        p = L - 1
        assert seeds == max(mlm.MIN_SEEDS, math.ceil(mlm.FULL_SEED_BUDGET / p))
        assert seeds * p >= mlm.FULL_SEED_BUDGET  # the standard error does not grow with L
    assert [s for _, _, s in cfg.sizes] == sorted((s for _, _, s in cfg.sizes), reverse=True)


@pytest.fixture(scope="module")
def small_sweep():
    # L = 100 at the full-mode seeds (100 per point), alphas away from the peak, every lam
    cfg = mlm.MLMSettings(sizes=((100, 1, mlm.full_seeds(99)),), alphas=(0.4, 2.0, 3.0))
    points = mlm.make_points(cfg, 3)
    results = [mlm.simulate_point(pt, np.random.default_rng(k)) for k, pt in enumerate(points)]
    return cfg, points, results


def test_agreement_checks_pass_on_the_theory_and_fail_on_a_wrong_one(small_sweep):
    cfg, points, results = small_sweep
    rows = mlm._rows(points, results)
    checks, data = mlm._check_d(cfg, rows)
    assert all(c.passed for c in checks), [c.detail for c in checks]
    rel = max(r["eg_stderr"] / r["eg_mean"] for r in rows)
    assert data["stderr_by_L"][0]["rel_stderr_max"] == pytest.approx(rel)
    # a replica prediction 8 standard errors (relative) too high everywhere must fail the |z| check
    wrong = [dict(res, eg_theory=[t * (1 + 8 * rel) for t in res["eg_theory"]]) for res in results]
    checks, _ = mlm._check_d(cfg, mlm._rows(points, wrong))
    assert not checks[0].passed and checks[0].value["max_abs_z"] > mlm.Z_MAX
