"""figure2.factored_gradient: the stationarity measure behind the check figure2.factored_converged."""

import numpy as np

import replica_mlm as rm
from replica_mlm.discrete.attention import FactoredAttention, _FAProblem
from replica_mlm.validation.figure2 import factored_gradient


def _data():
    pm = rm.PottsModel.random(L=5, q=3, seed=2, beta=1.0)
    return pm.sample(300, rng=0, sweeps_between=3, burn_in=30)


def test_gradient_is_the_objectives_at_the_fitted_parameters():
    train = _data()
    early = FactoredAttention.fit(train, q=3, lam=1e-2, rng=0, max_iter=2, newton_iter=0)
    g = factored_gradient(early, train, lam=1e-2)
    # same parameters, packed as fit packs them: the objective equals the one L-BFGS reported
    problem = _FAProblem(train, 3, 1e-2, "linear")
    x = np.concatenate([early.attention[~np.eye(5, dtype=bool)], early.value.ravel()])
    f, grad = problem.loss_grad(x)
    assert np.isclose(f, early.fit_info.objective, rtol=1e-12)
    assert np.isclose(g["norm"], np.linalg.norm(grad)) and g["parameter_norm"] > 0
    # central differences of the objective along a random direction
    d = np.random.default_rng(1).standard_normal(x.size)
    h = 1e-6
    fd = (problem.loss_grad(x + h * d)[0] - problem.loss_grad(x - h * d)[0]) / (2 * h)
    assert np.isclose(fd, grad @ d, rtol=1e-6, atol=1e-9)


def test_converged_fit_is_stationary_and_an_early_one_is_not():
    train = _data()
    early = factored_gradient(FactoredAttention.fit(train, q=3, lam=1e-2, rng=0, max_iter=2,
                                                    newton_iter=0),
                              train, lam=1e-2)
    done = factored_gradient(FactoredAttention.fit(train, q=3, lam=1e-2, rng=0, max_iter=5000,
                                                   tol=1e-15), train, lam=1e-2)
    assert done["norm"] < 1e-6 < 1e-2 < early["norm"]
