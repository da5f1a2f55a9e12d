"""Newton's method for the local theory of a two-colour site (docs/discrete.md, "Cost of a local
solve"): the Jacobians it is built from, each held against central finite differences of the map
it differentiates, its convergence, and the driver's contract.

* the channel side's Jacobian (:meth:`LocalClusters.hats_jacobian`, integration by parts on the
  same nodes) for a smooth loss, a loss with kinks (hinge), the square loss and Huber's;
* the ridge prior's Jacobian in the cluster means (:meth:`RidgeMeansPrior.overlaps_jacobian`);
* the composed Jacobian in the packed unknowns (:meth:`MatrixProblem.image_jacobian`);
* Newton converges quadratically near the point (each gap at most a constant times the square of
  the previous one) to the point Anderson mixing finds;
* with the square loss, the solver's point is the closed form of ridge regression on the clusters;
* the one-entry memo of the last evaluation changes no number, and order parameters outside their
  domain are refused as such (so the driver steps back rather than fails), and a hybr run ending
  outside the domain is not taken for a failure.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from local_helpers import constructed, with_own_covariances
from scipy.optimize import brentq

from replica_mlm.theory.sides import losses
from replica_mlm.theory.solvers import fixed_point, local_engine, multiclass


@pytest.fixture(scope="module")
def theory():
    mixture = constructed(d=100, q=2, m=3)
    return local_engine.LocalTheory(mixture, 100)


def _problem(theory, loss: str, alpha: float = 2.0, lam: float = 0.1) -> multiclass.MatrixProblem:
    return local_engine.problem(theory, alpha, lam, losses.resolve(loss), 16)


def _point(prob):
    """A point near the solution but off it: the solution moved by a few per cent."""
    found = multiclass.solve_point(prob, method="anderson", max_evaluations=3000)
    shift = 1 + 0.03 * np.cos(np.arange(found["M"].size))
    return found["V"] * 1.05, found["Q"] * 0.97, found["M"] * shift[None, :]


def _vector(V, Q, M) -> np.ndarray:
    return np.concatenate([[V[0, 0], Q[0, 0]], M[0]])


def _central(fn, u: np.ndarray, rel: float = 1e-6) -> np.ndarray:
    cols = []
    for j in range(u.size):
        e = rel * max(1.0, abs(u[j]))
        up, down = u.copy(), u.copy()
        up[j] += e
        down[j] -= e
        cols.append((fn(up) - fn(down)) / (2 * e))
    return np.array(cols).T


@pytest.mark.parametrize("loss", ["logistic", "hinge", "square", "huber"])
def test_channel_side_jacobian_is_the_hats_derivative(theory, loss):
    """The hats' Jacobian from one proximal step equals central differences of the hats to 1e-8 of
    the largest entry (step 1e-6 relative; measured 1e-10 to 4e-10 for the four losses; hinge's
    panel edges move with V and M, and its hats stay smooth in them)."""
    prob = _problem(theory, loss)
    side = prob.channel_side
    V, Q, M = _point(prob)
    h, J = side.hats_jacobian(2.0, V, Q, M)
    plain = side.hats(2.0, V, Q, M)
    for key in ("V_hat", "Q_hat", "M_hat", "train_loss"):  # the hats are those of hats()
        np.testing.assert_array_equal(h[key], plain[key])

    def hats(u):
        out = side.hats(2.0, u[:1, None], u[1:2, None], u[None, 2:])
        return _vector(out["V_hat"], out["Q_hat"], out["M_hat"])

    fd = _central(hats, _vector(V, Q, M))
    assert np.max(np.abs(J - fd)) <= 1e-8 * np.max(np.abs(fd))


def test_ridge_prior_jacobian_is_the_overlaps_derivative(theory):
    """The closed-form Jacobian of the ridge prior in the cluster means equals central differences of
    its overlaps (1e-8 of the largest entry), and refuses K > 1."""
    prob = _problem(theory, "logistic")
    V, Q, M = _point(prob)
    h = prob.channel_side.hats(2.0, V, Q, M)
    (V2, Q2, M2), J = prob.prior_side.overlaps_jacobian(h)
    np.testing.assert_array_equal(_vector(V2, Q2, M2), _vector(*prob.prior_side.overlaps(h)))

    def overlaps(u):
        return _vector(*prob.prior_side.overlaps({"V_hat": u[:1, None], "Q_hat": u[1:2, None],
                                                  "M_hat": u[None, 2:]}))

    fd = _central(overlaps, _vector(h["V_hat"], h["Q_hat"], h["M_hat"]))
    assert np.max(np.abs(J - fd)) <= 1e-8 * np.max(np.abs(fd))
    two = {"V_hat": np.eye(2), "Q_hat": np.eye(2), "M_hat": np.ones((2, theory.C))}
    with pytest.raises(ValueError, match="K = 1"):
        prob.prior_side.overlaps_jacobian(two)


def test_packed_jacobian_is_the_image_derivative(theory):
    """The composed Jacobian in the packed unknowns (log sqrt V, log sqrt Q, M) equals central
    differences of the fixed-point map itself."""
    prob = _problem(theory, "logistic")
    assert prob.has_jacobian
    x = prob.pack(*_point(prob))
    image, J = prob.image_jacobian(x)
    np.testing.assert_array_equal(image, prob.image(x))
    fd = _central(prob.image, x)
    assert np.max(np.abs(J - fd)) <= 1e-8 * np.max(np.abs(fd))


def test_newton_converges_quadratically_to_andersons_point(theory):
    """From the cold start Newton's gaps |F(x) - x| fall quadratically once below 1e-2 (each at most
    10 times the square of the one before), in at most 15 evaluations, to Anderson's point."""
    prob = _problem(theory, "logistic")
    gaps = []

    def recorded(x):
        image, J = prob.image_jacobian(x)
        gaps.append(float(np.linalg.norm(image - x)))
        return image, J

    found = fixed_point.solve(prob.image, prob.residual, prob.start(), tol=multiclass.TOL, method="newton",
                              jacobian=recorded, step_limits=prob.step_limits())
    assert found.residual <= multiclass.TOL and prob.evaluations <= 15
    close = [g for g in gaps if g < 1e-2]
    assert len(close) >= 2
    for before, after in itertools.pairwise(close):
        assert after <= max(10 * before**2, 1e-12)
    anderson = multiclass.solve_point(_problem(theory, "logistic"), method="anderson", max_evaluations=3000)
    V, Q, M = prob.unpack(found.x)
    np.testing.assert_allclose(_vector(V, Q, M), _vector(anderson["V"], anderson["Q"], anderson["M"]),
                               rtol=1e-8)


def test_newton_needs_a_jacobian():
    with pytest.raises(ValueError, match="jacobian"):
        fixed_point.solve(lambda x: x, lambda x: (0.0, {}), np.zeros(2), tol=1e-10, method="newton")


def test_a_problem_without_jacobian_says_so():
    """The q = 3 mixture of classes has no Jacobian, nor the two-colour clusters with their own
    covariances (whose channel side inherits the pooled one's fields, not its Jacobian):
    image_jacobian refuses rather than guess."""
    mixture = constructed(d=60, q=3, m=2)
    prob = local_engine.problem(local_engine.LocalTheory(mixture, 60), 2.0, 0.1, None, 6)
    clusters = with_own_covariances(constructed(d=60, q=2, m=2))
    own = local_engine.problem(local_engine.LocalTheory(clusters, 60, own_covariances=True), 2.0, 0.1,
                               losses.resolve("logistic"), 16)
    for problem in (prob, own):
        assert not problem.has_jacobian
        with pytest.raises(TypeError, match="Jacobian"):
            problem.image_jacobian(problem.start())


def test_the_last_evaluation_is_reused_and_changes_nothing(theory):
    """The residual at the point just mapped reuses its hats (no new evaluation) and equals the
    residual of a fresh problem, bit for bit."""
    prob = _problem(theory, "hinge")
    x = prob.start()
    prob.image(x)
    before = prob.evaluations
    res, point = prob.residual(x)
    assert prob.evaluations == before
    fresh_res, fresh_point = _problem(theory, "hinge").residual(x)
    assert res == fresh_res
    for key in ("V_hat", "Q_hat", "M_hat"):
        np.testing.assert_array_equal(point[key], fresh_point[key])
    prob.residual(x + 1e-3)
    assert prob.evaluations == before + 1


def _ridge_closed_form(theory, alpha: float, lam: float):
    """The square loss's local theory without the solver: ``f = (y - w) / (1 + V)`` makes
    ``V_hat = alpha / (1 + V)``, so V solves ``V = sum_k omega_k G_k / p`` alone (G_k = 1 / (lam +
    omega_k V_hat)); then ``M = A r diag(pi) (s - M)`` (``A = sum_k G_k a_k a_k^T``, ``r = alpha /
    (1 + V)``) is linear in M, and Q = sum_k omega_k G_k^2 b_k^2 + kappa (sum_c pi_c (s_c - M_c)^2 +
    Q) linear in Q."""
    om, a, p, pi = theory.omega, theory.means, theory.p, theory.weights
    s = np.where(theory.labels == 0, 1.0, -1.0)
    V = brentq(lambda v: v - np.sum(om / (lam + om * alpha / (1 + v))) / p, 0.0, np.sum(om) / (p * lam),
               xtol=1e-15, rtol=1e-15)
    r = alpha / (1 + V)
    G = 1.0 / (lam + om * r)
    A = (a.T * G) @ a
    M = np.linalg.solve(np.eye(pi.size) + r * A * pi[None, :], r * A @ (pi * s))
    b = a @ (r * pi * (s - M))
    kappa = np.sum(om**2 * G**2) / p * alpha / (1 + V) ** 2
    Q = (np.sum(om * G**2 * b**2) + kappa * np.sum(pi * (s - M) ** 2)) / (1 - kappa)
    return V, Q, M


@pytest.mark.parametrize(("alpha", "lam"), [(0.5, 0.01), (2.0, 0.1), (4.0, 1.0)])
def test_square_loss_point_is_the_ridge_closed_form(theory, alpha, lam):
    """With the square loss the local theory is ridge regression on the clusters, solvable by hand:
    the solver's point (Newton's method from the cold start) is that closed form to 1e-10, and the
    closed form is a fixed point (one evaluation, residual below 1e-12)."""
    V, Q, M = _ridge_closed_form(theory, alpha, lam)
    prob = _problem(theory, "square", alpha, lam)
    found = multiclass.solve_point(prob, method="newton")
    np.testing.assert_allclose(_vector(found["V"], found["Q"], found["M"]), np.r_[V, Q, M], rtol=1e-10,
                               atol=1e-12)
    closed = prob.pack(np.array([[V]]), np.array([[Q]]), M[None, :])
    res, _ = _problem(theory, "square", alpha, lam).residual(closed)
    assert res <= 1e-12


def test_order_parameters_outside_their_domain_are_a_domain_error(theory):
    """A step to V = inf (log sqrt V = 800) or Q = 0 (log sqrt Q = -800) is refused as a
    FloatingPointError, the driver's signal to step back, not a failure of the proximal operator."""
    prob = _problem(theory, "square")
    x = prob.start()
    for k, value in ((0, 800.0), (1, -800.0)):
        bad = x.copy()
        bad[k] = value
        with pytest.raises(FloatingPointError, match="domain"):
            prob.image(bad)


def test_hybr_goes_on_where_a_run_stops_outside_the_domain(monkeypatch):
    """A hybr run that stops where the residual cannot be evaluated (a domain error) is not a point:
    the driver goes on to its next attempt instead of failing (here x = cos x, whose first run is
    made to stop at x = -1, outside the residual's domain x >= 0)."""
    import types

    from scipy import optimize

    real_root, runs = optimize.root, []

    def stops_outside_first(fun, x0, **kw):
        runs.append(1)
        return types.SimpleNamespace(x=np.array([-1.0])) if len(runs) == 1 else real_root(fun, x0, **kw)

    def residual(x):
        if x[0] < 0:
            raise FloatingPointError("outside")
        return abs(float(np.cos(x[0]) - x[0])), {}

    monkeypatch.setattr(optimize, "root", stops_outside_first)
    found = fixed_point.solve(np.cos, residual, np.array([0.5]), tol=1e-12, xtols=(1e-14,),
                              domain_errors=(FloatingPointError,), failures=(FloatingPointError,))
    assert len(runs) >= 2 and abs(found.x[0] - 0.7390851332151607) < 1e-12
