"""The discrete section's mixture checks (replica_mlm/validation/discrete_mixture.py): exact test
measures against the pseudo-likelihood module's sampled ones, and checks that can fail."""

import numpy as np

from replica_mlm.learners.pseudo_likelihood import site_measures
from replica_mlm.validation import discrete_mixture as dm


def test_exact_measures_equal_site_measures_on_uniform_weights():
    # with equal weights 1/n the probability-weighted sums are the row means of site_measures
    gen = np.random.default_rng(3)
    x = gen.choice([-1.0, 1.0], size=(64, 7))
    teacher, w = gen.normal(size=7), gen.normal(size=7)
    p_plus = 1.0 / (1.0 + np.exp(-(x @ teacher)))
    loss, err = dm._exact_measures(w, x, p_plus, np.full(64, 1 / 64))
    ref = site_measures(x, teacher, w[:, None])
    np.testing.assert_allclose([loss, err], [ref["test_loss"][0], ref["eg"][0]], rtol=1e-12)


def _site(z_gauss: float, z_mix: float, held: bool = True) -> dict:
    row = dict(site="s", alpha=1.0, lam=0.1, seeds=10, held=held)
    for k in dm.MEASURES:
        row[f"{k}_z_gaussian"], row[f"{k}_z_mixture"] = z_gauss, z_mix
    return dict(site="s", rows=[row], cavity_distance=0.01)


def test_checks_pass_and_fail_on_the_mixture_z():
    agree, matters = dm.checks([_site(-5.0, 1.0), _site(-40.0, 20.0, held=False)])
    assert agree.passed and agree.value == 1.0 and matters.passed and matters.value == 5.0
    agree, matters = dm.checks([_site(-2.0, 3.5)])
    assert not agree.passed and agree.value == 3.5 and not matters.passed


def test_quick_ising_site_equals_the_benchmark_written_apart():
    """The validation's Ising site against benchmarks/ising_mixture.py (written separately: its own
    exact measures and fitter, the same generator): same fits to the fitters' tolerance."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "ising_mixture.py"
    module_spec = importlib.util.spec_from_file_location("ising_mixture_benchmark", path)
    bench = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(bench)
    s = dm.settings(True)
    spec = dict(s["ising"][0], curves=False)
    assert (spec["L"], spec["beta"], spec["alphas"], spec["seeds"]) == (13, 0.5, [1.0], 400)
    r = dm.ising_site(spec, s, 0)["rows"][0]
    (b,) = bench.run_instance(0.5, 13, 400, points=[(1.0, s["lam"])], log=lambda *a: None)
    for m in ("eg", "test_loss"):
        np.testing.assert_allclose([r[f"{m}_sim"], r[f"{m}_se"]], [b[f"{m}_sim"], b[f"{m}_se"]], rtol=1e-6)
    np.testing.assert_allclose([r["eg_gaussian"], r["eg_mixture"]], [b["eg_gaussian"], b["eg_mixture"]],
                               rtol=1e-12)
