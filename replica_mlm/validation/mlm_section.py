"""Validation entry: the replica theory of ridge MLM held against simulations (docs/theory.md, sections 1-5).

For every point of a sweep (Gaussian Potts size L, GOE instance, alpha on a grid dense around 1)
it draws ``seeds`` independent training sets of ``n = round(alpha p)`` samples of masked site 0,
trains ridge for every lam of {0, 1e-3, 1e-1, 1} (:func:`replica_mlm.simulate`: one Gram
matrix per training set, see :func:`~replica_mlm.learners.ridge_path.ridge_path`), and compares the mean test
loss and its standard error with the replica prediction :func:`replica_mlm.solve` on the same
instance at the realised ``n / p``.

z-scores. ``t = (simulation mean - replica) / standard error`` is, under the hypothesis that the
replica value is the mean, a Student t with ``seeds - 1`` degrees of freedom; the checks use its
normal score ``z = Phi^-1(F_t(t))``, exactly N(0, 1) under that hypothesis (for 40 seeds t = 4
maps to z = 3.72). The raw t are kept in the data.

Checks (each with its numbers and threshold):

(a) at small lam (0 and 1e-3) the test loss grows with alpha on (0, 1), from C_ii at alpha = 0:
    on the replica curve of every instance (strictly, on a grid of 99 points), and in the
    simulations (no step of the alpha grid below 1 decreases by more than 3 standard errors, and
    the largest alpha < 1 exceeds C_ii by more than 3 standard errors);
(c) eg - sigma^2 ~ c / alpha at large alpha: least-squares fit of log(eg - sigma^2) against
    log alpha on the replica curve over alpha in [10^3, 10^4] (30 log-spaced points), for every
    instance and lam: exponent -1 within 0.05, c = sigma^2 within 5 %. The corrections are
    O(1/alpha) relative, with a coefficient that grows with lam: on [100, 1000] the fitted c is
    off by 2.5 % at lam = 0 (eg - sigma^2 = sigma^2 / (alpha - 1) there) and by 10 % at lam = 1, so
    that lower range is reported in the data but is not where the asymptote is tested;
(d) agreement: no |z| > 4 among the compared points, and a Kolmogorov-Smirnov test of the z
    against N(0, 1) per lam at the 0.1 % level (Bonferroni over the 4 lam). The z of different
    lam share their training sets and are strongly correlated, so the KS test is applied per lam,
    where every z comes from independent samples.

Finite-p bias (docs/theory.md, section 5). The replica value is the p -> infinity limit; at finite p the
mean over training sets differs by O(1/p), and by much more near the interpolation peak at small
lam: for lam = 0, alpha > 1 the exact finite-p mean is sigma^2 (1 + p / (n - p - 1)) against the
replica sigma^2 alpha / (alpha - 1) (10 % apart at p = 99, alpha = 1.1). Points with lam <= 1e-3 and
|alpha - 1| < 0.3 are therefore shown in the figure but excluded from (d); the data list their z
and, for lam = 0 and alpha > 1, the exact finite-p bias in standard errors.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from replica_mlm._base.io import write_csv, write_json
from replica_mlm._base.stats import mean_stderr, zscore
from replica_mlm.validation.report import Check, Section

__all__ = ["MLMSettings", "run", "settings"]

LAMS = (0.0, 1e-3, 1e-1, 1.0)
#: lam <= SMALL_LAM is "small" for check (a) and the finite-p exclusion window
SMALL_LAM = 1e-3
#: points with lam <= SMALL_LAM and |alpha - 1| < WINDOW are excluded from (d)
WINDOW = 0.3
Z_MAX = 4.0
KS_LEVEL = 1e-3
#: check (a): steps may not decrease by more than this many standard errors
A_SE = 3.0
#: check (c): fit range on the replica curve, and tolerances
C_RANGE = (1e3, 1e4)
#: a lower range, reported (not checked) to show the approach to the asymptote
C_RANGE_LOW = (100.0, 1000.0)
#: training sets per alpha of the large-alpha figure's simulations (smallest instance)
LARGE_ALPHA_SEEDS = 16
C_POINTS = 30
C_EXPONENT_TOL = 0.05
C_REL_TOL = 0.05


@dataclass(frozen=True)
class MLMSettings:
    """Sweep of the ``mlm`` section.

    Attributes
    ----------
    sizes : tuple of (L, instances, seeds)
        Gaussian Potts sizes, number of GOE instances of each, and training sets per point.
    alphas : tuple of float
        Target sample ratios (the realised n / p is used for the theory).
    lams : tuple of float
        Ridge strengths, all trained from one Gram matrix per training set.
    shift : float
        Diagonal shift s of the precision s I - J.
    site : int
        Masked site.
    large_alphas : tuple of float
        Simulated on the smallest instance for the figure ``mlm_large_alpha`` (the decay of
        eg - sigma^2 towards sigma^2 / alpha); not part of the checks.
    """

    sizes: tuple[tuple[int, int, int], ...]
    alphas: tuple[float, ...]
    lams: tuple[float, ...] = LAMS
    shift: float = 3.0
    site: int = 0
    large_alphas: tuple[float, ...] = (3.0, 10.0, 30.0)


QUICK_ALPHAS = (0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 0.95, 1.05, 1.1, 1.2, 1.3, 1.5, 2.0, 3.0)
FULL_ALPHAS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.975, 1.025, 1.05, 1.1, 1.15,
               1.2, 1.3, 1.4, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0)


#: full mode: training sets per point times p, held fixed across sizes (100 sets at L = 100)
FULL_SEED_BUDGET = 100 * 99
#: full mode: never fewer training sets per point than this
MIN_SEEDS = 8


def full_seeds(p: int) -> int:
    """Training sets per point of the full sweep: ``max(MIN_SEEDS, ceil(FULL_SEED_BUDGET / p))``.

    The test error self-averages: its variance over training sets falls as 1/p (it is a sum over
    p modes), so the standard error of a point's mean, ``sd / sqrt(seeds)``, stays about the same
    when ``seeds`` falls as 1/p. The section reports the relative standard errors reached per size
    (``stderr_by_L`` in its data), which show the rule at work.
    """
    return max(MIN_SEEDS, -(-FULL_SEED_BUDGET // p))


def settings(quick: bool) -> MLMSettings:
    """The sweep of ``--quick`` (CI: about half a minute on one core) or ``--full``."""
    if quick:
        return MLMSettings(sizes=((100, 4, 40), (400, 1, 40)), alphas=QUICK_ALPHAS)
    return MLMSettings(sizes=tuple((L, k, full_seeds(L - 1)) for L, k in ((100, 16), (400, 4), (1600, 2))),
                       alphas=FULL_ALPHAS, large_alphas=(3.0, 10.0, 30.0, 100.0, 300.0))


# --- one point of the sweep (runs in a worker) ---------------------------------------------


@functools.lru_cache(maxsize=4)
def _site(L: int, shift: float, instance_seed: int, site: int):
    from replica_mlm import GaussianPotts

    return GaussianPotts.random(L=L, shift=shift, seed=instance_seed).masked_site(site)


def simulate_point(point: dict, rng: np.random.Generator) -> dict:
    """Simulation and replica prediction at one (L, instance, alpha), every lam.

    ``point`` has keys ``L, shift, site, instance_seed, alpha, lams, seeds`` and optionally
    ``loss`` and ``channel`` (default square and gaussian).
    """
    from replica_mlm import simulate, solve

    site = _site(point["L"], point["shift"], point["instance_seed"], point["site"])
    erm = {"loss": point.get("loss", "square"), "channel": point.get("channel", "gaussian")}
    sim = simulate(site, alpha=point["alpha"], lam=point["lams"], seeds=point["seeds"], rng=rng, **erm)
    if np.all(np.isfinite(sim.eg_theory) | np.isinf(sim.eg_theory)):  # the simulation's own replica values
        eg_theory, et_theory = sim.eg_theory.tolist(), sim.train_loss_theory.tolist()
    else:  # a saddle point did not converge: solve again, so that its ConvergenceError is raised here
        theory = [solve(site, alpha=sim.alpha, lam=lam, **erm) for lam in point["lams"]]
        eg_theory, et_theory = [t.eg for t in theory], [t.train_loss for t in theory]
    n, p = sim.n, sim.p
    return {
        "n": n, "p": p, "alpha": sim.alpha, "rho": site.rho, "noise": site.noise,
        "eg_mean": sim.eg_mean, "eg_stderr": sim.eg_stderr,
        "eg_theory": eg_theory,
        "train_loss_mean": sim.train_loss_mean, "train_loss_stderr": sim.train_loss_stderr,
        "train_loss_theory": et_theory,
        # the optimiser's certified distance to the exact minimiser, largest over seeds and lam
        "kkt_residual_max": float(np.max(sim.kkt_residual)),
        # exact finite-p mean of least squares for Gaussian inputs (n > p + 1)
        "ols_exact": site.noise * (1 + p / (n - p - 1)) if n > p + 1 else None,
    }


# --- the section ---------------------------------------------------------------------------


def instance_seed(root: int, L: int, k: int) -> int:
    return int(np.random.SeedSequence([root, L, k]).generate_state(1)[0])


def make_points(cfg: MLMSettings, rng: int) -> list[dict]:
    """The sweep's points: every (L, instance, alpha), with every lam at each."""
    return [
        {"L": L, "instance": k, "instance_seed": instance_seed(rng, L, k), "shift": cfg.shift,
         "site": cfg.site, "alpha": float(alpha), "lams": list(cfg.lams), "seeds": seeds}
        for L, instances, seeds in cfg.sizes for k in range(instances) for alpha in cfg.alphas
    ]


def _rows(points: list[dict], results: list[dict]) -> list[dict]:
    """One row per (point, lam) with t, z and whether it enters check (d)."""
    rows = []
    for pt, res in zip(points, results, strict=True):
        for j, lam in enumerate(pt["lams"]):
            mean, se, th = res["eg_mean"][j], res["eg_stderr"][j], res["eg_theory"][j]
            t = zscore(mean, th, se)
            z = float(stats.norm.ppf(stats.t.cdf(t, df=pt["seeds"] - 1)))
            if not np.isfinite(z):  # beyond double precision of the CDF: keep the sign
                z = float(np.sign(t) * np.inf)
            excluded = lam <= SMALL_LAM and abs(res["alpha"] - 1) < WINDOW
            ols = res["ols_exact"] if lam == 0 else None
            rows.append({
                "L": pt["L"], "instance": pt["instance"], "alpha_target": pt["alpha"],
                "alpha": res["alpha"], "n": res["n"], "p": res["p"], "lam": lam, "seeds": pt["seeds"],
                "eg_mean": mean, "eg_stderr": se, "eg_theory": th, "t": t, "z": z,
                "in_check_d": not excluded,
                "ols_exact": ols,
                "ols_bias_in_se": None if ols is None else zscore(ols, th, se),
                "noise": res["noise"], "c_ii": res["rho"] + res["noise"],
            })
    return rows


def _check_a(cfg: MLMSettings, rows: list[dict], instances: dict) -> list[Check]:
    from replica_mlm import learning_curve

    grid = np.linspace(0.01, 0.99, 99)
    worst_theory = np.inf
    where = None
    for key, site in instances.items():
        for lam in (lam for lam in cfg.lams if lam <= SMALL_LAM):
            eg = learning_curve(site, alpha=grid, lam=lam).eg
            steps = np.diff(np.concatenate([[site.c_ii], eg])) / site.c_ii
            if steps.min() < worst_theory:
                worst_theory, where = float(steps.min()), (*key, lam)
    theory = Check(
        name="mlm.a.loss_grows_below_peak.theory",
        passed=bool(worst_theory > 0),
        value={"min_relative_step": worst_theory, "at_L_instance_lam": where},
        threshold="every step > 0",
        detail=(f"replica eg on alpha = 0, 0.01, ..., 0.99 (eg(0) = C_ii) at lam in "
                f"{[lam for lam in cfg.lams if lam <= SMALL_LAM]}, every instance: smallest step "
                f"(eg(alpha_k+1) - eg(alpha_k)) / C_ii = {worst_theory:.3g}"),
    )
    worst_step, worst_rise, n_curves = np.inf, np.inf, 0
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["lam"] <= SMALL_LAM and r["alpha"] < 1:
            groups.setdefault((r["L"], r["instance"], r["lam"]), []).append(r)
    for g in groups.values():
        g.sort(key=lambda r: r["alpha"])
        means = np.array([g[0]["c_ii"]] + [r["eg_mean"] for r in g])
        ses = np.array([0.0] + [r["eg_stderr"] for r in g])
        zs = np.diff(means) / np.hypot(ses[1:], ses[:-1])
        worst_step = min(worst_step, float(zs.min()))
        worst_rise = min(worst_rise, float((means[-1] - means[0]) / ses[-1]))
        n_curves += 1
    simulation = Check(
        name="mlm.a.loss_grows_below_peak.simulation",
        passed=bool(worst_step > -A_SE and worst_rise > A_SE),
        value={"min_step_in_se": worst_step, "min_rise_in_se": worst_rise, "curves": n_curves},
        threshold=f"steps > -{A_SE:g} s.e. and eg(largest alpha < 1) - C_ii > {A_SE:g} s.e.",
        detail=(f"simulation means on the alpha grid below 1 (from C_ii at alpha = 0), lam <= "
                f"{SMALL_LAM:g}, {n_curves} curves: smallest step {worst_step:.2f} s.e., smallest "
                f"overall rise {worst_rise:.1f} s.e."),
    )
    return [theory, simulation]


def _power_fits(cfg: MLMSettings, instances: dict, alpha_range: tuple[float, float]) -> list[dict]:
    from replica_mlm import learning_curve

    alpha = np.geomspace(*alpha_range, C_POINTS)
    fits = []
    for key, site in instances.items():
        for lam in cfg.lams:
            excess = learning_curve(site, alpha=alpha, lam=lam).eg - site.noise
            slope, intercept = np.polyfit(np.log(alpha), np.log(excess), 1)
            fits.append({"L": key[0], "instance": key[1], "lam": lam, "exponent": float(slope),
                         "c": float(np.exp(intercept)), "noise": site.noise,
                         "c_rel_error": float(np.exp(intercept) / site.noise - 1)})
    return fits


def _check_c(cfg: MLMSettings, instances: dict) -> tuple[Check, dict]:
    fits = _power_fits(cfg, instances, C_RANGE)
    low = _power_fits(cfg, instances, C_RANGE_LOW)
    worst_exp = max(abs(f["exponent"] + 1) for f in fits)
    worst_c = max(abs(f["c_rel_error"]) for f in fits)
    check = Check(
        name="mlm.c.large_alpha_decay",
        passed=bool(worst_exp < C_EXPONENT_TOL and worst_c < C_REL_TOL),
        value={"max_abs_exponent_plus_1": worst_exp, "max_abs_c_over_sigma2_minus_1": worst_c,
               "fits": len(fits)},
        threshold=f"|exponent + 1| < {C_EXPONENT_TOL:g} and |c / sigma^2 - 1| < {C_REL_TOL:g}",
        detail=(f"fit log(eg - sigma^2) = log c + exponent log alpha on the replica curve, alpha in "
                f"[{C_RANGE[0]:g}, {C_RANGE[1]:g}] ({C_POINTS} log-spaced points), every instance and lam: "
                f"worst |exponent + 1| = {worst_exp:.2g}, worst |c / sigma^2 - 1| = {worst_c:.2g}"),
    )
    return check, {"alpha_range": list(C_RANGE), "points": C_POINTS, "fits": fits,
                   "lower_range_not_checked": {
                       "alpha_range": list(C_RANGE_LOW),
                       "max_abs_exponent_plus_1": max(abs(f["exponent"] + 1) for f in low),
                       "max_abs_c_over_sigma2_minus_1": max(abs(f["c_rel_error"]) for f in low),
                       "fits": low}}


def _check_d(cfg: MLMSettings, rows: list[dict]) -> tuple[list[Check], dict]:
    used = [r for r in rows if r["in_check_d"]]
    z = np.array([r["z"] for r in used])
    worst = max(used, key=lambda r: abs(r["z"]))
    maxz = Check(
        name="mlm.d.no_large_z",
        passed=bool(np.all(np.abs(z) < Z_MAX)),
        value={"max_abs_z": float(np.max(np.abs(z))), "compared": len(used),
               "worst": {k: worst[k] for k in ("L", "instance", "alpha", "lam", "t", "z")}},
        threshold=f"|z| < {Z_MAX:g} everywhere",
        detail=(f"{len(used)} (point, lam) comparisons, z = normal score of (mean - replica) / s.e.: "
                f"mean {z.mean():+.3f}, std {z.std(ddof=1):.3f}, max |z| {np.max(np.abs(z)):.2f}"),
    )
    ks = {}
    for lam in cfg.lams:
        zl = np.array([r["z"] for r in used if r["lam"] == lam])
        res = stats.kstest(zl, "norm")
        ks[repr(lam)] = {"n": int(zl.size), "statistic": float(res.statistic),
                         "pvalue": float(res.pvalue), "mean": float(zl.mean()),
                         "std": float(zl.std(ddof=1))}
    pmin = min(v["pvalue"] for v in ks.values())
    level = KS_LEVEL / len(cfg.lams)
    kstest = Check(
        name="mlm.d.ks_normal",
        passed=bool(pmin > level),
        value={"min_pvalue": pmin, "per_lam": ks},
        threshold=f"every p-value > {KS_LEVEL:g} / {len(cfg.lams)} (0.1 % overall, Bonferroni)",
        detail=("Kolmogorov-Smirnov test of z against N(0, 1), separately per lam (independent "
                "samples within a lam): p-values "
                + ", ".join(f"lam={lam}: {v['pvalue']:.3g} (n={v['n']})" for lam, v in ks.items())),
    )
    excluded = [r for r in rows if not r["in_check_d"]]
    return [maxz, kstest], {
        "excluded": {
            "rule": f"lam <= {SMALL_LAM:g} and |alpha - 1| < {WINDOW:g} (finite-p bias near the peak)",
            "count": len(excluded),
            "max_abs_z": float(max((abs(r["z"]) for r in excluded), default=0.0)),
            "ols_bias_in_se_max": float(max((abs(r["ols_bias_in_se"]) for r in excluded
                                             if r["ols_bias_in_se"] is not None), default=0.0)),
        },
        "stderr_by_L": _stderr_by_L(rows),
        "z_summary": {"n": int(z.size), "mean": float(z.mean()), "std": float(z.std(ddof=1)),
                      "max_abs": float(np.max(np.abs(z)))},
        # the finite-p bias shows as a positive mean of z at small lam and small L
        "z_by_L_and_lam": [
            {"L": L, "lam": lam, "n": len(zz), "mean": float(np.mean(zz)),
             "std": float(np.std(zz, ddof=1)) if len(zz) > 1 else None}
            for L in sorted({r["L"] for r in used}) for lam in cfg.lams
            if (zz := [r["z"] for r in used if r["L"] == L and r["lam"] == lam])
        ],
    }


def _stderr_by_L(rows: list[dict]) -> list[dict]:
    """Per size and lam: training sets per point and the relative standard errors reached.

    ``sd_sqrt_p`` (the relative spread of one training set's eg times sqrt(p), its median over the
    points) is about constant across sizes where eg self-averages.
    """
    out = []
    for L in sorted({r["L"] for r in rows}):
        for lam in sorted({r["lam"] for r in rows}):
            g = [r for r in rows if r["L"] == L and r["lam"] == lam]
            rel = np.array([r["eg_stderr"] / r["eg_mean"] for r in g])
            sd_sqrt_p = np.array([r["eg_stderr"] * np.sqrt(r["seeds"] * r["p"]) / r["eg_mean"] for r in g])
            out.append({"L": L, "lam": lam, "seeds": g[0]["seeds"], "points": len(g),
                        "rel_stderr_median": float(np.median(rel)), "rel_stderr_max": float(rel.max()),
                        "sd_sqrt_p_median": float(np.median(sd_sqrt_p))})
    return out


def _figures(cfg: MLMSettings, rows: list[dict], instances: dict, c_data: dict, out: Path,
             rng: int = 0) -> list[str]:
    import matplotlib.pyplot as plt

    from replica_mlm import learning_curve, simulate
    from replica_mlm.plotting import plot_excess_decay, plot_learning_curves, plot_z_histogram, save

    files = []
    L = max(k[0] for k in instances)
    site = instances[(L, 0)]
    alpha = np.unique(np.concatenate([np.linspace(0.02, max(cfg.alphas) * 1.05, 400),
                                      1 + np.geomspace(1e-4, 0.2, 60), 1 - np.geomspace(1e-4, 0.2, 60)]))
    curves = [learning_curve(site, alpha=alpha, lam=lam) for lam in cfg.lams]
    sims = [(r["alpha"], r["lam"], r["eg_mean"], r["eg_stderr"]) for r in rows
            if r["L"] == L and r["instance"] == 0]
    seeds = next(s for L_, _, s in cfg.sizes if L_ == L)
    fig = plot_learning_curves(
        curves, simulations=sims,
        title=rf"$L = {L}$, $s = {cfg.shift:g}$: replica (lines), simulation (mean $\pm$ s.e., {seeds} sets)")
    fig.axes[0].title.set_fontsize(8.5)
    save(fig, out / "mlm_fig3_left")
    plt.close(fig)
    files += ["mlm_fig3_left.png", "mlm_fig3_left.pdf"]

    used = np.array([r["z"] for r in rows if r["in_check_d"]])
    excluded = np.array([r["z"] for r in rows if not r["in_check_d"]])
    fig = plot_z_histogram(used, excluded=excluded, path=out / "mlm_zscores",
                           title="theory vs simulation: z-scores")
    plt.close(fig)
    files += ["mlm_zscores.png", "mlm_zscores.pdf"]

    # simulations at large alpha on the smallest instance (n = alpha p samples stay cheap there)
    L_small = min(k[0] for k in instances)
    small = instances[(L_small, 0)]
    a = np.geomspace(0.5, 3 * C_RANGE[1], 200)
    lam_curves = [(lam, a, learning_curve(small, alpha=a, lam=lam).eg - small.noise) for lam in cfg.lams]
    sims = []
    for k, alpha_s in enumerate(cfg.large_alphas):
        sim = simulate(small, alpha=alpha_s, lam=list(cfg.lams), seeds=LARGE_ALPHA_SEEDS,
                       rng=np.random.default_rng(np.random.SeedSequence([rng, 7, k])))
        excess = sim.eg - small.noise  # per training set, then mean and standard error
        sims += [(sim.alpha, lam, *mean_stderr(excess[:, j])) for j, lam in enumerate(cfg.lams)]
    fig = plot_excess_decay(lam_curves, noise=small.noise, fit_range=C_RANGE, simulations=sims,
                            path=out / "mlm_large_alpha",
                            title=rf"$L = {L_small}$: replica (lines), {LARGE_ALPHA_SEEDS} training sets "
                                  r"per $\alpha$ (markers); fit of $c\,\alpha^{-\nu}$: shaded")
    plt.close(fig)
    files += ["mlm_large_alpha.png", "mlm_large_alpha.pdf"]
    return files


def run(out: Path, *, quick: bool = True, rng: int = 0, workers: int = 1, scheduler=None,
        resume: bool = False, progress: bool | None = None) -> Section:
    """Run the theory-vs-simulation sweep; write figures, ``mlm.csv`` and ``mlm.json`` into ``out``.

    Parameters
    ----------
    out : pathlib.Path
        Output folder (created if missing); finished points go to ``out / "mlm_points"``.
    quick : bool
        The CI sweep (L in {100, 400}) or the full one (L up to 1600, more instances and seeds).
    rng : int
        Root seed: GOE instance ``k`` of size ``L`` uses ``SeedSequence([rng, L, k])``, sweep point
        ``j`` its training sets from ``SeedSequence(rng, spawn_key=(j,))``.
    workers, scheduler, resume, progress
        See :func:`replica_mlm._base.sweep.run_sweep`.

    Returns
    -------
    Section
        Checks (a), (c) and (d) of the module docstring.
    """
    from replica_mlm._base.sweep import run_sweep

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    cfg = settings(quick)
    points = make_points(cfg, rng)
    sweep = run_sweep(simulate_point, points, seed=rng, workers=workers, scheduler=scheduler,
                      out=out / "mlm_points", resume=resume, progress=progress, desc="mlm sweep")
    rows = _rows(sweep.points, sweep.results)
    instances = {(pt["L"], pt["instance"]): _site(pt["L"], pt["shift"], pt["instance_seed"], pt["site"])
                 for pt in points}

    section = Section(name="mlm: replica theory vs simulation (docs/theory.md, sections 1-5)")
    section.parameters = {"quick": quick, "rng": rng, "settings": asdict(cfg), "backend": sweep.backend,
                          "instance_seeds": {f"L={pt['L']},instance={pt['instance']}": pt["instance_seed"]
                                             for pt in points},
                          "z_max": Z_MAX, "ks_level": KS_LEVEL, "window": WINDOW}
    section.checks += _check_a(cfg, rows, instances)
    check_c, c_data = _check_c(cfg, instances)
    section.checks.append(check_c)
    d_checks, d_data = _check_d(cfg, rows)
    section.checks += d_checks
    section.figures += _figures(cfg, rows, instances, c_data, out, rng)
    write_csv(out / "mlm.csv", rows)
    section.data = {"large_alpha": c_data, **d_data, "sweep": {
        "points": len(points), "computed": sweep.computed, "resumed": sweep.resumed,
        "seconds": sweep.elapsed}, "elapsed_seconds": time.time() - started, "table": "mlm.csv"}
    write_json(out / "mlm.json", {
        "name": section.name, "passed": section.passed,
        "checks": [asdict(c) for c in section.checks], "figures": section.figures,
        "parameters": section.parameters, "data": section.data, "rows": rows,
    }, indent=1)
    return section
