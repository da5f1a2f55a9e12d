"""Bayes-optimal AMP on instances against its state evolution (docs/bayes_optimal.md, "AMP")."""

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.learners.amp import instance

P = 300
SEEDS = 8


def _site(channel: str, noise: float = 0.0) -> rm.MaskedSite:
    rng = np.random.default_rng(11)
    omega = np.exp(rng.uniform(np.log(0.25), np.log(4.0), P))  # an anisotropic covariance
    basis, _ = np.linalg.qr(rng.standard_normal((P, P)))
    cov = (basis * omega) @ basis.T
    return rm.MaskedSite(covariance=cov, teacher=rng.standard_normal(P) * np.sqrt(1.5 / P), noise=noise,
                         channel=channel)


def _runs(site, alpha: float, iters: int):
    qs, ms = [], []
    for seed in range(SEEDS):
        X, y, w_star = instance(site, int(alpha * P), rng=seed)
        _, info = rm.amp(X, y, site=site, teacher=w_star, max_iter=iters, tol=1e-300)
        assert info.iterations == iters
        qs.append(info.q)
        ms.append(info.m)
    return np.array(qs), np.array(ms), info


@pytest.mark.parametrize("channel, alpha", [("logit", 2.0), ("sign", 1.5)])
def test_per_iteration_overlaps_follow_state_evolution(channel, alpha):
    """(3), (4) q_t and m_t over 8 seeds at p = 300 within 3 standard errors of the state
    evolution at every one of the first 8 iterations."""
    qs, ms, info = _runs(_site(channel), alpha, 8)
    for arr in (qs, ms):
        mean, se = arr.mean(0), arr.std(0, ddof=1) / np.sqrt(SEEDS)
        z = np.abs(mean - info.se_q) / se
        assert np.all(z < 3), (channel, z)
    assert info.se_q[-1] == pytest.approx(info.fixed_point_q, rel=1e-2)
    frame = info.to_frame()
    assert list(frame.columns) == ["t", "q", "m", "se_q"] and len(frame) == 8


def test_converges_to_the_bayes_optimal_error():
    """AMP converges (relative change below 1e-10) and its estimation error on a gaussian-channel
    instance is within 3 SE (over seeds) of rm.bayes_optimal's."""
    site = _site("gaussian", noise=0.3)
    errors = []
    for seed in range(SEEDS):
        X, y, w_star = instance(site, 2 * P, rng=seed)
        w_hat, info = rm.amp(X, y, site=site, teacher=w_star)
        assert info.converged and info.residual < 1e-10 and info.iterations < 100
        errors.append(np.sum((w_hat - w_star) ** 2))
    bo = rm.bayes_optimal(site, alpha=2.0)
    mean, se = np.mean(errors), np.std(errors, ddof=1) / np.sqrt(SEEDS)
    assert abs(mean - bo.estimation_error) < 3 * se


def test_refuses_what_it_cannot_handle():
    site = _site("logit")
    X, y, _ = instance(site, 50, rng=0)
    with pytest.raises(ValueError, match="columns"):
        rm.amp(X[:, :-1], y, site=site)
    with pytest.raises(ValueError, match="one label per row"):
        rm.amp(X, y[:-1], site=site)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        rm.amp(bad, y, site=site)
    with pytest.raises(ValueError, match=r"labels in \{-1, \+1\}"):
        rm.amp(X, y * 0.5, site=site)
    with pytest.raises(TypeError, match="MaskedSite"):
        rm.amp(X, y, site=site.spectrum)
    with pytest.raises(ValueError, match="damping"):
        rm.amp(X, y, site=site, damping=1.0)
