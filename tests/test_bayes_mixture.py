"""rm.bayes_optimal(task, theory="mixture"): the exact Gaussian posterior of an Ising site's mixture
(docs/bayes_optimal.md, section "On the Gaussian mixture"), held against an independent simulation,
ERM on the same mixture, its two limits and theory="gaussian" at weak coupling."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import ndtr

import replica_mlm as rm
from replica_mlm.tasks.mixture import GaussianMixture
from replica_mlm.theory.solvers.mixture_engine import MixtureTheory
from replica_mlm.theory.studies import bayes_mixture
from replica_mlm.theory.studies.bayes_optimal import prior_spectrum


@pytest.fixture(scope="module")
def big_site():
    """An SK Ising site with p = 200 inputs; its mixture measured from 2000 sampled sequences (the
    simulation draws from that mixture itself, so the sampling noise of the moments does not enter)."""
    model = rm.PottsModel.random_ising(L=201, beta=0.6, seed=3)
    return model.masked_site(0, rng=0, samples=2000)


@pytest.fixture(scope="module")
def small_site():
    """An SK Ising site with p = 12 and its exact (enumerated) mixture."""
    return rm.PottsModel.random_ising(L=13, beta=0.5, seed=0).masked_site(0, rng=0)


def _simulate(task, alpha, seeds, n_test, rng):
    """The exact Bayes estimator of the mixture model under the prior N(0, tau/p I), written here
    with numpy, on data drawn by task.mixture.sample: the posterior mean w_hat (precision
    p/tau I + n S/4) for the estimation error on task.teacher, and the exact predictive law
    P(y | x, data) = sigmoid(y x . w_next), w_next the posterior mean whose precision counts n + 1
    samples, for the test error and log-loss on fresh draws. Returns per-seed rows (seeds, 3)."""
    mix = task.mixture
    _, tau = prior_spectrum(task)
    p = mix.p
    S = mix.covariance
    centre = mix.weights @ mix.means
    n = round(alpha * p)
    precision = (p / tau) * np.eye(p) + n * S / 4.0
    rows = []
    for _ in range(seeds):
        x, labels = mix.sample(n, rng=rng)
        y = np.where(labels == 0, 1.0, -1.0)
        b = (y @ (x - centre)) / 2.0
        w_hat = np.linalg.solve(precision, b)
        w_next = np.linalg.solve(precision + S / 4.0, b)
        xt, lt = mix.sample(n_test, rng=rng)
        margin = np.where(lt == 0, 1.0, -1.0) * ((xt - centre) @ w_next)
        rows.append([np.mean(margin < 0), np.mean(np.logaddexp(0.0, -margin)),
                     np.sum((w_hat - task.teacher) ** 2)])
    return np.array(rows)


def test_matches_an_independent_simulation(big_site):
    rng = np.random.default_rng(7)
    zs = []
    for alpha in (0.5, 1.0, 2.0, 4.0):
        bo = rm.bayes_optimal(big_site, alpha=alpha, theory="mixture")
        assert bo.converged and bo.residual <= 1e-10 and bo.channel == "mixture"
        sims = _simulate(big_site, alpha, seeds=16, n_test=3000, rng=rng)
        mean, se = sims.mean(axis=0), sims.std(axis=0, ddof=1) / np.sqrt(len(sims))
        for th, m, s in zip((bo.eg, bo.test_loss, bo.estimation_error), mean, se, strict=True):
            zs.append((m - th) / s)
    assert np.max(np.abs(zs)) < 3.0, np.round(zs, 2)


def _prior_typical(beta):
    """The pooled covariance S of an SK site (L = 13, exact) with a teacher typical of the prior
    N(0, tau/p I): theta_k^2 = tau / p on every eigenvector of S (random signs), the clusters at
    +-S theta / 2. The theory sees a teacher only through its theta_k^2, so this is the teacher
    the prior's average sees, where the posterior mean is the Bayes estimator."""
    site = rm.PottsModel.random_ising(L=13, beta=beta, seed=0).masked_site(0, rng=0)
    S = site.mixture.covariance
    _, tau = prior_spectrum(site)
    _, u = np.linalg.eigh(S)
    signs = np.where(np.random.default_rng(0).random(S.shape[0]) < 0.5, -1.0, 1.0)
    theta = u @ (signs * np.sqrt(tau / S.shape[0]))
    mix = GaussianMixture.from_moments(weights=[0.5, 0.5], means=np.stack([S @ theta / 2, -S @ theta / 2]),
                                       covariance=S, teacher=theta)
    return SimpleNamespace(mixture=mix), tau


@pytest.mark.parametrize("beta", [0.3, 0.8, 1.2])
def test_below_erm_for_a_teacher_typical_of_the_prior(beta):
    task, tau = _prior_typical(beta)
    theory = MixtureTheory(task.mixture)
    for alpha in (0.25, 0.5, 1.0, 2.0, 4.0, 8.0):
        bo = bayes_mixture.mixture_point(theory, alpha, tau)
        assert bo["residual"] <= bayes_mixture.TOL
        assert abs(bo["estimation_error"] - bo["prior_mmse"]) < 1e-12  # the Nishimori identity
        for lam in (0.01, 0.1, 1.0, 1.0 / tau, 10.0):
            sp = rm.solve(task, alpha=alpha, lam=lam, loss="logistic", theory="mixture")
            assert bo["eg"] <= sp.eg and bo["test_loss"] <= sp.test_loss, (alpha, lam)
            assert bo["estimation_error"] <= sp.estimation_error, (alpha, lam)


def test_limits(small_site):
    mix = small_site.mixture
    mu = (mix.means[0] - mix.means[1]) / 2
    theta = 2 * np.linalg.solve(mix.covariance, mu)
    bayes = ndtr(-np.sqrt(theta @ mix.covariance @ theta) / 2)
    far = rm.bayes_optimal(small_site, alpha=1e7, theory="mixture")
    assert abs(far.eg - bayes) < 1e-5
    near = rm.bayes_optimal(small_site, alpha=1e-8, theory="mixture")
    assert abs(near.eg - 0.5) < 1e-3 and abs(near.test_loss - np.log(2)) < 1e-6
    curve = rm.bayes_optimal_curve(small_site, alpha=np.geomspace(1e-3, 1e4, 30), theory="mixture")
    assert np.all(np.diff(curve.eg) < 0) and np.all(np.diff(curve.test_loss) < 0)


def test_weak_coupling_close_to_gaussian():
    """The mixture's Bayes-optimal error and test loss approach theory="gaussian"'s as the coupling
    weakens (the clusters merge): the largest gap over alpha shrinks at every step of beta."""
    gaps = []
    for beta in (0.5, 0.3, 0.2, 0.1, 0.05):
        task = rm.PottsModel.random_ising(L=13, beta=beta, seed=0).masked_site(0, rng=0)
        gap = [0.0, 0.0]
        for alpha in (0.5, 2.0, 8.0):
            mix = rm.bayes_optimal(task, alpha=alpha, theory="mixture")
            gau = rm.bayes_optimal(task, alpha=alpha)
            gap = [max(gap[0], abs(mix.eg - gau.eg)), max(gap[1], abs(mix.test_loss - gau.test_loss))]
        gaps.append(gap)
    gaps = np.array(gaps)
    assert np.all(np.diff(gaps, axis=0) < 0), gaps


def test_refuses_what_it_cannot_do(small_site):
    with pytest.raises(ValueError, match="channel"):
        rm.bayes_optimal(small_site, alpha=1.0, theory="mixture", channel="logit")
    with pytest.raises(ValueError, match="theory"):
        rm.bayes_optimal(small_site, alpha=1.0, theory="mixtures")
    potts = rm.PottsModel.random(L=6, q=3, beta=1.0, seed=0).masked_site(0, rng=0)
    with pytest.raises(ValueError, match="K = 3"):
        rm.bayes_optimal(potts, alpha=1.0, theory="mixture")
    with pytest.raises(ValueError, match=r"task\.mixture"):
        rm.bayes_optimal(rm.GaussianPotts.random(L=20, shift=3.0, seed=0).masked_site(0), alpha=1.0,
                         theory="mixture")


def _report() -> None:  # pragma: no cover - the numbers of docs/bayes_optimal.md
    site = rm.PottsModel.random_ising(L=201, beta=0.6, seed=3).masked_site(0, rng=0, samples=2000)
    rng = np.random.default_rng(7)
    print("simulation, p = 200, 16 seeds x 3000 test draws: theory, simulation +- SE, z")
    for alpha in (0.5, 1.0, 2.0, 4.0):
        bo = rm.bayes_optimal(site, alpha=alpha, theory="mixture")
        sims = _simulate(site, alpha, seeds=16, n_test=3000, rng=rng)
        mean, se = sims.mean(axis=0), sims.std(axis=0, ddof=1) / np.sqrt(len(sims))
        print(f"alpha {alpha}: " + " | ".join(
            f"{name} {t:.4f} {m:.4f} +- {s:.4f} z {(m - t) / s:+.2f}" for name, t, m, s in
            zip(("eg", "test_loss", "est"), (bo.eg, bo.test_loss, bo.estimation_error), mean, se,
                strict=True)))
    grid, lams = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), (0.01, 0.1, 1.0)
    for beta in (0.3, 0.5, 0.8, 1.2):
        typical, tau = _prior_typical(beta)
        theory = MixtureTheory(typical.mixture)
        site = rm.PottsModel.random_ising(L=13, beta=beta, seed=0).masked_site(0, rng=0)
        for name, task in (("prior-typical teacher", typical), ("the site's own teacher", site)):
            gaps = []
            for alpha in grid:
                bo = (bayes_mixture.mixture_point(theory, alpha, tau) if task is typical else
                      rm.bayes_optimal(site, alpha=alpha, theory="mixture").as_dict())
                for lam in (*lams, 1.0 / tau, 10.0):
                    sp = rm.solve(task, alpha=alpha, lam=lam, loss="logistic", theory="mixture")
                    gaps.append((sp.eg - bo["eg"], sp.test_loss - bo["test_loss"], alpha, lam))
            worst_eg, worst_tl = min(gaps), min(gaps, key=lambda g: g[1])
            print(f"beta {beta}, {name}: smallest ERM - BO eg {worst_eg[0]:+.2e} (alpha {worst_eg[2]}, "
                  f"lam {worst_eg[3]:.3g}), test loss {worst_tl[1]:+.2e} (alpha {worst_tl[2]}, "
                  f"lam {worst_tl[3]:.3g})")
        far = rm.bayes_optimal(site, alpha=1e7, theory="mixture")
        mix = site.mixture
        theta = np.linalg.solve(mix.covariance, mix.means[0] - mix.means[1])
        print(f"  alpha = 1e7: eg {far.eg:.7f}, Phi(-sqrt(theta S theta)/2) "
              f"{ndtr(-np.sqrt(theta @ mix.covariance @ theta) / 2):.7f}")
        for alpha in (0.5, 2.0, 8.0):
            m = rm.bayes_optimal(site, alpha=alpha, theory="mixture")
            g = rm.bayes_optimal(site, alpha=alpha)
            print(f"  alpha {alpha}: mixture eg {m.eg:.4f} test_loss {m.test_loss:.4f} "
                  f"est {m.estimation_error:.4f} | gaussian eg {g.eg:.4f} test_loss {g.test_loss:.4f} "
                  f"est {g.estimation_error:.4f}")
    for L in (41, 81):  # weak coupling at larger L (mixtures from 20000 sampled sequences)
        site = rm.PottsModel.random_ising(L=L, beta=0.3, seed=0).masked_site(0, rng=0, samples=20000)
        for alpha in (0.5, 2.0, 8.0):
            m = rm.bayes_optimal(site, alpha=alpha, theory="mixture")
            g = rm.bayes_optimal(site, alpha=alpha)
            print(f"beta 0.3, L {L}, alpha {alpha}: mixture - gaussian eg {m.eg - g.eg:+.4f}, "
                  f"test_loss {m.test_loss - g.test_loss:+.4f}")


if __name__ == "__main__":  # pragma: no cover
    _report()
