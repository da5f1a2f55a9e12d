"""Validation section ``limit``: finite instances against L -> infinity, the peak, the phase diagram.

Checks (each with its number and threshold):

* ``limit.check_value``: eg(alpha = 2, lam = 0.01) in the limit at s = 3 against docs/limit.md's
  0.6315784365 (10 digits);
* ``limit.finite_size_rate``: the RMS gap between the replica eg of finite instances and of the
  limit shrinks like L^(-1/2) (fitted log-log slope within 0.25 of -1/2; with n instances per L the
  RMS is known to ~1/sqrt(2n) relative, which makes the slope uncertain by about 0.1 here);
* ``limit.peak_at_alpha_1`` (claim (b)): the maximum of eg over alpha moves to alpha = 1 as lam -> 0
  (|alpha_peak - 1| < 1e-3 at lam = 1e-6, shrinking monotonically with lam);
* ``limit.peak_exponent`` (claim (b)): eg(alpha = 1) diverges as lam^x with x fitted on
  lam in [1e-10, 1e-6] equal to the exponent derived by sympy (``rm.expansions()``), within 0.01;
* ``limit.initial_slope`` (claim (a) in the limit): d eg / d alpha at alpha -> 0 from the sympy series
  is positive at lam = 1e-3 (more data hurts at the start), and agrees with the solver's finite
  difference at alpha = 1e-4 to 1 %.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from replica_mlm._base.io import write_json
from replica_mlm._base.pool import Task, run_tasks
from replica_mlm.validation.mlm_section import instance_seed
from replica_mlm.validation.report import Check, Section

SHIFT = 3.0
CHECK_VALUE = 0.6315784365  # docs/limit.md, eg(alpha = 2, lam = 0.01) at s = 3
POINTS = ((0.5, 1e-2), (2.0, 1e-2), (1.0, 0.1))


def _finite_sizes(quick: bool) -> tuple[list[int], list[int]]:
    """Sizes L and GOE instances per size of the finite-size check."""
    return ([100, 200, 400], [32, 24, 16]) if quick else ([100, 200, 400, 800, 1600], [64, 48, 32, 24, 16])


def _instance_egs(L: int, seed: int) -> list[float]:
    """Replica eg at :data:`POINTS` on the GOE instance of size ``L`` with ``seed`` (a worker task)."""
    import replica_mlm as rm

    site = rm.GaussianPotts.random(L=L, shift=SHIFT, seed=seed).masked_site(0)
    return [rm.solve(site, alpha=a, lam=lam).eg for a, lam in POINTS]


def _finite_size(quick: bool, rng: int, workers: int = 1) -> dict:
    import replica_mlm as rm

    sizes, counts = _finite_sizes(quick)
    lim = rm.GaussianPotts.limit(shift=SHIFT)
    ref = np.array([rm.solve(lim, alpha=a, lam=lam).eg for a, lam in POINTS])
    # one task per instance, largest sizes first (each seeds itself: the same egs for any workers)
    order = [(L, k) for L, n in sorted(zip(sizes, counts, strict=True), reverse=True) for k in range(n)]
    egs = dict(zip(order, run_tasks([Task(_instance_egs, (L, instance_seed(rng, L, k))) for L, k in order],
                                    workers=workers), strict=True))
    rms, err = [], []
    for L, n in zip(sizes, counts, strict=True):
        g = np.array([egs[(L, k)] for k in range(n)]) - ref
        rms.append(float(np.sqrt(np.mean(g**2))))
        err.append(rms[-1] / math.sqrt(2 * n))
    # weighted least squares in log-log: log(rms) is known to 1/sqrt(2n), the slope's standard
    # error follows from those (cov="unscaled"), not from the scatter of a few points
    coef, cov = np.polyfit(np.log(sizes), np.log(rms), 1, w=np.sqrt(2 * np.asarray(counts)), cov="unscaled")
    return dict(L=sizes, instances=counts, rms_gap=rms, rms_gap_error=err, slope=float(coef[0]),
                slope_error=float(np.sqrt(cov[0, 0])), intercept=float(coef[1]),
                points=[list(p) for p in POINTS])


def _peak(quick: bool) -> dict:
    import replica_mlm as rm
    from replica_mlm.theory.solve import solve_reduced
    from replica_mlm.theory.solvers.eg_slope import alpha_derivative
    from replica_mlm.theory.studies.phase import peak_alpha

    lim = rm.GaussianPotts.limit(shift=SHIFT)
    spec = lim.spectrum
    lams = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6]
    peaks = []
    for lam in lams:
        alphas = np.linspace(0.9, 1.3, 81)
        out = solve_reduced(spec, alphas, lam)
        peaks.append(peak_alpha(lim, spec, alphas, lam, alpha_derivative(spec, alphas, lam, out["kappa"])))
    fit_lams = np.geomspace(1e-10, 1e-6, 5)
    egs = [rm.solve(lim, alpha=1.0, lam=float(x)).eg for x in fit_lams]
    fitted = float(np.polyfit(np.log(fit_lams), np.log(egs), 1)[0])
    derived = float(rm.asymptotics(lim, lam=0.0).peak_exponent)
    return dict(lam=lams, peak_alpha=peaks, fit_lam=fit_lams.tolist(), fit_eg=egs, fitted_exponent=fitted,
                derived_exponent=derived)


def _initial_slope() -> dict:
    import replica_mlm as rm

    lim = rm.GaussianPotts.limit(shift=SHIFT)
    a = rm.asymptotics(lim, lam=1e-3)
    h = 1e-4
    fd = (rm.solve(lim, alpha=h, lam=1e-3).eg - lim.c_ii) / h
    return dict(lam=1e-3, series_slope=a.slope, solver_slope=fd)


def run(out: Path, *, quick: bool = True, rng: int = 0, progress: bool | None = None,
        workers: int = 1) -> Section:
    """Run the section into ``out`` (figures ``limit_*.png/.pdf``, numbers in ``limit.json``).

    ``workers`` processes solve the GOE instances of the finite-size check (each instance seeds
    itself, so the numbers do not depend on ``workers``); the rest runs in this process.
    """
    import matplotlib.pyplot as plt

    import replica_mlm as rm
    from replica_mlm.plotting import STYLE, log_ticks, plot_phase_diagram, save

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lim = rm.GaussianPotts.limit(shift=SHIFT)
    value = rm.solve(lim, alpha=2.0, lam=0.01).eg
    fs = _finite_size(quick, rng, workers)
    pk = _peak(quick)
    sl = _initial_slope()

    peak_dev = [abs(p - 1.0) for p in pk["peak_alpha"]]
    checks = [
        Check("limit.check_value", abs(value - CHECK_VALUE) < 1e-10, value, [CHECK_VALUE, 1e-10],
              "eg(alpha=2, lam=0.01) at s=3 in the limit vs docs/limit.md's 0.6315784365 (abs. tolerance)"),
        Check("limit.finite_size_rate", abs(fs["slope"] + 0.5) < 0.25, fs["slope"], [-0.5, 0.25],
              f"log-log slope of the RMS gap |eg_L - eg_inf| over L = {fs['L']} "
              f"({fs['instances']} instances): {fs['slope']:.3f} ± {fs['slope_error']:.3f} (s.e.); "
              "expected -1/2"),
        Check("limit.peak_at_alpha_1",
              bool(peak_dev[-1] < 1e-3 and all(np.diff(peak_dev) < 0)), peak_dev[-1], 1e-3,
              "|alpha_peak - 1| at lam = 1e-6, shrinking monotonically over lam = 1e-2 ... 1e-6"),
        Check("limit.peak_exponent", abs(pk["fitted_exponent"] - pk["derived_exponent"]) < 0.01,
              pk["fitted_exponent"], [pk["derived_exponent"], 0.01],
              "exponent of eg(alpha=1) ~ lam^x fitted on lam in [1e-10, 1e-6] vs the sympy series"),
        Check("limit.initial_slope",
              bool(sl["series_slope"] > 0
                   and abs(sl["solver_slope"] - sl["series_slope"]) < 0.01 * sl["series_slope"]),
              sl["series_slope"], [0.0, 0.01],
              "d eg/d alpha at alpha -> 0, lam = 1e-3: positive (more data hurts) and the solver's "
              "difference quotient at alpha = 1e-4 within 1 %"),
    ]

    figures = []
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        L = np.array(fs["L"], dtype=float)
        ax.errorbar(L, fs["rms_gap"], yerr=fs["rms_gap_error"], fmt="o", color="black", mfc="white",
                    capsize=2, elinewidth=0.9,
                    label="replica theory on GOE instances\n(error: $\\Delta/\\sqrt{2n}$, $n$ instances)")
        fit = np.exp(fs["intercept"]) * L ** fs["slope"]
        ax.plot(L, fit, color="0.2", lw=1.0,
                label=rf"fit: $\propto L^{{{fs['slope']:.2f} \pm {fs['slope_error']:.2f}}}$")
        ref = fs["rms_gap"][0] * (L / L[0]) ** -0.5
        ax.plot(L, ref, color="0.5", ls="--", lw=1.0, label=r"$\propto L^{-1/2}$ (expected)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        log_ticks(ax.xaxis)
        log_ticks(ax.yaxis)
        ax.set_xlabel("number of sites $L$")
        ax.set_ylabel(r"$\Delta_L = \langle (e_g^{(L)} - e_g^{(\infty)})^2 \rangle^{1/2}$")
        pts = ", ".join(rf"$({a:g}, {lam:g})$" for a, lam in POINTS)
        ax.set_title(rf"finite-size gap, $s = {SHIFT:g}$; mean over instances and $(\alpha, \lambda) \in$"
                     f"\n{{{pts}}}", fontsize=8.5)
        ax.legend(fontsize=8)
        save(fig, out / "limit_finite_size")
        plt.close(fig)
        figures += ["limit_finite_size.png", "limit_finite_size.pdf"]

        fig, ax = plt.subplots()
        more = np.geomspace(1e-5, 1e-2, 4)
        ax.loglog(more, [rm.solve(lim, alpha=1.0, lam=float(x)).eg for x in more], "s", color="0.4",
                  mfc="white", ms=4, label=r"solver, $\alpha = 1$ (not fitted)")
        ax.loglog(pk["fit_lam"], pk["fit_eg"], "o", color="black", mfc="white",
                  label=r"solver, $\alpha = 1$ (fit range)")
        a = rm.asymptotics(lim, lam=0.0)
        grid = np.geomspace(1e-10, 1e-2, 50)
        ax.loglog(grid, a.peak_prefactor * grid**a.peak_exponent + a.peak_constant, color="0.3",
                  label=rf"series: $A\lambda^{{{a.peak_exponent:g}}} + A'$")
        ax.set_xlabel(r"ridge strength $\lambda$")
        ax.set_ylabel(r"$e_g$ at the interpolation peak")
        ax.legend()
        save(fig, out / "limit_peak")
        plt.close(fig)
        figures += ["limit_peak.png", "limit_peak.pdf"]

    n = 40 if quick else 100
    pd = rm.phase_diagram(lim, alpha=np.linspace(0.05, 4.0, n), lam=np.logspace(-4, 1, n),
                          progress=bool(progress))
    fig = plot_phase_diagram(pd, path=out / "limit_phase", title=r"Gaussian Potts, $L\to\infty$, $s = 3$")
    plt.close(fig)
    figures += ["limit_phase.png", "limit_phase.pdf"]

    data = dict(check_value=value, finite_size=fs, peak=pk, initial_slope=sl,
                phase=dict(alpha=pd.alpha.tolist(), lam=pd.y.tolist(), optimal_lam=pd.optimal_lam.tolist()))
    write_json(out / "limit.json", data, indent=2)
    return Section(name="limit", checks=checks, figures=figures, data=data,
                   parameters=dict(quick=quick, rng=rng, shift=SHIFT, points=[list(p) for p in POINTS]))

