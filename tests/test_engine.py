"""The general replica engine against the fast path, closed forms, quadrature refinement and
simulations; its solver's residual; its integration in solve / learning_curve / phase_diagram."""

import math

import numpy as np
import pytest
import sympy as sp
from scipy import integrate

import replica_mlm as rm
from replica_mlm.theory.sides import channels, energetic, losses
from replica_mlm.theory.solvers import engine
from replica_mlm.theory.symbolic.compiled import compiled, compiled_estimation

HAT_KEYS = ("m_hat", "q_hat", "V_hat")
KEYS = ("eg", "m", "q", "V", *HAT_KEYS, "train_loss", "test_loss", "estimation_error")


@pytest.fixture(scope="module")
def site():
    return rm.GaussianPotts.random(120, shift=3.0, seed=5).masked_site(3)


@pytest.fixture(scope="module")
def lim():
    return rm.GaussianPotts.limit(shift=3.0)


@pytest.mark.parametrize("which", ["site", "lim"])
@pytest.mark.parametrize(("alpha", "lam"), [(0.4, 0.3), (1.0, 1e-3), (2.5, 0.02), (6.0, 1.0)])
def test_square_loss_through_the_general_engine_equals_the_fast_path(which, alpha, lam, request):
    task = request.getfixturevalue(which)
    fast = rm.solve(task, alpha=alpha, lam=lam)
    gen = rm.solve(task, alpha=alpha, lam=lam, method="general")
    assert fast.method == "root" and gen.method == "general"
    assert gen.residual <= 1e-10 and gen.converged
    for k in KEYS:
        assert getattr(gen, k) == pytest.approx(getattr(fast, k), rel=1e-10, abs=0), k
    # explicit names choose the fast path too
    same = rm.solve(task, alpha=alpha, lam=lam, loss="square", channel="gaussian")
    assert same.method == "root" and same.eg == fast.eg


def test_square_gaussian_hats_are_the_closed_form_hat_equations(site):
    """At arbitrary (V, q, m), not only at a solution: the channel-side integrals of the square
    loss with the gaussian channel equal the sympy-derived hat equations of the fast path."""
    spec = site.spectrum
    fns = compiled()
    sq, gauss = losses.Square(), channels.resolve("gaussian")
    for V, q, m in [(0.3, 0.2, 0.05), (4.0, 1.7, -0.1), (50.0, 0.01, 0.001)]:
        m = float(np.clip(m, -0.99 * math.sqrt(q * spec.rho), 0.99 * math.sqrt(q * spec.rho)))
        h = energetic.hats(sq, gauss, alpha=1.3, V=V, q=q, m=m, rho=spec.rho, noise=spec.noise)
        args = (1.3, V, q, m, spec.rho, spec.noise)
        for k in HAT_KEYS:
            assert h[k] == pytest.approx(fns.hat[k](*args), rel=1e-13), k
        # the mean loss at the minimiser is half the train MSE eg / (1 + V)^2
        assert 2 * h["train_loss"] == pytest.approx(fns.train_loss(*args), rel=1e-13)


@pytest.mark.parametrize(("loss", "channel"), [("logistic", "sign"), ("hinge", "sign"),
                                               ("logistic", "logit"), ("absolute", "gaussian"),
                                               ("huber", "gaussian")])
def test_quadrature_is_converged_by_doubling(loss, channel, lim):
    sp_ = rm.solve(lim, alpha=1.7, lam=0.01, loss=loss, channel=channel)
    args = dict(alpha=1.7, V=sp_.V, q=sp_.q, m=sp_.m, rho=lim.rho, noise=lim.noise)
    lo = energetic.hats(losses.resolve(loss), channels.resolve(channel), order=16, **args)
    hi = energetic.hats(losses.resolve(loss), channels.resolve(channel), order=32, **args)
    for k in (*HAT_KEYS, "train_loss"):
        assert lo[k] == pytest.approx(hi[k], rel=1e-12), k
    # halving the finest panel (the grading) changes nothing either
    fine = energetic.FINE
    try:
        energetic.FINE = fine / 4
        finer = energetic.hats(losses.resolve(loss), channels.resolve(channel), order=16, **args)
    finally:
        energetic.FINE = fine
    for k in HAT_KEYS:
        assert lo[k] == pytest.approx(finer[k], rel=1e-12), k


def test_closed_form_partition_functions_are_the_defining_integrals():
    """Z(y; mu, v) = int N(nu; mu, v) P_out(y | nu) d nu, by adaptive quadrature, for the
    closed forms of the gaussian and sign channels; logit's Gauss-Hermite Z likewise."""
    s2, mu, v = 0.3, 0.4, 0.2
    for ch in (channels.resolve("gaussian"), channels.resolve("sign"), channels.resolve("logit")):
        p_out = sp.lambdify((channels.y, channels.nu, channels.noise), ch.p_out,
                            modules=[losses.NUMERIC, "numpy"])
        for yv in (1.0, -1.0, 0.7):
            if ch.labels == "binary" and yv not in (1.0, -1.0):
                continue
            def integrand(x, yv=yv, p_out=p_out):
                return math.exp(-(x - mu) ** 2 / (2 * v)) / math.sqrt(2 * math.pi * v) * p_out(yv, x, s2)
            ref = integrate.quad(integrand, -30, 30, epsabs=1e-14, epsrel=1e-13)[0]
            if ch.labels == "real":
                z = float(sp.lambdify((channels.y, channels.mu, channels.v, channels.noise),
                                      ch.z_closed)(yv, mu, v, s2))
            else:
                z = float(ch.partition(yv, np.array([mu]), v, s2)[0][0])
            assert z == pytest.approx(ref, rel=1e-11), (ch.name, yv)


def test_sign_channel_error_is_the_arccos_closed_form(lim):
    sp_ = rm.solve(lim, alpha=2.0, lam=0.05, loss="logistic", channel="sign")
    closed = math.acos(sp_.m / math.sqrt(sp_.q * (lim.rho + lim.noise))) / math.pi
    assert sp_.eg == pytest.approx(closed, rel=1e-14)
    # the same channel without its closed form: P(y != sign(w.x)) by quadrature
    sign = channels.resolve("sign")
    bare = channels.Channel("sign-by-quadrature", sign.p_out, labels="binary", z_closed=sign.z_closed,
                            error=None)
    quad = energetic.error(bare, q=sp_.q, m=sp_.m, rho=lim.rho, noise=lim.noise)
    assert quad == pytest.approx(closed, rel=1e-12)


def test_estimation_error_identity(site):
    """Weighting each mode's term by omega_k gives rho - 2m + q (fast path and general engine)."""
    spec = site.spectrum
    general = compiled_estimation()[0]
    for sp_ in (rm.solve(site, alpha=1.6, lam=0.05),
                rm.solve(site, alpha=1.6, lam=0.05, loss="logistic", channel="sign")):
        terms = general(spec.omega, spec.bulk, spec.teacher, sp_.lam, sp_.V_hat, sp_.q_hat, sp_.m_hat)
        assert np.sum(terms) == pytest.approx(sp_.estimation_error, rel=1e-12)
        assert np.sum(spec.omega * terms) == pytest.approx(spec.rho - 2 * sp_.m + sp_.q, rel=1e-10)
    # and the fast path's reduced form at lam = 0 (alpha > 1 and alpha < 1) is finite
    for a in (0.5, 2.0):
        assert math.isfinite(rm.solve(site, alpha=a, lam=0.0).estimation_error)
    assert rm.solve(site, alpha=1.0, lam=0.0).estimation_error == math.inf


def test_estimation_error_against_ridge_simulation():
    """E |w_hat - w*|^2 of closed-form ridge over 40 seeds, p = 250: |z| < 4."""
    site = rm.GaussianPotts.random(251, shift=3.0, seed=11).masked_site(0)
    p = site.p
    for alpha, lam in ((0.6, 0.05), (2.0, 0.01)):
        n = round(alpha * p)
        rng = np.random.default_rng(123)
        errs = []
        for _ in range(40):
            x, y = site.sample(n, rng=rng)
            w = np.linalg.solve(x.T @ x + lam * p * np.eye(p), x.T @ y)
            errs.append(np.sum((w - site.teacher) ** 2))
        theory = rm.solve(site, alpha=n / p, lam=lam).estimation_error
        z = (np.mean(errs) - theory) / (np.std(errs, ddof=1) / math.sqrt(len(errs)))
        assert abs(z) < 4, (alpha, lam, z)


def test_limit_estimation_error_is_finite_and_normalised(lim):
    # |w*|^2 = sum_k c_k -> 1/s^2 in the limit; strong ridge: w_hat -> 0, so the error -> |w*|^2
    assert np.sum(lim.spectrum.teacher) == pytest.approx(1 / 9, rel=1e-14)
    far = rm.solve(lim, alpha=1.0, lam=1e8)
    assert far.estimation_error == pytest.approx(1 / 9, rel=1e-6)
    gen = rm.solve(lim, alpha=1.0, lam=1e8, loss="hinge", channel="sign")
    assert gen.estimation_error == pytest.approx(1 / 9, rel=1e-6)


def test_logistic_sign_curve_converges_everywhere_at_small_lam(lim):
    """lam = 1e-4 across the separability threshold: every point reaches residual <= 1e-10.

    With noise sigma^2 = 1/s the data are separable below some alpha_c > 2; there the norm of
    the minimiser grows like 1/lam, and q jumps by orders of magnitude across alpha_c."""
    alphas = np.concatenate([np.linspace(0.5, 6.0, 12), np.linspace(2.1, 3.0, 4)])
    alphas.sort()
    curve = rm.learning_curve(lim, alpha=alphas, lam=1e-4, loss="logistic", channel="sign")
    assert curve.loss == "logistic" and curve.channel == "sign" and curve.method == "general"
    assert np.all(curve.residual <= 1e-10)
    assert curve.q.max() / curve.q.min() > 100  # the norm blows up below alpha_c
    for col in ("eg", "test_loss", "train_loss", "estimation_error"):
        assert np.all(np.isfinite(getattr(curve, col)))


def test_failure_raises_convergence_error_with_last_iterate(lim, monkeypatch):
    # a negative tolerance is unreachable: every attempt fails and the last iterate is reported
    monkeypatch.setitem(engine.solve_point.__kwdefaults__, "tol", -1.0)
    monkeypatch.setitem(engine.solve_point.__kwdefaults__, "max_evaluations", 60)
    with pytest.raises(rm.ConvergenceError) as info:
        rm.solve(lim, alpha=2.0, lam=0.01, loss="logistic", channel="sign")
    last = info.value.last
    assert {"V", "q", "m"} <= set(last) and all(math.isfinite(last[k]) for k in ("V", "q", "m"))
    assert info.value.residual < 1e-8 and info.value.iterations > 0


def test_phase_diagram_with_hinge_on_the_limit(lim):
    alphas = np.array([0.8, 1.6, 3.2])
    pd = rm.phase_diagram(lim, alpha=alphas, lam=[0.01, 0.1], loss="hinge", channel="sign",
                          optimal=False)
    assert pd.eg.shape == (2, 3) and np.all(np.isfinite(pd.deg_dalpha))
    sp_ = rm.solve(lim, alpha=1.6, lam=0.1, loss="hinge", channel="sign")
    assert pd.eg[1, 1] == pytest.approx(sp_.eg, rel=1e-10)
    # the central difference agrees with one at a ten times larger step (error ~ step^2)
    h = 1e-3 * 1.6
    up = rm.solve(lim, alpha=1.6 + h, lam=0.1, loss="hinge", channel="sign").eg
    down = rm.solve(lim, alpha=1.6 - h, lam=0.1, loss="hinge", channel="sign").eg
    assert pd.deg_dalpha[1, 1] == pytest.approx((up - down) / (2 * h), rel=1e-4)


def test_optimal_lambda_general(lim):
    res = rm.optimal_lambda(lim, alpha=1.5, loss="logistic", channel="logit", bounds=(1e-3, 1e2))
    lam, sp_ = float(res.lam_opt), res.points[0]
    assert sp_.loss == "logistic" and sp_.channel == "logit"
    assert 1e-3 <= lam <= 1e2
    # the classification error only sees the direction of w_hat; at this low signal-to-noise
    # ratio it keeps falling towards strong ridge, so the optimum is at the upper bound
    scan = [rm.solve(lim, alpha=1.5, lam=x, loss="logistic", channel="logit").eg
            for x in np.geomspace(1e-3, 1e2, 6)]
    assert sp_.eg <= min(scan) + 1e-12
    if lam == pytest.approx(1e2):
        assert "upper bound" in sp_.message


def test_bad_combinations_are_refused(lim):
    with pytest.raises(ValueError, match="precision= is available for the square loss"):
        rm.solve(lim, alpha=1.0, lam=0.1, loss="logistic", channel="sign", precision=30)
    with pytest.raises(ValueError, match="lam must be > 0 for the general engine"):
        rm.solve(lim, alpha=1.0, lam=0.0, loss="hinge", channel="sign")
    with pytest.raises(ValueError, match="method 'root' solves the square loss"):
        rm.solve(lim, alpha=1.0, lam=0.1, loss="hinge", method="root")
    with pytest.raises(ValueError, match="unknown channel"):
        rm.solve(lim, alpha=1.0, lam=0.1, channel="probit")


def test_equations_of_the_general_engine():
    eqs = rm.equations(loss="logistic", channel="logit")
    for key in ("loss", "prox", "f", "d_w f", "P_out", "Z", "dZ", "m_hat", "q_hat", "V_hat", "V", "q",
                "m", "estimation_error"):
        assert key in eqs, key
    assert isinstance(eqs["Z"].rhs, sp.Integral)  # logit: Z by quadrature
    assert not rm.equations(loss="hinge", channel="sign")["Z"].rhs.has(sp.Integral)
    text = rm.equations(loss="logistic", channel="logit", latex=True)
    assert text.startswith("\\begin{aligned}") and "\\hat{m}" in text
    assert set(rm.equations()) == {"V_hat", "q_hat", "m_hat", "V", "q", "m", "eg", "train_loss"}


def test_cli_equations_of_the_general_engine():
    from click.testing import CliRunner

    from replica_mlm.cli import main

    res = CliRunner().invoke(main, ["equations", "--loss", "logistic", "--channel", "logit"])
    assert res.exit_code == 0, res.output
    assert "prox:" in res.output and "m_hat" in res.output and "Integral" in res.output
    res = CliRunner().invoke(main, ["equations", "--loss", "probit"])
    assert res.exit_code == 2
