"""optimal_lambda and phase diagrams: closed forms, derivatives, figures, bad input."""

import numpy as np
import pytest

import replica_mlm as rm


def isotropic(tau2=0.7, noise=0.4, p=200, seed=0):
    rng = np.random.default_rng(seed)
    omega = rng.uniform(0.2, 3.0, p)
    return rm.Spectrum(omega=omega, bulk=np.full(p, 1 / p), teacher=np.full(p, tau2 / p), noise=noise)


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.5])
def test_optimal_lambda_is_bayes_for_isotropic_teacher(alpha):
    # teacher weights c_k = tau^2 b_k (isotropic prior N(0, tau^2/p)): the Bayes-optimal ridge is
    # lam p = sigma^2 p / tau^2, i.e. lam* = sigma^2 / tau^2 at every alpha and for any spectrum
    spec = isotropic()
    res = rm.optimal_lambda(spec, alpha=alpha)
    lam_star, sp = float(res.lam_opt), res.points[0]
    exact = 0.4 / 0.7
    assert lam_star == pytest.approx(exact, rel=1e-5)
    assert sp.eg == pytest.approx(rm.solve(spec, alpha=alpha, lam=exact).eg, rel=1e-10)
    assert sp.eg <= rm.solve(spec, alpha=alpha, lam=exact * 1.01).eg


def test_optimal_lambda_beats_neighbours():
    lim = rm.GaussianPotts.limit(shift=3.0)
    res = rm.optimal_lambda(lim, alpha=1.5)
    lam_star, sp = float(res.lam_opt), res.points[0]
    assert res.converged and not res.at_bound and res.eg_opt == sp.eg
    for f in (0.99, 1.01):
        assert sp.eg < rm.solve(lim, alpha=1.5, lam=lam_star * f).eg
    assert "bounded Brent" in sp.message


def test_phase_diagram_fields_and_derivative():
    lim = rm.GaussianPotts.limit(shift=3.0)
    alpha = np.linspace(0.1, 3.0, 25)
    lam = np.logspace(-3, 0, 7)
    pd = rm.phase_diagram(lim, alpha=alpha, lam=lam)
    assert pd.eg.shape == pd.deg_dalpha.shape == (7, 25) and pd.axis == "lam"
    # d eg / d alpha against central differences of the solver
    h = 1e-6
    for i in (0, 3, 6):
        fd = (rm.learning_curve(lim, alpha=alpha + h, lam=lam[i]).eg
              - rm.learning_curve(lim, alpha=alpha - h, lam=lam[i]).eg) / (2 * h)
        assert np.allclose(pd.deg_dalpha[i], fd, rtol=1e-6, atol=1e-8)
    # the optimal-lam line is optimal_lambda's answer, and is a lower envelope of the grid
    res = rm.optimal_lambda(lim, alpha=float(alpha[10]))
    lam_star, sp = float(res.lam_opt), res.points[0]
    assert pd.optimal_lam[10] == lam_star and pd.optimal_eg[10] == sp.eg
    assert np.all(pd.optimal_eg <= pd.eg.min(axis=0) * (1 + 1e-12))
    # the peak at small lam sits just above alpha = 1 and is where d eg / d alpha changes sign
    assert 1.0 < pd.peak_alpha[0] < 1.05
    d = rm.phase_diagram(lim, alpha=[pd.peak_alpha[0] - 1e-4, pd.peak_alpha[0] + 1e-4], lam=[lam[0]],
                         optimal=False).deg_dalpha[0]
    assert d[0] > 0 > d[1]
    assert pd.more_data_hurts[0, 0]  # small lam, small alpha: more data hurts


def test_shift_phase_diagram_and_figures(tmp_path):
    sd = rm.shift_phase_diagram(alpha=np.linspace(0.1, 3, 20), shift=np.linspace(2.2, 5, 6), lam=1e-2)
    assert sd.axis == "shift" and sd.eg.shape == (6, 20)
    row = rm.learning_curve(rm.GaussianPotts.limit(shift=float(sd.y[2])), alpha=sd.alpha, lam=1e-2)
    assert np.allclose(sd.eg[2], row.eg, rtol=1e-13)
    pd = rm.phase_diagram(rm.GaussianPotts.limit(shift=3.0), alpha=np.linspace(0.1, 3, 20),
                          lam=np.logspace(-3, 0, 8))
    rm.plotting.plot_phase_diagram(pd, path=tmp_path / "phase.pdf")
    rm.plotting.plot_phase_diagram(sd, path=tmp_path / "shift")
    for name in ("phase.pdf", "phase.png", "shift.pdf", "shift.png"):
        assert (tmp_path / name).stat().st_size > 1000


@pytest.mark.parametrize("kwargs,match", [
    (dict(alpha=[], lam=[0.1]), "non-empty"),
    (dict(alpha=[1.0, 0.5], lam=[0.1]), "strictly increasing"),
    (dict(alpha=[0.5, 1.0], lam=[0.1, 0.01]), "strictly increasing"),
    (dict(alpha=[0.0, 1.0], lam=[0.1]), "alpha must be > 0"),
    (dict(alpha=[0.5, 1.0], lam=[-0.1, 0.1]), "lam must be > 0"),
    (dict(alpha=[0.5, np.nan], lam=[0.1]), "NaN"),
])
def test_bad_phase_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rm.phase_diagram(rm.GaussianPotts.limit(shift=3.0), **kwargs)


def test_bad_shift_grid_and_optimal_bounds():
    with pytest.raises(ValueError, match="shift must be > 2"):
        rm.shift_phase_diagram(alpha=[0.5, 1.0], shift=[1.5, 3.0], lam=0.1)
    with pytest.raises(ValueError, match="lam must be >= 0"):
        rm.shift_phase_diagram(alpha=[0.5, 1.0], shift=[2.5, 3.0], lam=-1.0)
    with pytest.raises(ValueError, match="bounds"):
        rm.optimal_lambda(rm.GaussianPotts.limit(shift=3.0), alpha=1.0, bounds=(1.0, 0.1))
    with pytest.raises(ValueError, match="alpha must be > 0"):
        rm.optimal_lambda(rm.GaussianPotts.limit(shift=3.0), alpha=-1.0)


@pytest.mark.parametrize("xatol,error", [(np.nan, ValueError), (np.inf, ValueError), (-1e-9, ValueError),
                                         (0.0, ValueError), (2.0, ValueError), ("1e-9", TypeError)])
def test_optimal_lambda_refuses_bad_xatol(xatol, error):
    with pytest.raises(error, match="xatol"):
        rm.optimal_lambda(rm.GaussianPotts.limit(shift=3.0), alpha=1.0, xatol=xatol)


@pytest.mark.parametrize("optimal", ["str", "no", 1, None, np.array([True])])
def test_phase_diagram_flags_must_be_booleans(optimal):
    limit = rm.GaussianPotts.limit(shift=3.0)
    with pytest.raises(TypeError, match="optimal must be True or False"):
        rm.phase_diagram(limit, alpha=[0.5, 2.0], lam=[0.1, 1.0], optimal=optimal)
    with pytest.raises(TypeError, match="progress must be True or False"):
        rm.phase_diagram(limit, alpha=[0.5, 2.0], lam=[0.1, 1.0], optimal=False, progress=optimal)
    with pytest.raises(TypeError, match="latex must be True or False"):
        rm.equations(latex=optimal)


def test_grids_refuse_strings_and_complex():
    limit = rm.GaussianPotts.limit(shift=3.0)
    with pytest.raises(TypeError, match="alpha must be an array of real numbers, got strings"):
        rm.phase_diagram(limit, alpha=np.array(["0.5", "2.0"]), lam=[0.1], optimal=False)
    with pytest.raises(TypeError, match="lam must be an array of real numbers, got complex"):
        rm.phase_diagram(limit, alpha=[0.5, 2.0], lam=np.array([0.1 + 0j]), optimal=False)
    with pytest.raises(TypeError, match="alpha must contain real numbers only"):
        rm.learning_curve(limit, alpha=[0.5, "2.0"], lam=0.1)
