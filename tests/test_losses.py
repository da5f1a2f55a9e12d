"""Losses of the general engine: sympy derivatives, the proximal operator, user-written losses."""

import numpy as np
import pytest
import sympy as sp
from scipy import optimize

import replica_mlm as rm
from replica_mlm.theory.sides import losses as L

BUILTIN = [rm.losses.Square(), rm.losses.Absolute(), rm.losses.Huber(delta=0.8),
           rm.losses.Logistic(), rm.losses.Hinge()]


def _labels(loss, rng, n):
    if loss.name in ("logistic", "hinge"):
        return rng.choice([-1.0, 1.0], size=n)
    return rng.normal(size=n)


@pytest.mark.parametrize("loss", BUILTIN, ids=lambda x: x.name)
@pytest.mark.parametrize("V", [0.01, 1.0, 300.0])
def test_prox_is_the_minimiser(loss, V):
    """z* minimises (z - w)^2/(2V) + loss: checked against a bounded scalar minimiser (an
    independent algorithm) and by the optimality condition 0 in (z* - w)/V + subdifferential."""
    rng = np.random.default_rng(1)
    yv, wv = _labels(loss, rng, 400), 4 * rng.normal(size=400)
    px = loss.prox(yv, wv, V)
    for i in range(0, 400, 40):
        def obj(t, i=i):
            return (t - wv[i]) ** 2 / (2 * V) + float(loss.value(yv[i], t))
        lo, hi = min(wv[i], px.z[i]) - 1, max(wv[i], px.z[i]) + 1
        ref = optimize.minimize_scalar(obj, bounds=(lo, hi), method="bounded",
                                       options={"xatol": 1e-12})
        assert obj(px.z[i]) <= obj(ref.x) + 1e-12 * (1 + abs(obj(ref.x)))
    smooth = ~px.at_kink
    g = (px.z - wv) / V + loss.d1(yv, px.z)
    scale = np.abs(px.z) + np.abs(wv) + 1.0
    assert np.all(np.abs(g[smooth]) * V <= 1e-13 * scale[smooth])
    # f = (z* - w)/V exactly (computed as -loss'(z*) off kinks)
    assert np.allclose(px.f, (px.z - wv) / V, rtol=1e-9, atol=1e-12 / V)


@pytest.mark.parametrize("loss", BUILTIN, ids=lambda x: x.name)
def test_prox_with_one_V_per_node_is_each_node_with_its_own_V(loss):
    """An array of V (one per node, as clusters with their own V_c ask) gives, node by node, the
    proximal point of a call with that V alone (every node's Newton steps are its own)."""
    rng = np.random.default_rng(3)
    yv, wv = _labels(loss, rng, 60), 4 * rng.normal(size=60)
    V = np.repeat([0.01, 1.0, 300.0], 20)
    px = loss.prox(yv, wv, V)
    for k in range(0, 60, 20):
        one = loss.prox(yv[k:k + 20], wv[k:k + 20], float(V[k]))
        for name in ("z", "f", "dfdw", "at_kink"):
            np.testing.assert_array_equal(getattr(px, name)[k:k + 20], getattr(one, name), err_msg=name)


@pytest.mark.parametrize("loss", BUILTIN, ids=lambda x: x.name)
def test_dfdw_matches_a_finite_difference(loss):
    rng = np.random.default_rng(2)
    V = 0.7
    yv, wv = _labels(loss, rng, 200), 3 * rng.normal(size=200)
    h = 1e-6
    fd = (loss.prox(yv, wv + h, V).f - loss.prox(yv, wv - h, V).f) / (2 * h)
    px = loss.prox(yv, wv, V)
    # away from the kink thresholds (where d_w f jumps) the derivative is smooth
    far = np.ones(yv.shape, dtype=bool)
    for t in loss.thresholds(yv, V):
        far &= ~(np.abs(wv - np.nan_to_num(t, nan=1e9)) < 1e-4)
    assert np.max(np.abs(fd - px.dfdw)[far]) < 1e-6


def test_kinks_are_exact():
    """Absolute loss: z* = y exactly when |w - y| <= V, where d_w f = -1/V (dz*/dw = 0)."""
    loss = rm.losses.Absolute()
    V = 0.5
    yv = np.zeros(5)
    wv = np.array([-0.6, -0.4, 0.0, 0.3, 0.9])
    px = loss.prox(yv, wv, V)
    np.testing.assert_array_equal(px.at_kink, [False, True, True, True, False])
    np.testing.assert_array_equal(px.z[1:4], 0.0)
    np.testing.assert_allclose(px.z[[0, 4]], [-0.1, 0.4], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(px.dfdw[1:4], -1 / V)
    np.testing.assert_array_equal(px.dfdw[[0, 4]], 0.0)
    assert loss.kinks == (L.y,)


def test_hand_written_logistic_equals_the_builtin():
    a, b = sp.symbols("a b", real=True)
    mine = rm.losses.Loss.from_sympy(sp.log(1 + sp.exp(-a * b)), a, b, name="mine")
    ref = rm.losses.Logistic()
    rng = np.random.default_rng(3)
    yv, wv = rng.choice([-1.0, 1.0], 300), 30 * rng.normal(size=300)  # large |w|: stability
    for V in (0.1, 10.0):
        p1, p2 = mine.prox(yv, wv, V), ref.prox(yv, wv, V)
        np.testing.assert_array_equal(p1.z, p2.z)
        np.testing.assert_array_equal(p1.dfdw, p2.dfdw)
    assert np.all(np.isfinite(mine.value(yv, wv)))
    site = rm.GaussianPotts.limit(shift=3.0)
    s1 = rm.solve(site, alpha=2.0, lam=0.05, loss=mine, channel="sign")
    s2 = rm.solve(site, alpha=2.0, lam=0.05, loss="logistic", channel="sign")
    assert s1.loss == "mine" and s2.loss == "logistic"
    for k in ("eg", "m", "q", "V", "test_loss", "train_loss"):
        assert getattr(s1, k) == pytest.approx(getattr(s2, k), rel=1e-12, abs=0)


def test_hand_written_hinge_and_pseudo_huber_work_without_further_code():
    a, b = sp.symbols("a b", real=True)
    hinge = rm.losses.Loss.from_sympy(sp.Max(0, 1 - a * b), a, b)
    lim = rm.GaussianPotts.limit(shift=3.0)
    s1 = rm.solve(lim, alpha=1.5, lam=0.1, loss=hinge, channel="sign")
    s2 = rm.solve(lim, alpha=1.5, lam=0.1, loss="hinge", channel="sign")
    assert s1.eg == pytest.approx(s2.eg, rel=1e-12)
    ph = rm.losses.Loss.from_sympy(sp.sqrt(1 + (a - b) ** 2) - 1, a, b, name="pseudo-huber")
    sp_ = rm.solve(lim, alpha=1.5, lam=0.1, loss=ph)
    assert sp_.converged and sp_.residual <= 1e-10 and sp_.method == "general"
    # d^2 (sqrt(1 + (r/d)^2) - 1) = r^2/2 - r^4/(8 d^2) + ...: at d = 1e4 the square loss up to
    # a relative 1e-8 E r^4 / E r^2 (residuals r of order one here)
    d = 1e4
    wide = rm.losses.Loss.from_sympy(d**2 * (sp.sqrt(1 + ((a - b) / d) ** 2) - 1), a, b)
    sq = rm.solve(lim, alpha=1.5, lam=0.1)
    wd = rm.solve(lim, alpha=1.5, lam=0.1, loss=wide)
    for k in ("eg", "m", "q", "V"):
        assert getattr(wd, k) == pytest.approx(getattr(sq, k), rel=1e-6), k
    assert abs(wd.eg - sq.eg) > 0  # a different loss: not the fast path in disguise


def test_bad_losses_are_refused():
    a, b, c = sp.symbols("a b c", real=True)
    with pytest.raises(ValueError, match="not convex"):
        rm.losses.Loss.from_sympy(-((a - b) ** 2), a, b)
    with pytest.raises(ValueError, match="depend on y and z only"):
        rm.losses.Loss.from_sympy(c * (a - b) ** 2, a, b)
    with pytest.raises(TypeError, match="Symbol"):
        rm.losses.Loss.from_sympy((a - b) ** 2, "a", b)
    with pytest.raises(ValueError, match="delta must be > 0"):
        rm.losses.Huber(delta=-1.0)
    with pytest.raises(ValueError, match="unknown loss"):
        rm.solve(rm.GaussianPotts.limit(shift=3.0), alpha=1.0, lam=0.1, loss="quadratic")
    with pytest.raises(TypeError, match="loss must be"):
        rm.solve(rm.GaussianPotts.limit(shift=3.0), alpha=1.0, lam=0.1, loss=3)


def test_huber_with_huge_delta_is_the_square_loss():
    site = rm.GaussianPotts.random(80, shift=3.0, seed=4).masked_site(0)
    for alpha, lam in ((0.5, 0.1), (2.0, 0.01)):
        ref = rm.solve(site, alpha=alpha, lam=lam)
        hub = rm.solve(site, alpha=alpha, lam=lam, loss=rm.losses.Huber(delta=1e3))
        assert hub.method == "general" and ref.method == "root"
        for k in ("eg", "m", "q", "V", "m_hat", "q_hat", "V_hat", "test_loss"):
            assert getattr(hub, k) == pytest.approx(getattr(ref, k), rel=1e-10, abs=0), k
        # the Huber loss has no MSE convention: its train loss is the mean loss, half the MSE
        assert hub.train_loss == pytest.approx(ref.train_loss / 2, rel=1e-10)


def test_is_square_recognises_the_square_loss_in_any_form():
    # the fast path takes a loss that equals (y - z)^2 / 2 (sympy decides), and no other
    a, b = sp.symbols("a b", real=True)
    same = [(a - b) ** 2 / 2, sp.expand((a - b) ** 2 / 2),
            sp.Piecewise(((a - b) ** 2 / 2, a > b), ((b - a) ** 2 / 2, True))]
    for expr in same:
        assert L.Loss.from_sympy(expr, a, b).is_square, expr
    other = [(a - b) ** 2 / 2 + sp.Rational(1, 10**12) * (a - b) ** 2, (a - b) ** 2,
             sp.sqrt(1 + (a - b) ** 2) - 1]
    for expr in other:
        assert not L.Loss.from_sympy(expr, a, b).is_square, expr
    assert [L.resolve(n).is_square for n in ("square", "absolute", "huber", "logistic", "hinge")] \
        == [True, False, False, False, False]
