"""Tests of the attractor network (docs/attractor.md): maths, dynamics, training, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replica_mlm as rm
from replica_mlm.attractor.energy import _cost_and_gradient, _energies_kernel

EPS = np.finfo(float).eps


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _random_net(seed: int, N: int = 5, d: int = 3, beta: float = 1.3, gamma: float = 0.5):
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(N, N, d, d))
    return rm.AttractorNetwork(couplings=J, beta=beta, gamma=gamma), rng


def _naive_energies_attention(J, x, beta):
    N = x.shape[0]
    e, att = np.zeros(N), np.zeros_like(x)
    for i in range(N):
        js = [j for j in range(N) if j != i]
        s = np.array([beta * x[i] @ J[i, j] @ x[j] for j in js])
        w = np.exp(s - s.max())
        e[i] = -(np.log(w.sum()) + s.max()) / beta
        a = w / w.sum()
        att[i] = sum(a[k] * J[i, j] @ x[j] for k, j in enumerate(js))
    return e, att


# ---------------------------------------------------------------------------------------------
# the gradient identity  -d e_i / d x_i = sum_j a_ij J_ij x_j
# ---------------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    N=st.integers(2, 6),
    d=st.integers(1, 4),
    beta=st.floats(0.05, 5.0),
)
def test_gradient_identity_complex_step(seed, N, d, beta):
    """Complex-step derivative (no subtractive cancellation, h = 1e-30): machine precision."""
    net, rng = _random_net(seed, N, d, beta)
    x = rng.normal(size=(N, d))
    att = net.attention(x)
    h = 1e-30
    grad = np.zeros_like(x)
    for i in range(N):
        for a in range(d):
            xc = x.astype(complex)
            xc[i, a] += 1j * h
            grad[i, a] = _energies_kernel(net.couplings, xc[None], net.beta)[0, i].imag / h
    scale = max(1.0, float(np.abs(att).max()))
    assert np.max(np.abs(att + grad)) <= 50 * EPS * scale


def test_gradient_identity_central_differences_public_api():
    """Central differences of the public local_energies, h = 1e-5.

    Truncation error ~ h^2 |e'''| / 6 ~ 1e-10 (|J| ~ 1, beta ~ 1) and rounding error
    ~ eps |e| / h ~ 1e-10, so agreement to 1e-8 is the precision the method allows.
    """
    net, rng = _random_net(7, N=6, d=3, beta=0.9)
    x = _unit(rng.normal(size=(6, 3)))
    h = 1e-5
    fd = np.zeros_like(x)
    for i in range(6):
        for a in range(3):
            xp, xm = x.copy(), x.copy()
            xp[i, a] += h
            xm[i, a] -= h
            fd[i, a] = -(net.local_energies(xp)[i] - net.local_energies(xm)[i]) / (2 * h)
    np.testing.assert_allclose(net.attention(x), fd, atol=1e-8, rtol=0)


def test_energies_and_attention_match_naive_loops_and_batches():
    net, rng = _random_net(3, N=7, d=4, beta=2.0)
    xs = _unit(rng.normal(size=(5, 7, 4)))
    e_b, att_b = net.local_energies(xs), net.attention(xs)
    for m in range(5):
        e, att = _naive_energies_attention(net.couplings, xs[m], 2.0)
        np.testing.assert_allclose(net.local_energies(xs[m]), e, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(net.attention(xs[m]), att, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(e_b[m], e, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(att_b[m], att, rtol=1e-13, atol=1e-13)
    a = net.attention_weights(xs)
    np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-14)
    assert np.all(np.diagonal(a, axis1=1, axis2=2) == 0)


def test_diagonal_couplings_are_unused():
    net, rng = _random_net(4)
    x = rng.normal(size=(5, 3))
    J = net.couplings.copy()
    J[np.arange(5), np.arange(5)] = 1e3
    other = rm.AttractorNetwork(couplings=J, beta=net.beta, gamma=net.gamma)
    np.testing.assert_array_equal(other.local_energies(x), net.local_energies(x))


def test_softmax_is_stable_at_large_beta():
    net, rng = _random_net(5, beta=1e4)
    x = _unit(rng.normal(size=(5, 3)))
    e, att = net.local_energies(x), net.attention(x)
    assert np.all(np.isfinite(e)) and np.all(np.isfinite(att))
    # beta -> infinity: e_i -> -max_j x_i^T J_ij x_j, up to log(N-1) / beta
    s = np.einsum("ia,ijab,jb->ij", x, net.couplings, x)
    np.fill_diagonal(s, -np.inf)
    assert np.max(np.abs(e + s.max(axis=1))) <= np.log(4) / 1e4 + 1e-12


# ---------------------------------------------------------------------------------------------
# dynamics
# ---------------------------------------------------------------------------------------------


def test_sum_of_local_energies_is_not_a_lyapunov_function():
    """A counterexample: along the dynamics sum_i e_i goes up as well as down."""
    rng = np.random.default_rng(0)
    J = rng.normal(size=(4, 4, 2, 2))
    net = rm.AttractorNetwork(couplings=J, beta=1.0, gamma=0.5)
    x0 = _unit(rng.normal(size=(4, 2)))
    traj = net.run(x0, steps=30)
    total = net.local_energies(traj).sum(axis=1)
    rises = np.diff(total)
    # measured: largest one-step rise 0.656 (steps 6 -> 7 -> 8 and 13 -> 16 go up)
    assert rises.max() > 0.5
    assert rises.min() < -0.5  # and it also goes down: not monotone either way
    # each token nevertheless moves along its own attention (the negative gradient of e_i)
    assert np.all(np.einsum("tia,tia->ti", traj[1:] - traj[:-1], net.attention(traj[:-1])) >= -1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), gamma=st.floats(0.0, 1.0), steps=st.integers(1, 5))
def test_run_shapes_and_unit_norm(seed, gamma, steps):
    net, rng = _random_net(seed, N=4, d=3, gamma=gamma)
    x0 = rng.normal(size=(4, 3))
    traj = net.run(x0, steps=steps)
    assert traj.shape == (steps + 1, 4, 3)
    np.testing.assert_array_equal(traj[0], x0)
    np.testing.assert_allclose(np.linalg.norm(traj[1:], axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(traj[1], net.step(x0), rtol=0, atol=0)
    batch = net.run(np.stack([x0, x0]), steps=steps)
    assert batch.shape == (steps + 1, 2, 4, 3)
    np.testing.assert_allclose(batch[:, 1], traj, rtol=1e-13, atol=1e-13)


def test_gamma_one_is_the_identity_on_unit_tokens_and_zero_update_keeps_state():
    net, rng = _random_net(1, gamma=1.0)
    x = _unit(rng.normal(size=(5, 3)))
    np.testing.assert_allclose(net.step(x), x, rtol=1e-15)
    zero = rm.AttractorNetwork(couplings=np.zeros((3, 3, 2, 2)), beta=1.0, gamma=0.0)
    x = _unit(rng.normal(size=(3, 2)))
    out = zero.step(x)  # attention is exactly 0: no NaN, the state is kept
    np.testing.assert_array_equal(out, x)


# ---------------------------------------------------------------------------------------------
# training: the local rule
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("normalisation", ["none", "vmf"])
def test_local_training_gradient_matches_finite_differences(normalisation):
    """Central differences with h = 1e-6 on a cost of size ~10: agreement to 1e-7."""
    net, rng = _random_net(2, N=4, d=3, beta=1.7)
    data = _unit(rng.normal(size=(6, 4, 3)))
    lam = 0.05
    G = net.training_gradient(data, weight_decay=lam, normalisation=normalisation)
    h = 1e-6
    J = net.couplings
    fd = np.zeros_like(G)
    for idx in np.ndindex(G.shape):
        if idx[0] == idx[1]:
            continue
        Jp, Jm = J.copy(), J.copy()
        Jp[idx] += h
        Jm[idx] -= h
        fd[idx] = (
            _cost_and_gradient(Jp, data, 1.7, lam, normalisation)[0]
            - _cost_and_gradient(Jm, data, 1.7, lam, normalisation)[0]
        ) / (2 * h)
    np.testing.assert_allclose(G, fd, atol=1e-7, rtol=0)
    assert np.all(G[np.arange(4), np.arange(4)] == 0)
    assert net.training_cost(data, weight_decay=lam, normalisation=normalisation) == pytest.approx(
        _cost_and_gradient(J, data, 1.7, lam, normalisation)[0], rel=1e-14
    )


def test_first_step_from_zero_is_hebbian():
    rng = np.random.default_rng(5)
    data = _unit(rng.normal(size=(10, 4, 3)))
    zero = rm.AttractorNetwork(couplings=np.zeros((4, 4, 3, 3)), beta=1.0)
    G = zero.training_gradient(data, weight_decay=0.1)
    hebb = -np.einsum("mia,mjb->ijab", data, data) / (10 * 3)  # a_ij = 1 / (N - 1) = 1/3
    hebb[np.arange(4), np.arange(4)] = 0
    np.testing.assert_allclose(G, hebb, rtol=1e-13, atol=1e-15)


def test_training_reduces_cost_and_plants_the_data():
    rng = np.random.default_rng(0)
    M, N, d = 3, 6, 3
    xi = _unit(rng.normal(size=(M, N, d)))
    net = rm.AttractorNetwork.fit(xi, beta=1.0, gamma=0.5, lr=0.5, epochs=200, weight_decay=1e-3,
                                  rng=0)
    cost = net.history.cost
    assert cost.shape == (201,)
    assert np.all(np.diff(cost) <= 1e-12)  # full-batch gradient descent with a small step
    assert cost[-1] < cost[0] - 100  # measured: -9.66 -> -290.4
    # planted: the training configurations sit far below random configurations in energy
    rand = _unit(rng.normal(size=(400, N, d)))
    e_rand = net.local_energies(rand).sum(axis=1)
    e_data = net.local_energies(xi).sum(axis=1)
    assert np.all(e_data < e_rand.mean() - 4 * e_rand.std())
    # and they attract: with 2 of 6 tokens replaced at random, the overlap grows along the dynamics
    xc = xi.copy()
    xc[:, :2] = _unit(rng.normal(size=(M, 2, d)))
    traj = net.run(xc, steps=20)
    ov = np.einsum("tmia,mia->tm", traj, xi) / N
    assert np.all(ov[-1] > ov[0] + 0.05)


def test_fit_with_minibatches_and_generator_is_reproducible():
    rng = np.random.default_rng(1)
    data = _unit(rng.normal(size=(20, 4, 2)))
    a = rm.AttractorNetwork.fit(data, lr=0.2, epochs=3, batch_size=7, init_scale=0.1,
                                rng=np.random.default_rng(9))
    b = rm.AttractorNetwork.fit(data, lr=0.2, epochs=3, batch_size=7, init_scale=0.1, rng=9)
    np.testing.assert_array_equal(a.couplings, b.couplings)
    assert a.history.batch_size == 7 and a.history.cost.shape == (4,)
    assert a.history.cost[-1] < a.history.cost[0]


# ---------------------------------------------------------------------------------------------
# bad input (issue item 6)
# ---------------------------------------------------------------------------------------------

J_OK = np.zeros((3, 3, 2, 2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"couplings": np.zeros((3, 3, 2))}, "4 dimension"),
        ({"couplings": np.zeros((3, 4, 2, 2))}, r"shape \(N, N, d, d\)"),
        ({"couplings": np.zeros((3, 3, 2, 3))}, r"shape \(N, N, d, d\)"),
        ({"couplings": np.zeros((1, 1, 2, 2))}, "at least N = 2"),
        ({"couplings": np.full((3, 3, 2, 2), np.nan)}, "NaN or infinite"),
        ({"couplings": np.full((3, 3, 2, 2), np.inf)}, "NaN or infinite"),
        ({"couplings": J_OK, "beta": 0.0}, "beta must be > 0"),
        ({"couplings": J_OK, "beta": -1.0}, "beta must be > 0"),
        ({"couplings": J_OK, "beta": np.nan}, "beta must be finite"),
        ({"couplings": J_OK, "gamma": -0.1}, "gamma must be >= 0"),
        ({"couplings": J_OK, "gamma": 1.5}, r"gamma must be in \[0, 1\]"),
        ({"couplings": J_OK, "gamma": np.inf}, "gamma must be finite"),
    ],
)
def test_constructor_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rm.AttractorNetwork(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"couplings": "abc"}, "couplings must be an array of real numbers"),
        ({"couplings": J_OK + 0j}, "complex numbers"),
        ({"couplings": J_OK != 0}, "booleans"),
        ({"couplings": J_OK.astype(object)}, "dtype object"),
        ({"couplings": J_OK, "beta": 1 + 0j}, "beta must be a real number"),
        ({"couplings": J_OK, "beta": "1"}, "beta must be a real number, not a string"),
        ({"couplings": J_OK, "gamma": True}, "gamma must be a real number, got the boolean"),
    ],
)
def test_constructor_rejects_wrong_types(kwargs, match):
    with pytest.raises(TypeError, match=match):
        rm.AttractorNetwork(**kwargs)


@pytest.mark.parametrize("method", ["local_energies", "attention", "attention_weights", "step"])
@pytest.mark.parametrize(
    ("x", "match"),
    [
        (np.zeros((3, 3)), r"shape \(N, d\) = \(3, 2\)"),
        (np.zeros((4, 2)), r"shape \(N, d\) = \(3, 2\)"),
        (np.zeros((2, 3, 3)), r"\(M, 3, 2\)"),
        (np.zeros(6), r"shape \(N, d\)"),
        (np.zeros((1, 1, 3, 2)), r"shape \(N, d\)"),
        (np.array([[1.0, 0.0], [np.nan, 0.0], [0.0, 1.0]]), "NaN or infinite"),
        (np.array([[1.0, 0.0], [np.inf, 0.0], [0.0, 1.0]]), "NaN or infinite"),
    ],
)
def test_methods_reject_bad_states(method, x, match):
    net = rm.AttractorNetwork(couplings=J_OK, beta=1.0, gamma=0.5)
    with pytest.raises(ValueError, match=match):
        getattr(net, method)(x)


def test_run_rejects_bad_steps_and_states():
    net = rm.AttractorNetwork(couplings=J_OK)
    x = np.eye(2)[[0, 1, 0]]
    for steps in (0, -1):
        with pytest.raises(ValueError, match="steps"):
            net.run(x, steps=steps)
    for steps in (2.5, True, "3"):
        with pytest.raises(TypeError, match="steps must be an integer"):
            net.run(x, steps=steps)
    with pytest.raises(ValueError, match=r"run\(steps=1000000000\).*more than"):
        net.run(x, steps=10**9)
    with pytest.raises(ValueError, match="x0"):
        net.run(np.zeros((3, 3)), steps=2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"data": np.zeros((4, 3))}, "3 dimension"),
        ({"data": np.zeros((4, 1, 2))}, "at least N = 2"),
        ({"data": np.full((4, 3, 2), np.nan)}, "NaN or infinite"),
        ({"beta": 0.0}, "beta must be > 0"),
        ({"gamma": 2.0}, r"gamma must be in \[0, 1\]"),
        ({"gamma": -1e-9}, "gamma must be >= 0"),
        ({"lr": 0.0}, "lr must be > 0"),
        ({"epochs": 0}, "epochs must be >= 1"),
        ({"weight_decay": 0.0}, "weight_decay must be > 0"),
        ({"batch_size": 0}, "batch_size must be >= 1"),
        ({"init_scale": -1.0}, "init_scale must be >= 0"),
        ({"normalisation": "l2"}, "normalisation must be"),
        ({"rng": -3}, "rng must be"),
        ({"rng": "seed"}, "rng must be"),
        ({"normalisation": None}, "normalisation must be one of"),
    ],
)
def test_fit_rejects_bad_input(kwargs, match):
    args = {"data": np.eye(2)[[[0, 1, 0]] * 4]}
    args.update(kwargs)
    data = args.pop("data")
    wrong_type = isinstance(kwargs.get("rng"), str) or kwargs.get("normalisation", "") is None
    with pytest.raises(TypeError if wrong_type else ValueError, match=match):
        rm.AttractorNetwork.fit(data, **args)


def test_fit_reports_divergence_instead_of_returning_nan():
    rng = np.random.default_rng(0)
    data = _unit(rng.normal(size=(5, 3, 2)))
    with pytest.raises(ValueError, match="training diverged"):
        rm.AttractorNetwork.fit(data, lr=1e300, epochs=5, beta=50.0)


# ---------------------------------------------------------------------------------------------
# huge beta: exact numerics, no warnings (issue 9)
# ---------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("beta", [1e300, np.finfo(float).max])
def test_huge_beta_is_the_exact_hard_maximum(beta):
    """beta -> infinity: e_i = -max_j x_i^T J_ij x_j and a_ij puts all weight on the argmax.

    At beta = 1e300 the gaps between scores (order 0.1 here) times beta are below -1e298, so the
    softmax is exactly one-hot in float64 and the energy is the maximum score (to 2 ulp: the
    reference scores below are summed in another order than the network's).
    """
    net, rng = _random_net(7, N=5, d=3, beta=beta)
    x = _unit(rng.normal(size=(5, 3)))
    r = np.einsum("ia,ijab,jb->ij", x, net.couplings, x)
    np.fill_diagonal(r, -np.inf)
    np.testing.assert_allclose(net.local_energies(x), -r.max(axis=1), rtol=2 * EPS, atol=0)
    np.testing.assert_array_equal(net.attention_weights(x), np.eye(5)[r.argmax(axis=1)])
    traj = net.run(x, steps=5)
    assert np.all(np.isfinite(traj))
    fitted = rm.AttractorNetwork.fit(_unit(rng.normal(size=(4, 5, 3))), beta=beta, epochs=2)
    assert np.all(np.isfinite(fitted.history.cost))
    if beta == 1e300:
        cost = net.training_cost(x[None], weight_decay=0.1, normalisation="vmf")
        assert np.isfinite(cost)
    else:
        with pytest.raises(ValueError, match="smaller beta"):
            net.training_cost(x[None], weight_decay=0.1, normalisation="vmf")
