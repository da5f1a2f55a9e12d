"""ERM simulations for any loss and channel: certified solvers, exact test quantities, theory vs ERM."""

import math

import numpy as np
import pytest
from scipy import special

import replica_mlm as rm
from replica_mlm.learners import erm
from replica_mlm.learners.ridge_path import ridge_path
from replica_mlm.theory.sides import losses


@pytest.fixture(scope="module")
def site200():
    return rm.GaussianPotts.random(L=201, shift=3.0, seed=3).masked_site(0)


def theory(site, alpha, lam, loss, channel):
    """The replica prediction of the general engine at one point (a dict of its quantities)."""
    sp = rm.solve(site, alpha=alpha, lam=lam, loss=loss, channel=channel)
    assert sp.converged and sp.residual <= 1e-10
    return {k: getattr(sp, k) for k in ("eg", "test_loss", "train_loss", "estimation_error")}


# --- solvers ---------------------------------------------------------------------------------


def _data(n=150, p=60, seed=0, channel="sign"):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    w_star = rng.standard_normal(p) / math.sqrt(p)
    nu = x @ w_star
    y = rm.channels.resolve(channel).sample(nu, 0.25, rng)
    return x, y


def test_logistic_matches_sklearn_objective_and_is_certified():
    # the C = 1 / (lam p) convention: the gradient of sum loss + lam p |w|^2 / 2 vanishes at sklearn's w
    x, y = _data()
    lam = np.array([1e-3, 0.3])
    w, bound = erm.fit(x, y, lam, losses.resolve("logistic"))
    for j, lj in enumerate(lam):
        lp = lj * x.shape[1]
        g = erm.gradient(x, y, w[:, j], lp, losses.resolve("logistic"))
        assert np.linalg.norm(g) / lp == pytest.approx(bound[j])
        assert bound[j] < 1e-8 * np.linalg.norm(w[:, j])
        # a wrong convention (C = 1 / lam) leaves a large gradient of our objective
        g_wrong = erm.gradient(x, y, w[:, j], lj, losses.resolve("logistic"))
        assert np.linalg.norm(g_wrong) > 1e3 * np.linalg.norm(g)


def test_huber_newton_is_exact_and_reduces_to_ridge():
    x, y = _data(channel="gaussian")
    lam = np.array([0.01, 1.0])
    _w, bound = erm.fit(x, y, lam, losses.Huber(0.7))
    assert np.all(bound < 1e-11)
    # with delta larger than every residual the Huber estimator is ridge
    w_big, _ = erm.fit(x, y, lam, losses.Huber(1e6))
    ridge = ridge_path(x, y, lam)
    assert np.max(np.abs(w_big - ridge)) < 1e-10


@pytest.mark.parametrize("name", ["hinge", "absolute"])
def test_dual_solvers_certified_and_optimal(name):
    x, y = _data(channel="sign" if name == "hinge" else "gaussian")
    lam = np.array([0.01, 0.3])
    w, bound = erm.fit(x, y, lam, losses.resolve(name))
    rng = np.random.default_rng(5)
    for j, lj in enumerate(lam):
        lp = lj * x.shape[1]
        assert bound[j] < 3e-5 * np.linalg.norm(w[:, j])
        f0 = erm.primal(x, y, w[:, j], lp, losses.resolve(name))
        # no random perturbation lowers the objective by more than the certificate allows
        for _ in range(20):
            d = rng.standard_normal(x.shape[1]) * 1e-3
            assert erm.primal(x, y, w[:, j] + d, lp, losses.resolve(name)) >= \
                f0 - lp * bound[j] * np.linalg.norm(d) * 10


# --- exact test quantities -------------------------------------------------------------------


def _loss(name, delta):
    return losses.Huber(delta) if name == "huber" else losses.resolve(name)


@pytest.mark.parametrize("name,channel", [("logistic", "sign"), ("hinge", "logit"), ("logistic", "logit"),
                                          ("huber", "gaussian"), ("absolute", "sign")])
def test_test_quantities_against_monte_carlo(name, channel):
    # (nu, lambda) bivariate Gaussian: 2e6 fresh samples give eg and test loss with error bars
    rho, noise, m, q = 0.3, 0.4, 0.2, 0.5
    eg, tl = erm.test_quantities(m, q, rho, noise, _loss(name, 0.8), channel)
    rng = np.random.default_rng(11)
    k = 2_000_000
    lam_ = math.sqrt(q) * rng.standard_normal(k)
    nu = (m / q) * lam_ + math.sqrt(rho - m * m / q) * rng.standard_normal(k)
    y = rm.channels.resolve(channel).sample(nu, noise, rng)
    losses = erm.pointwise(_loss(name, 0.8), y, lam_)
    wrong = (y != np.sign(lam_)) if channel != "gaussian" else (y - lam_) ** 2
    for ours, sample in ((eg, wrong), (tl, losses)):
        z = (ours - sample.mean()) / (sample.std() / math.sqrt(k))
        assert abs(z) < 4, (ours, sample.mean(), z)


def test_test_quantities_converged_in_nodes_and_closed_forms():
    rho, noise, m, q = 0.05, 0.33, 0.03, 0.8
    # the theory's quadrature (energetic.test_loss): doubling the order changes nothing at 1e-12
    from replica_mlm.theory.sides import channels, energetic
    a = energetic.test_loss(losses.resolve("logistic"), channels.resolve("logit"), q=q, m=m, rho=rho,
                            noise=noise, order=16)
    b = energetic.test_loss(losses.resolve("logistic"), channels.resolve("logit"), q=q, m=m, rho=rho,
                            noise=noise, order=32)
    assert abs(a - b) < 1e-12
    # sign channel eg is the arccos closed form; gaussian channel eg the quadratic form
    eg, _ = erm.test_quantities(m, q, rho, noise, losses.resolve("square"), "sign")
    assert eg == pytest.approx(math.acos(m / math.sqrt(q * (rho + noise))) / math.pi, abs=1e-15)
    eg, tl = erm.test_quantities(m, q, rho, noise, losses.resolve("square"), "gaussian")
    assert eg == pytest.approx(rho + noise - 2 * m + q) and tl == pytest.approx(eg / 2)
    # logit eg without signal-student correlation is 1/2; a perfect student errs E[sigmoid(-|nu|)]
    assert erm.test_quantities(0.0, q, rho, 0.0, losses.resolve("logistic"), "logit")[0] == \
        pytest.approx(0.5, abs=1e-12)
    z, wt = np.polynomial.hermite_e.hermegauss(200)
    perfect = float(wt @ special.expit(-np.abs(math.sqrt(rho) * z))) / math.sqrt(2 * math.pi)
    assert erm.test_quantities(rho * 0.999999999, rho, rho, 0.0, losses.resolve("logistic"), "logit")[0] == \
        pytest.approx(perfect, abs=1e-4)


# --- the simulate front end ------------------------------------------------------------------


def test_square_gaussian_path_unchanged(site200):
    # the old route: samples in the original basis (MaskedSite.sample), one SVD for every lam, eg
    # from MaskedSite.generalisation_error; simulate now draws the same normals in the eigenbasis
    # of Sigma and solves by the Gram route: equal to rounding
    sim = rm.simulate(site200, alpha=1.5, lam=[0.0, 0.1], seeds=3, rng=4)
    x_eg = []
    for gen in np.random.default_rng(4).spawn(3):
        x, y = site200.sample(round(1.5 * site200.p), rng=gen)
        w = ridge_path(x, y, sim.lam, method="svd")
        x_eg.append(site200.generalisation_error(w))
    assert np.allclose(sim.eg, np.array(x_eg), rtol=1e-12, atol=0)
    assert not np.allclose(sim.eg[0], sim.eg[1], rtol=1e-3)  # the seeds are distinct samples
    assert sim.loss == "square" and sim.channel == "gaussian"
    assert np.allclose(sim.test_loss, sim.eg / 2)
    assert np.all(sim.kkt_residual == 0)


def test_bad_input(site200):
    with pytest.raises(ValueError, match="lam must be > 0"):
        rm.simulate(site200, alpha=1.0, lam=[0.0, 0.1], seeds=2, loss="logistic", channel="sign")
    with pytest.raises(ValueError, match="labels in"):
        rm.simulate(site200, alpha=1.0, lam=0.1, seeds=2, loss="hinge")
    with pytest.raises(ValueError, match="channel must be"):
        rm.simulate(site200, alpha=1.0, lam=0.1, seeds=2, channel="poisson")
    with pytest.raises(ValueError, match="losses"):
        rm.simulate(site200, alpha=1.0, lam=0.1, seeds=2, loss="cauchy")


def test_huber_object_and_custom_loss(site200):
    import sympy as sp

    sim = rm.simulate(site200, alpha=1.0, lam=0.1, seeds=2, rng=0, loss=rm.losses.Huber(delta=0.8))
    assert sim.loss == "huber(delta=0.8)" == rm.losses.Huber(delta=0.8).name
    ref = rm.simulate(site200, alpha=1.0, lam=0.1, seeds=2, rng=0, loss="huber")
    assert not np.allclose(sim.eg, ref.eg)  # delta 0.8 is not the default delta 1
    y, z = sp.symbols("y z")
    quartic = rm.losses.Loss.from_sympy((y - z) ** 4, y, z)
    quartic = rm.simulate(site200, alpha=1.0, lam=0.1, seeds=2, loss=quartic)
    assert quartic.loss == "custom" and np.all(quartic.kkt_residual < 1e-8)


# --- theory against ERM ----------------------------------------------------------------------

# (loss, channel, alpha, lam): both sides of alpha_c (2.1 for sign, 2.0 for logit on this site)
CASES = [
    ("logistic", "sign", 1.0, 0.01),
    ("logistic", "sign", 3.5, 0.01),
    ("logistic", "logit", 1.2, 0.1),
    ("hinge", "sign", 3.0, 0.05),
    ("square", "sign", 1.5, 0.01),
    ("huber", "gaussian", 0.7, 0.01),
    ("absolute", "gaussian", 2.0, 0.1),
]


def _zscores(site, loss, channel, alpha, lams, seeds, rng):
    sim = rm.simulate(site, alpha=alpha, lam=lams, seeds=seeds, rng=rng, loss=loss, channel=channel)
    out = []
    for j, lam in enumerate(sim.lam):
        th = theory(site, sim.alpha, lam, loss, channel)
        # the standard error is floored at 1e-12: where theory and simulation are both zero up to
        # round-off (the hinge training loss of an interpolating SVM, alpha < alpha_c) z is 0, not 1e-15/1e-16
        zs = {k: (getattr(sim, f"{k}_mean")[j] - th[k]) / max(getattr(sim, f"{k}_stderr")[j], 1e-12)
              for k in th}
        # the optimiser's certified error is far below the sampling error
        assert np.max(sim.kkt_residual[:, j]) < 1e-3 * np.sqrt(sim.estimation_error_stderr[j])
        out.append(zs)
    return out


@pytest.mark.parametrize("loss,channel,alpha,lam", CASES)
def test_theory_against_erm(site200, loss, channel, alpha, lam):
    for zs in _zscores(site200, loss, channel, alpha, [lam], seeds=10, rng=2024):
        assert all(abs(z) < 4 for z in zs.values()), zs


@pytest.mark.slow
@pytest.mark.parametrize("loss,channel", [("logistic", "sign"), ("logistic", "logit"), ("hinge", "sign"),
                                          ("square", "sign"), ("huber", "gaussian"), ("absolute", "sign")])
def test_theory_against_erm_sweep(site300, loss, channel):
    for k, alpha in enumerate((0.6, 1.2, 3.0, 5.0)):
        for zs in _zscores(site300, loss, channel, alpha, [1e-3, 0.1], seeds=20, rng=k):
            assert all(abs(z) < 4 for z in zs.values()), (alpha, zs)


# --- CLI -------------------------------------------------------------------------------------


def test_cli_loss_channel_options(tmp_path):
    import json

    from click.testing import CliRunner

    from replica_mlm.cli import main

    res = CliRunner().invoke(main, ["curve", "--L", "41", "--alpha-min", "0.5", "--alpha-max", "3",
                                    "--points", "3", "--lam", "0.1", "--loss", "logistic",
                                    "--channel", "sign",
                                    "--out", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    meta = json.loads((tmp_path / "c" / "curve.json").read_text())
    assert meta["parameters"]["loss"] == "logistic" and meta["parameters"]["channel"] == "sign"
    site = rm.GaussianPotts.random(L=41, shift=3.0, seed=0).masked_site(0)
    first = (tmp_path / "c" / "curve.csv").read_text().splitlines()[1].split(",")
    assert float(first[2]) == pytest.approx(
        rm.solve(site, alpha=0.5, lam=0.1, loss="logistic", channel="sign").eg, rel=1e-12)
    bad = CliRunner().invoke(main, ["curve", "--loss", "hinge", "--out", str(tmp_path / "d")])
    assert bad.exit_code != 0 and "binary labels" in bad.output
    bad = CliRunner().invoke(main, ["simulate", "--loss", "logistic", "--channel", "sign", "--lam", "0",
                                    "--out", str(tmp_path / "e")])
    assert bad.exit_code != 0 and "lam = 0" in bad.output


def test_validation_sign_test_errors_follow_the_site_law():
    # the chunked eigenbasis draw of the erm section's check 6 against the arccos closed form and
    # against the plain MaskedSite.sample draw, both within 4 standard errors; 130 000 samples span
    # two full chunks and a partial one
    from replica_mlm.validation import erm_section as section
    gen = np.random.default_rng(11)
    a = gen.standard_normal((20, 20))
    site = rm.MaskedSite(covariance=a @ a.T / 20 + 0.5 * np.eye(20), teacher=gen.standard_normal(20) / 3,
                         noise=0.5)
    w = site.teacher + 0.3 * gen.standard_normal(site.p)
    m, q = site.teacher @ site.covariance @ w, w @ site.covariance @ w
    closed = math.acos(m / math.sqrt(q * site.c_ii)) / math.pi
    n = 130_000
    rate = section._test_errors(site, w, n, gen) / n
    x, noisy = site.sample(n, rng=gen)
    plain = float(np.mean(np.sign(x @ w) != np.where(noisy >= 0, 1.0, -1.0)))
    se = math.sqrt(closed * (1 - closed) / n)
    assert 0.05 < closed < 0.45
    assert abs(rate - closed) < 4 * se and abs(plain - closed) < 4 * se, (rate, plain, closed, se)
    # a wrong direction gives a different error rate: the comparison can fail
    assert abs(section._test_errors(site, site.teacher, n, gen) / n - closed) > 10 * se


def test_validation_section_gives_the_same_numbers_with_two_workers(tmp_path, monkeypatch):
    import json
    from dataclasses import replace

    from replica_mlm.validation import erm_section as section
    toy = replace(section.settings(True), L=61, seeds=4, alphas=(0.5, 2.0), logistic_alphas=(3.5,),
                  line_points=4, test_samples=60_000, lp_instances=2, peak_lams=(1e-2,))
    monkeypatch.setattr(section, "settings", lambda quick: toy)
    monkeypatch.setattr(section, "_figure", lambda *args: [])
    stored = []
    for workers in (1, 2):
        section.run(tmp_path / f"w{workers}", quick=False, rng=4, workers=workers)
        data = json.loads((tmp_path / f"w{workers}" / "erm.json").read_text())
        data["data"].pop("elapsed_seconds")
        stored.append(data)
    assert stored[0] == stored[1]
    names = [c["name"] for c in stored[0]["checks"]]
    assert names == ["erm.1.square_gaussian_z", "erm.2.square_sign_z", "erm.3.logistic_sign_z",
                     "erm.4.square_peak_at_1", "erm.5.logistic_peak_at_alpha_c", "erm.6.sign_eg_arccos",
                     "erm.7.separability"]
    assert {"separable_below", "separable_above"} <= set(stored[0]["checks"][-1]["value"])
    assert len(stored[0]["data"]["rows"]) == 2 * (2 + 2 + 1)
