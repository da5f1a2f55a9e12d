"""What issue 28's newcomer calls: every result type's .to_frame(), Simulation.eg_theory and .z,
print(rm.equations()), plot_learning_curves(..., optimal=best)."""

from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import replica_mlm as rm
from replica_mlm._base.stats import zscore

SITE = rm.GaussianPotts.random(L=80, shift=3.0, rng=0).masked_site(0)
LIMIT = rm.GaussianPotts.limit(shift=3.0)


def _results() -> dict[str, object]:
    """One instance of every result type a public function returns."""
    multiclass_site = rm.PottsModel.random(L=4, q=3, rng=2, beta=0.5).masked_site(0)
    return {
        "SaddlePoint": rm.solve(SITE, alpha=2.0, lam=0.1),
        "MulticlassSaddlePoint": rm.solve(multiclass_site, alpha=2.0, lam=0.5),
        "LearningCurve": rm.learning_curve(SITE, alpha=np.linspace(0.5, 3, 5), lam=0.1),
        "MulticlassCurve": rm.learning_curve(multiclass_site, alpha=[1.0, 2.0], lam=0.5),
        "Simulation": rm.simulate(SITE, alpha=2.0, lam=[0.01, 0.1], seeds=3, rng=0),
        "OptimalLambda": rm.optimal_lambda(LIMIT, alpha=np.array([0.5, 2.0])),
        "PhaseDiagram": rm.phase_diagram(LIMIT, alpha=[0.5, 1.5, 2.5], lam=[0.01, 0.1]),
        "PhaseDiagram (shift)": rm.shift_phase_diagram(alpha=[0.5, 1.5, 2.5], shift=[2.5, 3.0], lam=0.1),
        "Asymptotics": rm.asymptotics(LIMIT, lam=0.1),
        "OnlineSGD": rm.online_sgd(SITE, alpha=[0.0, 1.0], lr=0.5),
        "GradientFlow": rm.gradient_flow(SITE, alpha=2.0, time=[0.1, 1.0, 10.0]),
        "SGDSimulation": rm.simulate_sgd(SITE, alpha=[0.5], lr=0.5, seeds=3, rng=0),
        "FlowSimulation": rm.simulate_gradient_flow(SITE, alpha=2.0, time=[1.0], seeds=3, rng=0),
    }


@pytest.fixture(scope="module")
def results():
    return _results()


def test_every_result_type_has_to_frame(results):
    exported = {name for name in rm.__all__ if isinstance(getattr(rm, name), type)
                and dataclasses.is_dataclass(getattr(rm, name))}
    result_types = {type(r).__name__ for r in results.values()}
    # every exported dataclass that a function returns is in the table above
    assert exported - {"Spectrum", "MSA"} <= result_types, exported - result_types
    for name, res in results.items():
        frame = res.to_frame()
        assert isinstance(frame, pd.DataFrame) and len(frame) >= 1 and not frame.empty, name


def test_phase_diagram_frame_is_the_grid(results):
    pd_ = results["PhaseDiagram"]
    frame = pd_.to_frame()
    n_y, n_a = pd_.eg.shape
    assert len(frame) == n_y * n_a
    np.testing.assert_array_equal(frame["eg"].to_numpy().reshape(n_y, n_a), pd_.eg)
    np.testing.assert_array_equal(frame["lam"].to_numpy().reshape(n_y, n_a)[:, 0], pd_.y)
    np.testing.assert_array_equal(frame["optimal_lam"].to_numpy()[:n_a], pd_.optimal_lam)
    # each point's eg is the saddle point's at that (alpha, lam), solved again
    row = frame.iloc[4]
    assert row["eg"] == pytest.approx(rm.solve(LIMIT, alpha=row["alpha"], lam=row["lam"]).eg, rel=1e-12)
    shift = results["PhaseDiagram (shift)"].to_frame()
    assert set(shift["shift"]) == {2.5, 3.0} and shift["optimal_lam"].isna().all()


def test_simulation_carries_the_replica_value_and_z():
    sim = rm.simulate(SITE, alpha=2.0, lam=[1e-3, 0.1], seeds=20, rng=0)
    for j, lam in enumerate(sim.lam):
        assert sim.eg_theory[j] == rm.solve(SITE, alpha=sim.alpha, lam=lam).eg  # at the realised alpha
        assert sim.train_loss_theory[j] == rm.solve(SITE, alpha=sim.alpha, lam=lam).train_loss
    np.testing.assert_array_equal(sim.z, zscore(sim.eg_mean, sim.eg_theory, sim.eg_stderr))
    np.testing.assert_allclose(sim.z, (sim.eg_mean - sim.eg_theory) / sim.eg_stderr)
    # theory and 20 training sets agree within 3 standard errors (p = 79, away from alpha = 1)
    assert np.all(np.abs(sim.z) < 3), sim.z
    sims = rm.simulate(SITE, alpha=[0.5, 2.0], lam=0.1, seeds=3, rng=0)
    assert all(s.eg_theory.shape == (1,) and s.z.shape == (1,) for s in sims)


def test_simulation_replica_values_follow_the_loss_and_survive_pickling():
    import pickle

    huber = rm.losses.Huber(2.0)
    sim = rm.simulate(SITE, alpha=2.0, lam=[0.1], seeds=3, rng=0, loss=huber)
    back = pickle.loads(pickle.dumps(sim))  # the Loss object does not pickle: its values do
    expected = rm.solve(SITE, alpha=sim.alpha, lam=0.1, loss=huber).eg
    assert back.eg_theory[0] == sim.eg_theory[0] == expected
    assert expected != rm.solve(SITE, alpha=sim.alpha, lam=0.1).eg  # not the square loss's
    ising = rm.PottsModel.random_ising(L=8, beta=0.3, rng=0)
    on_model = rm.simulate(ising, site=1, alpha=2.0, lam=[0.1], seeds=2, rng=0, n_test=50)
    assert on_model.eg_theory is None and on_model.z is None


def test_equations_print_and_stay_a_mapping(capsys):
    eqs = rm.equations()
    print(eqs)
    text = capsys.readouterr().out
    assert "V_hat = alpha/(V + 1)" in text and "e_g = -2*m + q + rho + sigma^2    ['eg']" in text
    assert "\\hat" not in text and "Eq(" not in text
    assert isinstance(eqs, dict) and set(eqs) >= {"V_hat", "q_hat", "m_hat", "V", "q", "m", "eg"}
    assert str(eqs["V_hat"].rhs) == "alpha/(V + 1)"  # still sympy objects
    assert rm.equations(latex=True).startswith("\\begin{aligned}")


def test_plot_learning_curves_draws_the_optimal_lambda(results):
    best = results["OptimalLambda"]
    curves = rm.learning_curve(LIMIT, alpha=np.linspace(0.2, 3, 30), lam=[0.01, 1.0])
    fig = rm.plotting.plot_learning_curves(curves, optimal=best)
    line = next(ln for ln in fig.axes[0].get_lines() if "optimal" in ln.get_label())
    np.testing.assert_array_equal(line.get_xdata(), best.alpha)
    np.testing.assert_array_equal(line.get_ydata(), best.eg_opt)
    # the optimum lies below every fixed-lam curve at the same alpha
    for c in curves:
        assert np.all(best.eg_opt <= np.interp(best.alpha, c.alpha, c.eg) + 1e-12)
    plt.close(fig)
    alone = rm.plotting.plot_learning_curves([best])  # an OptimalLambda among the curves
    assert any("optimal" in ln.get_label() for ln in alone.axes[0].get_lines())
    plt.close(alone)
    with pytest.raises(TypeError, match="optimal must be an OptimalLambda"):
        rm.plotting.plot_learning_curves(curves, optimal=curves[0])
    with pytest.raises(ValueError, match="at most one OptimalLambda"):
        rm.plotting.plot_learning_curves([best], optimal=best)
