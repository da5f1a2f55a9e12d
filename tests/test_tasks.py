"""The task protocol (replica_mlm.tasks.protocol): a task kind is one class.

``DiagonalSite`` below is a new kind of task, defined here and nowhere in the package: a Gaussian
site whose covariance is given directly by its (ascending) eigenvalues. rm.solve and rm.simulate
take it because it provides what the protocol asks for, not because the package knows its type.
"""

from __future__ import annotations

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.tasks.protocol import DrawnTask, MulticlassTask, SpectralTask, Task


class DiagonalSite:
    """``x ~ N(0, diag(omega))``, ``y = w* . x + sigma eps``: the eigenbasis is the input basis."""

    channel = "gaussian"
    default_loss = "square"

    def __init__(self, omega, teacher, noise: float) -> None:
        self.omega = np.asarray(omega, dtype=float)
        self.teacher = np.asarray(teacher, dtype=float)
        self.noise = float(noise)

    @property
    def p(self) -> int:
        return self.omega.size

    @property
    def rho(self) -> float:
        return float(self.teacher @ np.diag(self.omega) @ self.teacher)

    @property
    def spectrum(self) -> rm.Spectrum:
        return rm.Spectrum(omega=self.omega, bulk=np.full(self.p, 1.0 / self.p), teacher=self.teacher**2,
                           noise=self.noise)

    def draw(self, n, rng):
        x = rng.standard_normal((n, self.p)) * np.sqrt(self.omega)
        return x, x @ self.teacher  # the channel draws the labels from the field

    def measures(self, weights):
        sw = self.omega[:, None] * weights
        d = weights - self.teacher[:, None]
        return {"m": self.teacher @ sw, "q": np.einsum("ij,ij->j", weights, sw),
                "error": self.noise + self.omega @ d**2, "estimation_error": np.sum(d**2, axis=0)}


@pytest.fixture(scope="module")
def pair():
    gen = np.random.default_rng(11)
    omega = np.sort(gen.uniform(0.3, 2.0, size=24))
    teacher = gen.standard_normal(24) / np.sqrt(24)
    toy = DiagonalSite(omega, teacher, noise=0.2)
    site = rm.MaskedSite(covariance=np.diag(omega), teacher=teacher, noise=0.2)
    return toy, site


def test_a_task_kind_defined_outside_the_package_is_solved_and_simulated(pair):
    toy, site = pair
    assert isinstance(toy, SpectralTask) and isinstance(toy, DrawnTask)
    # the theory reads only the spectrum: the same saddle point as the MaskedSite of diag(omega)
    for kw in (dict(alpha=0.7, lam=0.0), dict(alpha=2.0, lam=0.1), dict(alpha=1.5, lam=0.2, loss="huber")):
        got, ref = rm.solve(toy, **kw), rm.solve(site, **kw)
        for key in ("eg", "train_loss", "test_loss", "m", "q", "V", "estimation_error"):
            np.testing.assert_allclose(getattr(got, key), getattr(ref, key), rtol=1e-13)
    # simulate draws from the task and scores with its measures: a diagonal Sigma's eigenbasis is
    # the input basis, so the toy's draws are the MaskedSite's
    for loss, channel in (("square", None), ("logistic", "sign")):
        lam = [0.0, 0.1] if loss == "square" else [0.05, 0.1]
        got = rm.simulate(toy, alpha=1.5, lam=lam, seeds=3, rng=4, loss=loss, channel=channel)
        ref = rm.simulate(site, alpha=1.5, lam=lam, seeds=3, rng=4, loss=loss, channel=channel)
        assert (got.loss, got.channel, got.n, got.p) == (ref.loss, ref.channel, ref.n, ref.p)
        for key in ("eg", "train_loss", "test_loss", "estimation_error"):
            np.testing.assert_allclose(getattr(got, key), getattr(ref, key), rtol=1e-12)
    # the default loss is the task's own
    assert rm.simulate(toy, alpha=1.5, lam=0.1, seeds=2, rng=0).loss == toy.default_loss


def test_every_task_of_the_package_provides_the_protocol():
    site = rm.GaussianPotts.random(L=6, shift=3.0, rng=0).masked_site(0)
    limit = rm.GaussianPotts.limit(shift=3.0)
    ising = rm.PottsModel.random_ising(L=5, beta=0.5, rng=0)
    potts = rm.PottsModel.random(L=4, q=3, seed=0)
    for task, loss in ((site, "square"), (site.spectrum, "square"), (limit, "square"),
                       (ising.masked_site(1), "square"), (potts.masked_site(0), "cross_entropy")):
        assert isinstance(task, Task) and task.default_loss == loss
    assert all(isinstance(t, SpectralTask) for t in (site, site.spectrum, limit, ising.masked_site(1)))
    assert isinstance(potts.masked_site(0), MulticlassTask) and not isinstance(site, MulticlassTask)
    assert isinstance(site, DrawnTask) and not isinstance(limit, DrawnTask)
    # a model is not a task, but names the loss its sites are learnt with
    assert (ising.default_loss, potts.default_loss) == ("logistic", "cross_entropy")


def test_what_is_not_a_task_is_refused_by_name(pair):
    toy, _ = pair
    # a spectrum draws no data: the error names what simulate needs of a task
    with pytest.raises(TypeError, match=r"task must be a MaskedSite .*draws training sets.*DrawnTask"):
        rm.simulate(toy.spectrum, alpha=1.0, lam=0.1, seeds=2)
    with pytest.raises(ValueError, match="task must be"):
        rm.solve(object(), alpha=1.0, lam=0.1)
