"""One route planner (issue 35, item 1): every entry point asks :func:`replica_mlm.theory.routes.plan`
which route serves a call and gets the same answer; what none serves is refused with one message;
each route owns its options and lists them (rm.show_options)."""

from __future__ import annotations

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.theory import routes

SITE = rm.GaussianPotts.random(L=20, shift=3.0, seed=0).masked_site(0)
ISING = rm.PottsModel.random_ising(L=9, beta=0.5, seed=0).masked_site(0, rng=0)
POTTS = rm.PottsModel.random(L=5, q=3, seed=2, beta=0.8).masked_site(0)


@pytest.mark.parametrize("task, kwargs, route", [
    (SITE, {}, "root"),
    (SITE, {"method": "iterate"}, "iterate"),
    (SITE, {"loss": "logistic", "channel": "sign"}, "general"),
    (SITE, {"method": "general"}, "general"),
    (ISING, {}, "general"),
    (ISING, {"theory": "mixture"}, "mixture"),
    (POTTS, {}, "multiclass"),
    (POTTS, {"theory": "mixture"}, "mixture-multiclass"),
    (ISING, {"theory": "local"}, "local"),
])
def test_every_entry_point_gets_the_same_route(task, kwargs, route):
    for entry, served in routes.ENTRY_ROUTES.items():
        if entry.startswith(("bayes", "equations")) or entry in routes.DYNAMICS_ENTRIES:
            continue  # their own routes (the Bayes-optimal estimator, the learning dynamics): below
        if route in served:
            assert routes.plan(task, entry=entry, **kwargs).route == route
        else:  # one message, naming what the entry point serves
            with pytest.raises(ValueError, match=f"{entry} serves the routes .*take route '{route}'"):
                routes.plan(task, entry=entry, **kwargs)


@pytest.mark.parametrize("task, kwargs, served", [
    (SITE, {}, True),
    (ISING, {}, True),
    (ISING, {"theory": "mixture"}, True),
    (SITE, {"method": "iterate"}, False),
    (POTTS, {}, "sgd"),
    (POTTS, {"theory": "mixture"}, False),
])
def test_the_dynamics_entries_plan_one_route_or_refuse_naming_it(task, kwargs, served):
    for entry in routes.DYNAMICS_ENTRIES:
        flow = entry in ("gradient_flow", "simulate_gradient_flow")
        if (kwargs.get("theory") == "mixture" or served == "sgd") and flow:
            served_here = False  # gradient flow is solved on Gaussian covariates of one direction only
        else:
            served_here = served
        if served_here:
            assert routes.plan(task, entry=entry, **kwargs).route == "dynamics"
        else:
            with pytest.raises(ValueError, match=entry):
                routes.plan(task, entry=entry, **kwargs)


def test_learning_curve_draws_what_solve_solves_a_potts_site_included():
    curve = rm.learning_curve(POTTS, alpha=[0.5, 1.0], lam=0.1)
    assert isinstance(curve, rm.MulticlassCurve) and len(curve) == 2 and curve.converged
    first = rm.solve(POTTS, alpha=0.5, lam=0.1)  # the first point is solved cold, as solve does
    assert curve.eg[0] == first.eg and np.array_equal(curve.Q[0], first.Q)
    second = rm.solve(POTTS, alpha=1.0, lam=0.1)  # warm-started: the same fixed point
    np.testing.assert_allclose(curve.Q[1], second.Q, rtol=1e-8)
    assert curve.test_loss[1] == pytest.approx(second.test_loss, rel=1e-8)
    assert len(curve.to_frame()) == 2
    mix = rm.learning_curve(POTTS, alpha=[0.5, 1.0], lam=0.1, theory="mixture")
    assert mix.method == "mixture" and mix.M.shape == (2, 2, 3)


def test_equations_print_the_local_theory_and_refuse_what_it_does_not_take():
    eqs = rm.equations(theory="local")  # the two-colour site's default loss, the logistic
    assert {"M_hat", "Q_hat", "V_hat", "V", "Q", "M", "estimation_error"} <= set(eqs)
    with pytest.raises(ValueError, match="channel"):
        rm.equations(theory="local", channel="logit")
    with pytest.raises(ValueError, match="gaussian' only, got theory='local'"):  # printed the gaussian's
        rm.equations(theory="local", bayes_optimal=True)


def test_phase_diagram_refuses_a_potts_site_with_the_planner_message():
    with pytest.raises(ValueError, match=r"phase_diagram serves the routes root, general; .* 'multiclass'"):
        rm.phase_diagram(POTTS, alpha=[0.5, 1.0], lam=[0.1, 1.0])


def test_route_options_are_owned_and_listed():
    text = routes.show_options("general", disp=False)
    assert "order" in text and "init" in text
    assert "(no options)" in routes.show_options("root", disp=False)
    every = routes.show_options(disp=False)
    assert all(name in every for name in routes.ROUTES)
    with pytest.raises(ValueError, match="route"):
        rm.show_options("bogus")
    with pytest.raises(ValueError, match="route 'root' of solve takes no options; got order"):
        rm.solve(SITE, alpha=1.0, lam=0.1, order=16)
    with pytest.raises(ValueError, match="route 'general' of solve takes init, order; got damping"):
        rm.solve(SITE, alpha=1.0, lam=0.1, loss="huber", damping=0.5)


def test_a_task_without_mixture_is_refused_by_the_planner():
    with pytest.raises(ValueError, match=r"task\.mixture"):
        rm.solve(SITE, alpha=1.0, lam=0.1, theory="mixture")
    with pytest.raises(ValueError, match=r"task\.mixture"):
        rm.learning_curve(SITE, alpha=[1.0], lam=0.1, theory="mixture")


def test_a_bad_name_gets_one_message_from_every_entry_point():
    messages = set()
    for call in (lambda: rm.solve(SITE, alpha=1.0, lam=0.1, loss="bogus"),
                 lambda: rm.learning_curve(SITE, alpha=[1.0], lam=0.1, loss="bogus"),
                 lambda: rm.optimal_lambda(SITE, alpha=1.0, loss="bogus"),
                 lambda: rm.phase_diagram(SITE, alpha=[1.0, 2.0], lam=[0.1, 1.0], loss="bogus")):
        with pytest.raises(ValueError) as info:
            call()
        messages.add(str(info.value))
    assert len(messages) == 1, messages
