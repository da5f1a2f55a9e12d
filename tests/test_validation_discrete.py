"""The checks of the ``discrete`` validation section on synthetic rows (no sampling, no solving)."""

from __future__ import annotations

import math

import pytest

from replica_mlm.validation import discrete_section as d


def _row(method: str, z: float, theory_se: float, *, hot: bool = False, L: int = 50,
         gauss_z: float = 0.5, gauss_rel: float = -0.1, gauss_rel_se: float = 0.01,
         seeds: int = 10**6) -> dict:
    # many seeds by default: Student's t is then normal and z is held as it is
    row = dict(L=L, beta=0.9 if hot else 0.2, alpha=1.0, lam=0.01, hot=hot, covariance=method,
               seeds=seeds, sampler="gibbs", sweeps_between=3, block_seconds=1.0, alpha_c=2.0,
               near_threshold=True)
    for k in d.MEASURES:
        row.update({k: 1.0, f"{k}_sim": 1.0 + 0.1 * z, f"{k}_sim_se": 0.1, f"{k}_se": 0.1,
                    f"{k}_theory_se": theory_se, f"{k}_theory_bias": 0.0, f"{k}_z": z,
                    f"{k}_rel": 0.1 * z, f"{k}_gauss_seeds": 10**6, f"{k}_gauss_se": 0.01,
                    f"{k}_disc_vs_gauss_z": gauss_z,
                    f"{k}_gauss_rel": gauss_rel, f"{k}_gauss_rel_se": gauss_rel_se})
    return row


@pytest.fixture
def fake(monkeypatch):
    fig = dict(site0_gaps=[0.2, 0.1, 0.01], sim_mean=[1.0, 3.0, 2.0], theory_at_sim=[1.0, 3.0, 2.0],
               alpha_c_sites=[2.0], peak_lams=[1e-2, 1e-3, 1e-4], lam=1e-3, alpha_sim=[1.0, 2.0, 3.0])
    cov = dict(p_value=0.5, chi2=60.0, dof=66, max_abs_z=2.0, method="gibbs")
    monkeypatch.setattr(d, "_covariance_check", lambda rng: cov)
    monkeypatch.setattr(d, "_figures", lambda out, rows, fig, s: [])
    # the mixture part of the section has its own tests (tests/test_discrete_mixture_validation.py)
    monkeypatch.setattr(d.discrete_mixture, "compute", lambda quick, rng: ({}, []))
    monkeypatch.setattr(d.discrete_mixture, "checks", lambda sites: [])
    monkeypatch.setattr(d, "mixture_figure", lambda out, sites: [])
    # so has the local theory's part (tests/test_sparse_tables.py)
    monkeypatch.setattr(d.sparse_tables, "section_instances", lambda quick: [])
    monkeypatch.setattr(d.sparse_tables, "checks", lambda rows: [])

    def use(rows):
        monkeypatch.setattr(d, "_compute", lambda s, rng, workers=1, out=None: (rows, fig))

    return use


def test_exact_covariances_have_no_covariance_error_check(fake, tmp_path):
    fake([_row("exact", 1.0, 0.0)])
    names = [c.name for c in d.run(tmp_path).checks]
    assert "discrete.covariance_error" not in names
    assert names == ["discrete.covariance", "discrete.agreement", "discrete.gaussian_inputs_near_threshold",
                     "discrete.peak_at_alpha_c"]


@pytest.mark.parametrize(("theory_se", "passed"), [(0.04, True), (0.06, False)])
def test_covariance_error_check_holds_jackknife_against_simulation(fake, tmp_path, theory_se, passed):
    fake([_row("gibbs", 1.0, theory_se)])
    check = {c.name: c for c in d.run(tmp_path).checks}["discrete.covariance_error"]
    assert check.passed is passed
    assert check.value == pytest.approx(theory_se / 0.1)


def test_agreement_fails_on_a_held_point_and_ignores_hot_ones(fake, tmp_path):
    fake([_row("exact", 1.0, 0.0), _row("exact", 5.0, 0.0, hot=True)])
    assert {c.name: c for c in d.run(tmp_path).checks}["discrete.agreement"].passed
    fake([_row("exact", 1.0, 0.0), _row("exact", 3.5, 0.0)])
    check = {c.name: c for c in d.run(tmp_path).checks}["discrete.agreement"]
    assert not check.passed and check.value == pytest.approx(3.5, rel=1e-5)  # 10**6 seeds: t is normal
    assert ("3 outside [L = 50, beta = 0.2, alpha = 1.00 (alpha_c = 2.00), lam = 0.01: test_loss "
            "t = +3.50, normal scale +3.50" in check.detail)
    table = d._transition([_row("exact", 1.0, 0.0), _row("exact", -2.0, 0.0, hot=True)])
    assert [(e["beta"], e["test_loss_max_z"]) for e in table] == [(0.2, 1.0), (0.9, 2.0)]


def test_gaussian_inputs_check_fails_when_spins_and_gaussian_inputs_differ(fake, tmp_path):
    far = _row("exact", 1.0, 0.0, gauss_z=8.0)
    far["near_threshold"] = False  # only the point nearest alpha_c is compared
    fake([_row("exact", 1.0, 0.0, gauss_z=-2.9), far])
    check = {c.name: c for c in d.run(tmp_path).checks}["discrete.gaussian_inputs_near_threshold"]
    assert check.passed and check.value == pytest.approx(2.9, rel=1e-5)
    fake([_row("exact", 1.0, 0.0, gauss_z=-3.1)])
    check = {c.name: c for c in d.run(tmp_path).checks}["discrete.gaussian_inputs_near_threshold"]
    assert not check.passed and check.value == pytest.approx(3.1, rel=1e-5)


@pytest.mark.parametrize(("gap_large_L", "se_small_L", "passed"), [
    (-0.02, 0.01, True),    # -10 % +- 1 % at the small L, -2 % at the large L: shrinks by 5.7 se
    (-0.09, 0.01, False),   # shrinks by 0.7 se only
    (0.10, 0.01, False),    # same size, opposite sign
    (-0.02, 0.05, False),   # -10 % +- 5 % is not resolved at the small L: nothing to hold, fails
])
def test_finite_size_check_needs_the_resolved_gap_to_shrink(fake, tmp_path, gap_large_L, se_small_L, passed):
    small = _row("gibbs", 1.0, 0.0, L=50, gauss_rel=-0.1, gauss_rel_se=se_small_L)
    large = _row("gibbs", 1.0, 0.0, L=200, gauss_rel=gap_large_L, gauss_rel_se=0.01)
    fake([small, large])
    check = {c.name: c for c in d.run(tmp_path, quick=False).checks}["discrete.finite_size_near_threshold"]
    assert check.passed is passed


def test_normal_equivalent_matches_the_closed_form_t_with_two_degrees_of_freedom():
    from statistics import NormalDist

    for t in (0.5, 3.0, 6.0, -4.0):
        sf = 0.5 - abs(t) / (2.0 * math.sqrt(2.0 + t * t))  # Student's t, 2 degrees of freedom
        assert d.normal_equivalent(t, 2) == pytest.approx(math.copysign(NormalDist().inv_cdf(1 - sf), t),
                                                          rel=1e-9)
    assert d.normal_equivalent(3.0, 10**7) == pytest.approx(3.0, rel=1e-5)


def test_agreement_holds_few_seeds_to_their_t_distribution(fake, tmp_path):
    # 5 seeds: t = 3.2 has the tail probability of a normal 2.13 (passes); t = 7 that of 3.1 (fails)
    fake([_row("exact", 3.2, 0.0, seeds=5)])
    check = {c.name: c for c in d.run(tmp_path).checks}["discrete.agreement"]
    assert check.passed and check.value == pytest.approx(2.133, abs=1e-3)
    fake([_row("exact", 7.0, 0.0, seeds=5)])
    check = {c.name: c for c in d.run(tmp_path).checks}["discrete.agreement"]
    assert not check.passed and check.value > 3.0


def test_gaussian_inputs_check_uses_welch_degrees_of_freedom(fake, tmp_path):
    # 5 spin seeds (se 0.1) against 10**6 Gaussian seeds (se 0.01): Welch gives about 4.1 degrees
    # of freedom, and z = -3.1 is a normal -2.1
    fake([_row("exact", 1.0, 0.0, gauss_z=-3.1, seeds=5)])
    check = {c.name: c for c in d.run(tmp_path).checks}["discrete.gaussian_inputs_near_threshold"]
    v1, v2 = 0.1**2, 0.01**2
    dof = (v1 + v2) ** 2 / (v1**2 / 4 + v2**2 / (10**6 - 1))
    assert check.passed and check.value == pytest.approx(abs(d.normal_equivalent(-3.1, dof)), rel=1e-9)
    assert 2.0 < check.value < 2.3


@pytest.mark.parametrize(("gap", "se", "passed"), [
    (-0.10, 0.01, False),   # 10 standard errors and 10 %: the finite-L gap is resolved
    (-0.025, 0.005, True),  # 5 standard errors but below 3 %
    (-0.05, 0.02, True),    # 5 % but 2.5 standard errors
])
def test_theory_near_threshold_check_holds_the_gaussian_input_gap(fake, tmp_path, gap, se, passed):
    rows = [_row("gibbs", 1.0, 0.0, L=L, gauss_rel=gap, gauss_rel_se=se) for L in (50, 200)]
    fake(rows)
    checks = {c.name: c for c in d.run(tmp_path, quick=False).checks}
    assert checks["discrete.theory_near_threshold"].passed is passed
    assert checks["discrete.theory_near_threshold"].value == pytest.approx(abs(gap) / se)
    fake([_row("exact", 1.0, 0.0, gauss_rel=-0.1, gauss_rel_se=0.01)])  # quick mode: not held
    assert "discrete.theory_near_threshold" not in {c.name for c in d.run(tmp_path).checks}
