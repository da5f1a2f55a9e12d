"""Validation section ``erm``: square and logistic losses, theory lines against ERM simulations.

On one Gaussian Potts masked site (docs/theory.md, sections 6 and 7):

1-3. theory vs ERM, z-scores of eg, test loss, training loss and estimation error at every simulated
     (alpha, lam), |z| < 4, for square loss with the gaussian channel, square loss with the sign
     channel and logistic loss with the sign channel (simulated alphas are away from alpha = 1 and
     from alpha_c, where finite-p corrections are large);
4.   the square-loss eg at small lam peaks at alpha = 1 (located by bounded Brent on the theory);
5.   the logistic test cross-entropy at small lam peaks near the separability threshold alpha_c
     (Candes-Sur), not at alpha = 1, and moves towards alpha_c as lam decreases;
6.   the sign-channel eg of a trained estimator, arccos(m / sqrt(q (rho + sigma^2))) / pi, against
     its empirical error on a fresh test sample (z-score);
7.   alpha_c = 2 without signal (Cover 1965); in full mode also an LP separability experiment on the
     site (fraction of separable training sets below and above alpha_c).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from replica_mlm._base.io import write_json
from replica_mlm._base.pool import Task, run_tasks
from replica_mlm._base.stats import zscore
from replica_mlm.validation.report import Check, Section

Z_MAX = 4.0


@dataclass(frozen=True)
class ERMSettings:
    L: int
    shift: float
    instance_seed: int
    seeds: int
    alphas: tuple[float, ...]
    lams: tuple[float, ...]
    logistic_alphas: tuple[float, ...]
    line_points: int
    peak_lams: tuple[float, ...]
    test_samples: int
    lp_instances: int


def settings(quick: bool) -> ERMSettings:
    if quick:
        return ERMSettings(L=201, shift=3.0, instance_seed=0, seeds=20, alphas=(0.5, 2.0), lams=(1e-3, 0.1),
                           logistic_alphas=(1.0, 3.5), line_points=10, peak_lams=(1e-3, 1e-4),
                           test_samples=400_000, lp_instances=0)
    return ERMSettings(L=401, shift=3.0, instance_seed=0, seeds=40, alphas=(0.3, 0.6, 1.6, 2.5, 4.0),
                       lams=(1e-3, 0.1), logistic_alphas=(0.6, 1.2, 3.0, 4.5), line_points=40,
                       peak_lams=(1e-3, 1e-4, 1e-5), test_samples=2_000_000, lp_instances=10)


def _theory(site, alpha, lam, loss, channel) -> dict:
    from replica_mlm import solve

    sp = solve(site, alpha=alpha, lam=lam, loss=loss, channel=channel)
    return {k: float(getattr(sp, k)) for k in ("eg", "test_loss", "train_loss", "estimation_error")}


def _z_point(site, cfg, loss, channel, alpha, k, rng) -> list[dict]:
    """Rows (one per lam) of simulated alpha number ``k``, trained on samples from ``rng``."""
    from replica_mlm import simulate

    rows = []
    sim = simulate(site, alpha=alpha, lam=list(cfg.lams), seeds=cfg.seeds, rng=rng, loss=loss,
                   channel=channel)
    for j, lam in enumerate(sim.lam):
        th = _theory(site, sim.alpha, lam, loss, channel)
        row = {"loss": loss, "channel": channel, "alpha": sim.alpha, "lam": float(lam), "point": k,
               "kkt_max": float(np.max(sim.kkt_residual[:, j]))}
        for key, val in th.items():
            mean, err = getattr(sim, f"{key}_mean")[j], getattr(sim, f"{key}_stderr")[j]
            row.update({f"{key}_mean": float(mean), f"{key}_stderr": float(err), f"{key}_theory": val,
                        f"{key}_z": float((mean - val) / max(err, 1e-12))})  # round-off floor
        rows.append(row)
    return rows


def _z_check(number: int, rows: list[dict], label: str) -> Check:
    zs = [r[f"{k}_z"] for r in rows for k in ("eg", "test_loss", "train_loss", "estimation_error")]
    worst = float(np.max(np.abs(zs)))
    kkt = max(r["kkt_max"] for r in rows)
    return Check(name=f"erm.{number}.{label}_z", passed=worst < Z_MAX, value=worst, threshold=Z_MAX,
                 detail=f"{label.replace('_', '/')}: max |z| of eg, test/train loss and estimation error "
                        f"over "
                        f"{len(rows)} (alpha, lam) points = {worst:.2f} (< {Z_MAX}); largest certified "
                        f"optimiser error |w - w_exact| = {kkt:.1e}")


def _peak(fn, lo: float, hi: float) -> float:
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda a: -fn(a), bounds=(lo, hi), method="bounded", options={"xatol": 1e-3})
    return float(res.x)


#: test samples drawn at a time by the sign-channel check (160 MB of normals at p = 400)
TEST_CHUNK = 50_000


def _test_errors(site, w: np.ndarray, n: int, rng: np.random.Generator) -> int:
    """Sign errors of ``sign(x . w)`` against ``sign(y)`` on ``n`` fresh samples of the site.

    The same law as :meth:`MaskedSite.sample`, drawn in the eigenbasis of Sigma: with
    Sigma = U diag(omega) U^T and x = (z sqrt(omega)) U^T, ``x . v = (z sqrt(omega)) . (U^T v)``,
    so only the two projections are formed, ``TEST_CHUNK`` samples at a time (memory O(chunk p)
    instead of three n x p arrays and an n p^2 rotation).
    """
    omega, u = np.linalg.eigh(site.covariance)
    proj = np.sqrt(np.clip(omega, 0.0, None))[:, None] * (u.T @ np.column_stack([w, site.teacher]))
    wrong = 0
    for start in range(0, n, TEST_CHUNK):
        size = min(TEST_CHUNK, n - start)
        xw, signal = (rng.standard_normal((size, site.p)) @ proj).T
        noisy = signal + math.sqrt(site.noise) * rng.standard_normal(size)
        wrong += int(np.count_nonzero(np.sign(xw) != np.where(noisy >= 0, 1.0, -1.0)))
    return wrong


def _sign_eg_check(site, cfg, rng) -> Check:
    from replica_mlm.learners import erm
    n = round(2.0 * site.p)
    x, noisy = site.sample(n, rng=rng)  # noisy = w* . x + sigma eps, the gaussian channel's label
    y = np.where(noisy >= 0, 1.0, -1.0)  # the sign channel's label, sign(w* . x + sigma eps)
    w, _ = erm.fit(x, y, np.array([0.1]), "logistic", 1.0)
    w = w[:, 0]
    m, q = float(site.teacher @ site.covariance @ w), float(w @ site.covariance @ w)
    closed = math.acos(m / math.sqrt(q * site.c_ii)) / math.pi
    size = cfg.test_samples
    rate = _test_errors(site, w, size, rng) / size
    se = math.sqrt(rate * (1 - rate) / size)  # the standard error of a mean of 0/1 values (ddof 0)
    z = zscore(rate, closed, se)
    return Check(name="erm.6.sign_eg_arccos", passed=abs(z) < Z_MAX, value=float(z), threshold=Z_MAX,
                 detail=f"logistic estimator (alpha = 2, lam = 0.1): arccos closed form {closed:.5f} vs "
                        f"{size} fresh test samples {rate:.5f} ± {se:.5f}, z = {z:.2f}")


def _separable(site, alpha, rng) -> bool:
    """Whether one training set of ``round(alpha p)`` samples is linearly separable (an LP)."""
    from scipy.optimize import linprog

    n, p = round(alpha * site.p), site.p
    x, noisy = site.sample(n, rng=rng)
    yx = np.where(noisy >= 0, 1.0, -1.0)[:, None] * x
    res = linprog(np.r_[np.zeros(p), -1.0], A_ub=np.hstack([-yx, np.ones((n, 1))]), b_ub=np.zeros(n),
                  bounds=[(-1, 1)] * p + [(None, 1)], method="highs")
    return bool(res.status == 0 and -res.fun > 1e-6)


def _cross_entropy_peak(site, lam, lo, hi) -> float:
    """alpha of the largest logistic test cross-entropy (sign channel) on [lo, hi]."""
    from replica_mlm import solve

    return _peak(lambda a: solve(site, alpha=a, lam=lam, loss="logistic", channel="sign").test_loss, lo, hi)


def _figure(site, cfg, rows, lines, ac, out: Path) -> list[str]:
    from replica_mlm.plotting import plot_erm_curves

    fig = plot_erm_curves(lines, rows, alpha_c=ac, path=out / "erm_curves",
                          title=f"L = {cfg.L}: replica (lines) and ERM (mean ± s.e., {cfg.seeds} sets)")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return ["erm_curves.png", "erm_curves.pdf"]


def run(out: Path, *, quick: bool = True, rng: int = 0, workers: int = 1) -> Section:
    """Run the section (see the module docstring); writes ``erm.json`` and the figure into ``out``.

    ``workers`` processes run the independent pieces (one ERM simulation per alpha, the sign-channel
    test, each LP training set, each logistic peak search); each piece has its own generator
    spawned here, so the numbers do not depend on ``workers``.
    """
    from replica_mlm import GaussianPotts, Spectrum, learning_curve, separability_threshold, solve

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    cfg = settings(quick)
    site = GaussianPotts.random(L=cfg.L, shift=cfg.shift, seed=cfg.instance_seed).masked_site(0)
    gen = np.random.default_rng(np.random.SeedSequence([rng, 10]))
    ac = separability_threshold(site, channel="sign")
    section = Section(name="erm: square and logistic losses, theory vs ERM (docs/theory.md, "
                           "sections 6-7)")
    section.parameters = {"quick": quick, "rng": rng, "settings": asdict(cfg), "z_max": Z_MAX,
                          "seeds_rule": "SeedSequence([rng, 10]) spawns one child per simulated alpha, "
                                        "then one per LP training set; the sign-channel test uses it "
                                        "itself"}

    groups = [("square", "gaussian", cfg.alphas), ("square", "sign", cfg.alphas),
              ("logistic", "sign", cfg.logistic_alphas)]
    z_tasks = [Task(_z_point, (site, cfg, loss, channel, alpha, k, gen.spawn(1)[0]))
               for loss, channel, alphas in groups for k, alpha in enumerate(alphas)]
    lp_alphas = [0.85 * ac] * cfg.lp_instances + [1.15 * ac] * cfg.lp_instances
    lp_tasks = [Task(_separable, (site, a, child)) for a, child in zip(lp_alphas, gen.spawn(len(lp_alphas)),
                                                                          strict=True)]
    peak_tasks = [Task(_cross_entropy_peak, (site, lam, 1.2, 1.2 * ac)) for lam in cfg.peak_lams]
    # the sign-channel test (the longest piece) first, then the logistic simulations
    z_order = sorted(range(len(z_tasks)), key=lambda j: z_tasks[j].args[2] != "logistic")
    done = run_tasks([Task(_sign_eg_check, (site, cfg, gen))] + [z_tasks[j] for j in z_order]
                     + lp_tasks + peak_tasks, workers=workers)
    sign_check = done[0]
    z_done = dict(zip(z_order, done[1:1 + len(z_tasks)], strict=True))
    separable = done[1 + len(z_tasks):1 + len(z_tasks) + len(lp_tasks)]
    peaks = done[1 + len(z_tasks) + len(lp_tasks):]

    rows, j = {}, 0
    for number, (loss, channel, alphas) in enumerate(groups, start=1):
        rows[(loss, channel)] = [r for k in range(j, j + len(alphas)) for r in z_done[k]]
        j += len(alphas)
        section.checks.append(_z_check(number, rows[(loss, channel)], f"{loss}_{channel}"))

    # 4. square-loss interpolation peak at alpha = 1
    lam_small = min(cfg.peak_lams)
    a_sq = _peak(lambda a: solve(site, alpha=a, lam=lam_small).eg, 0.5, 1.5)
    section.checks.append(Check(
        name="erm.4.square_peak_at_1", passed=abs(a_sq - 1.0) < 0.02, value=a_sq, threshold=[0.98, 1.02],
        detail=f"square loss, gaussian channel, lam = {lam_small:g}: eg peaks at alpha = {a_sq:.4f}"))

    # 5. logistic cross-entropy peak moves to alpha_c as lam -> 0 (peaks computed above)
    dist = [abs(p - ac) for p in peaks]
    ok = all(b < a for a, b in itertools.pairwise(dist)) and dist[-1] < abs(peaks[-1] - 1.0) / 4
    section.checks.append(Check(
        name="erm.5.logistic_peak_at_alpha_c", passed=bool(ok), value=peaks, threshold={"alpha_c": ac},
        detail=f"logistic loss, sign channel: test cross-entropy peaks at alpha = "
               f"{', '.join(f'{p:.4f}' for p in peaks)} for lam = "
               f"{', '.join(f'{x:g}' for x in cfg.peak_lams)}, "
               f"approaching alpha_c = {ac:.4f} as lam decreases and 4x closer to alpha_c than to 1"))

    section.checks.append(sign_check)

    # 7. Cover: alpha_c = 2 without signal; full mode: LP experiment on the site
    flat = Spectrum(omega=site.spectrum.omega, bulk=site.spectrum.bulk,
                    teacher=np.zeros(site.p), noise=site.noise)
    cover = separability_threshold(flat, channel="sign")
    value = {"alpha_c_no_signal": cover, "alpha_c_site": ac}
    passed = abs(cover - 2.0) < 1e-12
    detail = f"alpha_c without signal = {cover!r} (Cover: 2); site: alpha_c = {ac:.6f}"
    if cfg.lp_instances:
        below = sum(separable[:cfg.lp_instances]) / cfg.lp_instances
        above = sum(separable[cfg.lp_instances:]) / cfg.lp_instances
        value.update(separable_below=below, separable_above=above)
        passed = passed and below >= 0.9 and above <= 0.1
        detail += (f"; LP: {below:.0%} of {cfg.lp_instances} sets separable at 0.85 alpha_c, "
                   f"{above:.0%} at 1.15 alpha_c")
    section.checks.append(Check(name="erm.7.separability", passed=bool(passed), value=value,
                                threshold={"cover": 2.0, "below": ">= 0.9", "above": "<= 0.1"},
                                detail=detail))

    grid = np.linspace(0.2, 4.5, cfg.line_points)
    lines = {
        ("square", "gaussian"): learning_curve(site, alpha=np.linspace(0.05, 4.5, 300), lam=1e-3),
        ("square", "sign"): learning_curve(site, alpha=grid, lam=1e-3, loss="square", channel="sign"),
        ("logistic", "sign"): learning_curve(site, alpha=grid, lam=1e-3, loss="logistic", channel="sign"),
    }
    all_rows = [r for rs in rows.values() for r in rs]
    section.figures += _figure(site, cfg, all_rows, lines, ac, out)
    section.data = {"rows": all_rows, "alpha_c": ac, "peaks": peaks, "square_peak": a_sq,
                    "elapsed_seconds": time.time() - started}
    write_json(out / "erm.json", {
        "name": section.name, "passed": section.passed, "checks": [asdict(c) for c in section.checks],
        "figures": section.figures, "parameters": section.parameters, "data": section.data},
        indent=1)
    return section
