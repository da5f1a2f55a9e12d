"""The covariance-shaped ridge ``(lam p / 2) w^T Sigma^beta w`` as a prior side (docs/theory.md, section 8).

Checked four ways: power 0 is the plain ridge bit for bit on every route; the transformed spectrum is
the plain ridge of the transformed site (a MaskedSite with covariance Gamma^-1/2 Sigma Gamma^-1/2 and
teacher Gamma^1/2 w*, decomposed on its own); the closed-form estimator
``(X^T X + lam p Gamma)^-1 X^T y`` at p = 1000; and scikit-learn (Ridge and LogisticRegression on the
features X Gamma^-1/2) at p = 200, with z-scores of eg and of the estimation error |w - w*|^2.
"""

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.linear_model import Ridge as SkRidge

import replica_mlm as rm
from replica_mlm.theory.sides import penalties, prior
from replica_mlm.theory.sides.penalties import Ridge, ShapedRidge

P = 200
NOISE = 0.3


def _rotated(p: int, seed: int):
    """A non-isotropic covariance ``Q diag(omega) Q^T`` (omega log-spaced over [0.2, 2.5], Q a random
    rotation), a teacher with ``rho`` about 1, and the site of it: ``(site, Q, omega, teacher)``."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((p, p)))
    omega = np.geomspace(0.2, 2.5, p)
    teacher = Q @ (rng.standard_normal(p) / math.sqrt(p))
    cov = (Q * omega) @ Q.T
    site = rm.MaskedSite(covariance=(cov + cov.T) / 2, teacher=teacher, noise=NOISE)
    return site, Q, omega, teacher


@pytest.fixture(scope="module")
def rotated():
    return _rotated(P, seed=11)


# --- power 0 is the ridge, bit for bit ------------------------------------------------------


FIELDS = ("eg", "train_loss", "test_loss", "m", "q", "V", "m_hat", "q_hat", "V_hat", "kappa",
          "estimation_error", "residual", "iterations")


@pytest.mark.parametrize("kw", [dict(), dict(method="iterate"), dict(method="general"),
                                dict(loss="logistic", channel="sign")])
def test_power_zero_is_the_ridge_bit_for_bit(rotated, kw):
    site = rotated[0]
    for alpha, lam in ((0.6, 0.05), (2.0, 0.01)):
        ref = rm.solve(site, alpha=alpha, lam=lam, **kw)
        for pen in (Ridge(), ShapedRidge(power=0.0), ShapedRidge(g=np.ones_like)):
            got = rm.solve(site, alpha=alpha, lam=lam, penalty=pen, **kw)
            assert all(np.array_equal(getattr(got, k), getattr(ref, k), equal_nan=True) for k in FIELDS), \
                (pen, kw)
    curve = rm.learning_curve(site, alpha=[0.6, 2.0], lam=0.05, **kw)
    shaped = rm.learning_curve(site, alpha=[0.6, 2.0], lam=0.05, penalty=ShapedRidge(power=0), **kw)
    for k in FIELDS:
        assert np.array_equal(getattr(curve, k), getattr(shaped, k), equal_nan=True)


def test_ridge_side_is_the_prior_module(rotated):
    spec = rotated[0].spectrum
    assert Ridge().transform(spec) is spec and ShapedRidge(power=0).transform(spec) is spec
    args = (0.05, 1.3, 0.4, 1.1)
    assert Ridge().estimation_error(spec, *args) == prior.estimation_error(spec, *args)


# --- the transformed spectrum is the plain ridge of the transformed site ---------------------


@pytest.mark.parametrize("beta", [1.0, -0.5])
def test_transform_is_the_ridge_of_the_transformed_site(rotated, beta):
    site, Q, omega, teacher = rotated
    g = omega**beta
    gm_half, g_half = (Q * g**-0.5) @ Q.T, (Q * g**0.5) @ Q.T
    cov = gm_half @ site.covariance @ gm_half
    moved = rm.MaskedSite(covariance=(cov + cov.T) / 2, teacher=g_half @ teacher, noise=NOISE)
    for kw in (dict(), dict(loss="logistic", channel="sign")):
        shaped = rm.solve(site, alpha=1.5, lam=0.02, penalty=ShapedRidge(power=beta), **kw)
        plain = rm.solve(moved, alpha=1.5, lam=0.02, **kw)
        for k in ("eg", "test_loss", "train_loss", "m", "q", "V", "V_hat", "q_hat", "m_hat"):
            assert getattr(shaped, k) == pytest.approx(getattr(plain, k), rel=1e-9), (k, kw)
        # the estimation error is in the original metric: |w - w*|^2 = |G^-1/2 (w' - w*')|^2
        assert shaped.estimation_error != pytest.approx(plain.estimation_error, rel=1e-2)


def test_estimation_error_is_the_weighted_per_mode_sum(rotated):
    """``sum_k [c_k (m_hat w_k / (lam + V_hat w_k) - 1)^2 + (b_k / g_k) q_hat w_k / (lam + V_hat w_k)^2]``,
    ``w_k = omega_k / g_k``, written out here; the reduced form (root) and the hats (general engine,
    iterate) agree."""
    spec = rotated[0].spectrum
    pen = ShapedRidge(power=1.0)
    lam = 0.05
    pts = [rm.solve(spec, alpha=1.2, lam=lam, penalty=pen, method=m) for m in ("root", "general", "iterate")]
    sp = pts[1]
    g = spec.omega**1.0
    w = spec.omega / g
    d = lam + sp.V_hat * w
    direct = np.sum(spec.teacher * (sp.m_hat * w / d - 1) ** 2 + spec.bulk / g * sp.q_hat * w / d**2)
    for pt in pts:
        assert pt.estimation_error == pytest.approx(direct, rel=1e-9)
    # lam -> infinity: w_hat -> 0, the error is |w*|^2 whatever the metric
    far = rm.solve(spec, alpha=1.2, lam=1e12, penalty=pen)
    assert far.estimation_error == pytest.approx(np.sum(spec.teacher), rel=1e-9)


def test_thermodynamic_limit_spectrum_converges(rotated):
    """The transformed quadrature of the L -> infinity limit: omega^(1 - beta) keeps the integrands
    analytic near the support, so the default rule (17 digits) and a finer one (40 digits) agree;
    lam = 0 (the minimum Gamma-norm interpolator) on the reduced form included."""
    coarse, fine = rm.GaussianPotts.limit(shift=3.0), rm.GaussianPottsLimit(shift=3.0, digits=40)
    assert fine.spectrum.omega.size > coarse.spectrum.omega.size
    for beta in (1.0, -0.5, 2.0):
        for alpha, lam in ((0.5, 0.0), (2.0, 0.0), (1.3, 0.01)):
            pen = ShapedRidge(power=beta)
            a, b = (rm.solve(t, alpha=alpha, lam=lam, penalty=pen) for t in (coarse, fine))
            for k in ("eg", "m", "q", "estimation_error"):
                assert getattr(a, k) == pytest.approx(getattr(b, k), rel=1e-12, abs=1e-15), (beta, alpha, k)
        ca = rm.learning_curve(coarse, alpha=[0.5, 2.0], lam=0.01, penalty=ShapedRidge(power=beta))
        pt = rm.solve(coarse, alpha=2.0, lam=0.01, penalty=ShapedRidge(power=beta))
        assert ca.estimation_error[1] == pt.estimation_error and ca.eg[1] == pt.eg


# --- input checks and routes that refuse a penalty -------------------------------------------


def test_inputs_are_checked(rotated):
    spec = rotated[0].spectrum
    with pytest.raises(ValueError, match=r"exactly one of power= .* and g="):
        ShapedRidge()
    with pytest.raises(ValueError, match="exactly one"):
        ShapedRidge(power=1.0, g=np.sqrt)
    with pytest.raises(ValueError, match="power must be finite"):
        ShapedRidge(power=math.inf)
    with pytest.raises(TypeError, match="power must be a real number"):
        ShapedRidge(power="1")
    with pytest.raises(TypeError, match="g must be a callable"):
        ShapedRidge(g=2.0)
    with pytest.raises(ValueError, match=r"one value per eigenvalue: an array of shape \(200,\)"):
        ShapedRidge(g=lambda w: 2.0).transform(spec)
    with pytest.raises(ValueError, match="g must return finite values > 0"):
        ShapedRidge(g=lambda w: w - 1.0).transform(spec)
    with pytest.raises(ValueError, match="g must return finite values > 0"):
        ShapedRidge(g=lambda w: w * np.nan).transform(spec)
    with pytest.raises(ValueError, match=r"power=1000 gives Sigma\^power outside float64"):
        ShapedRidge(power=1000).transform(spec)
    with pytest.raises(ValueError, match="maps the spectrum out of range"):
        ShapedRidge(power=400).transform(spec)
    with pytest.raises(ValueError, match="maps the spectrum out of range"):
        ShapedRidge(g=lambda w: 1e-200 * np.ones_like(w)).transform(spec)
    with pytest.raises(TypeError, match=r"penalty must be None .* or a Penalty"):
        rm.solve(spec, alpha=1.0, lam=0.1, penalty="ridge")
    assert isinstance(penalties.resolve(None), Ridge)


def test_routes_without_a_penalty_refuse_it(rotated):
    site = rotated[0]
    shaped = ShapedRidge(power=1.0)
    with pytest.raises(ValueError, match="precision= takes the ridge only"):
        rm.solve(site, alpha=1.0, lam=0.1, precision=20, penalty=shaped)
    ising = rm.PottsModel.ising(couplings=np.array([[0.0, 0.3, 0.1], [0.3, 0.0, 0.2], [0.1, 0.2, 0.0]]))
    with pytest.raises(ValueError, match="theory='mixture' takes the ridge only"):
        rm.solve(ising.masked_site(0), alpha=1.0, lam=0.1, theory="mixture", penalty=shaped)
    with pytest.raises(ValueError, match="theory='mixture' takes the ridge only"):
        rm.learning_curve(ising.masked_site(0), alpha=[1.0], lam=0.1, theory="mixture", penalty=shaped)
    potts = rm.PottsModel.random(L=6, q=3, seed=0).masked_site(0)
    with pytest.raises(ValueError, match="a multi-class site takes the ridge only"):
        rm.solve(potts, alpha=1.0, lam=0.1, penalty=shaped)


# --- the closed-form estimator with the penalty itself, p = 1000 ----------------------------


def test_closed_form_estimator_at_large_p():
    """``w = (X^T X + lam p Gamma)^-1 X^T y`` with ``Gamma = diag(omega^beta)`` on a diagonal
    covariance (no change of variables), p = 800, alpha = 2, lam = 0.02, 8 seeds (100-107, the same
    data for both powers): eg and |w - w*|^2 within 3 SE of the theory for beta = 1 and -0.5 (SE
    about 0.8% and 1.5%; z between -0.4 and 0)."""
    p, alpha, lam, seeds = 800, 2.0, 0.02, 8
    rng = np.random.default_rng(5)
    omega = np.geomspace(0.2, 2.5, p)
    theta = rng.standard_normal(p) / math.sqrt(p)
    spec = rm.Spectrum(omega=omega, bulk=np.full(p, 1 / p), teacher=theta**2, noise=NOISE)
    n = int(alpha * p)
    runs = {beta: [] for beta in (1.0, -0.5)}
    for s in range(seeds):
        gen = np.random.default_rng(100 + s)
        x = gen.standard_normal((n, p)) * np.sqrt(omega)
        y = x @ theta + math.sqrt(NOISE) * gen.standard_normal(n)
        gram, xty = x.T @ x, x.T @ y
        for beta in runs:
            w = np.linalg.solve(gram + lam * p * np.diag(omega**beta), xty)
            d = w - theta
            runs[beta].append((NOISE + d @ (omega * d), d @ d))
    for beta, vals in runs.items():
        th = rm.solve(spec, alpha=alpha, lam=lam, penalty=ShapedRidge(power=beta))
        vals = np.array(vals)
        mean, se = vals.mean(axis=0), vals.std(axis=0, ddof=1) / math.sqrt(seeds)
        for j, k in enumerate(("eg", "estimation_error")):
            z = (mean[j] - getattr(th, k)) / se[j]
            assert abs(z) < 3, (beta, k, getattr(th, k), mean[j], se[j])


# --- scikit-learn on the transformed features, p = 200 --------------------------------------


def _sklearn_runs(rotated, loss: str, alphas, lam: float, betas, seeds: int) -> dict:
    """{(beta, alpha): array (seeds, 2) of (eg, |w - w*|^2)} from scikit-learn fits of w' on
    ``X Gamma^-1/2``, then ``w = Gamma^-1/2 w'``; the seeds' data shared by the alphas (the first
    ``alpha p`` rows) and the powers. eg from the overlaps (exact given w): ``rho + sigma^2 - 2m + q``
    (gaussian channel) or ``arccos(m / sqrt(q (rho + sigma^2))) / pi`` (sign channel)."""
    site, Q, omega, teacher = rotated
    cov = site.covariance
    rho = teacher @ cov @ teacher
    root_cov = Q * np.sqrt(omega)  # X = Z (Q diag(sqrt omega))^T ~ N(0, Sigma)
    gm_half = {b: (Q * omega ** (-b / 2)) @ Q.T for b in betas}
    out = {(b, a): [] for b in betas for a in alphas}
    n_max = round(max(alphas) * P)
    for s in range(seeds):
        gen = np.random.default_rng(1000 + s)
        x = gen.standard_normal((n_max, P)) @ root_cov.T
        y = x @ teacher + math.sqrt(NOISE) * gen.standard_normal(n_max)
        if loss == "logistic":
            y = np.sign(y)
        for b in betas:
            xp = x @ gm_half[b]
            for a in alphas:
                n = round(a * P)
                if loss == "square":
                    fit = SkRidge(alpha=lam * P, fit_intercept=False, solver="cholesky").fit(xp[:n], y[:n])
                    wp = fit.coef_
                else:
                    fit = LogisticRegression(C=1 / (lam * P), fit_intercept=False, tol=1e-10, max_iter=10_000)
                    wp = fit.fit(xp[:n], y[:n]).coef_[0]
                w = gm_half[b] @ wp
                m, q = teacher @ cov @ w, w @ cov @ w
                eg = (rho + NOISE - 2 * m + q if loss == "square"
                      else math.acos(m / math.sqrt(q * (rho + NOISE))) / math.pi)
                out[b, a].append((eg, float(np.sum((w - teacher) ** 2))))
    return {k: np.array(v) for k, v in out.items()}


SIM = {  # loss: (alphas, lam, seeds, theory keywords)
    "square": ((0.5, 1.5, 3.0), 0.05, 24, {}),
    "logistic": ((1.0, 3.0), 0.02, 16, dict(loss="logistic", channel="sign")),
}


@pytest.mark.parametrize("loss", list(SIM))
def test_sklearn_simulations_within_three_se(rotated, loss):
    """eg and |w - w*|^2 of scikit-learn's minimisers within 3 SE of the theory, for beta = 1 and -0.5.

    Square loss: ``Ridge(alpha=lam p, fit_intercept=False)``, alpha in {0.5, 1.5, 3}, lam = 0.05, 24
    seeds (SE of eg 0.5-1.5%, of the estimation error 1-3%). Logistic loss on sign labels:
    ``LogisticRegression(C=1/(lam p), fit_intercept=False, tol=1e-10)``, alpha in {1, 3}, lam = 0.02,
    16 seeds (SE of the error rate about 1%, of the estimation error 1-2%). p = 200, seeds
    1000-1023 (the same data for both powers and, its first alpha p rows, for every alpha). Measured
    |z| <= 1.9. The plain ridge's prediction of the estimation error is excluded at some alpha of
    each power (|z| from 8 to 24), so the test tells the penalties apart.
    """
    alphas, lam, seeds, kw = SIM[loss]
    runs = _sklearn_runs(rotated, loss, alphas, lam, (1.0, -0.5), seeds)
    site = rotated[0]
    plain_z = {}
    for (beta, alpha), vals in runs.items():
        th = rm.solve(site, alpha=alpha, lam=lam, penalty=ShapedRidge(power=beta), **kw)
        plain = rm.solve(site, alpha=alpha, lam=lam, **kw)
        mean, se = vals.mean(axis=0), vals.std(axis=0, ddof=1) / math.sqrt(seeds)
        for j, k in enumerate(("eg", "estimation_error")):
            z = (mean[j] - getattr(th, k)) / se[j]
            assert abs(z) < 3, (loss, beta, alpha, k, getattr(th, k), mean[j], se[j])
        plain_z[beta] = max(plain_z.get(beta, 0.0), abs(mean[1] - plain.estimation_error) / se[1])
    assert min(plain_z.values()) > 5, plain_z
