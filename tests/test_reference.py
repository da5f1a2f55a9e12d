"""The general engine against an independent slow reference (adaptive quad + minimize_scalar prox)."""

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.theory.solvers import reference


@pytest.fixture(scope="module")
def site60():
    return rm.GaussianPotts.random(L=61, shift=3.0, seed=2).masked_site(0)


@pytest.mark.parametrize("loss,channel,alpha,lam", [
    ("logistic", "sign", 1.5, 0.01),
    ("hinge", "sign", 1.0, 0.01),
    pytest.param("logistic", "logit", 3.0, 0.1, marks=pytest.mark.slow),
    pytest.param("hinge", "sign", 2.5, 0.05, marks=pytest.mark.slow),
])
def test_engine_solution_is_a_fixed_point_of_the_reference(site60, loss, channel, alpha, lam):
    # the reference's own channel integrals (quad to 1e-10) and prox (Brent) at the engine's (V, q, m)
    # reproduce the engine's hats and map (V, q, m) onto itself, to the reference's accuracy
    sp = rm.solve(site60, alpha=alpha, lam=lam, loss=loss, channel=channel)
    spec = site60.spectrum
    hats = reference.hats(loss, channel, alpha, sp.V, sp.q, sp.m, spec.rho, spec.noise)
    ours = np.array([sp.V_hat, sp.q_hat, sp.m_hat])
    assert np.max(np.abs(np.array(hats) - ours) / np.abs(ours)) < 1e-7
    image = reference.prior(spec, lam, *hats)
    x = np.array([sp.V, sp.q, sp.m])
    assert np.max(np.abs(np.array(image) - x) / np.abs(x)) < 1e-7


def test_reference_matches_fast_path_prior_side(site60):
    # the typed prior side equals the square-loss fast path's order parameters given its hats
    sp = rm.solve(site60, alpha=1.7, lam=0.05)
    V, q, m = reference.prior(site60.spectrum, 0.05, sp.V_hat, sp.q_hat, sp.m_hat)
    assert np.allclose([V, q, m], [sp.V, sp.q, sp.m], rtol=1e-12)
