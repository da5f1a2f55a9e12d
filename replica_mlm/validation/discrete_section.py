"""Validation section ``discrete``: the replica theory of pseudo-likelihood on Ising spins.

MLM with factored attention at one site of an Ising model is l2-penalised logistic regression of
the masked spin on the others with the logit label channel; the theory treats the spins as Gaussian
with their own covariance (docs: "Discrete spins"). Checks (numbered in the report):

* ``discrete.covariance``: the sampler's spin covariance against exact enumeration (L = 12):
  chi-square of the entry-wise z-scores, p-value above 1e-3;
* ``discrete.agreement``: per-site test cross-entropy, estimation error |w - w*|^2 and error rate
  of the theory against pseudo-likelihood fits on Boltzmann samples at high temperature
  (SK couplings, beta in {0.2, 0.4}): every |z| < 3 or relative gap < 3 %, z with the standard
  error of the simulation and (for sampled covariances) the jackknife error of the prediction;
* ``discrete.gaussian_inputs_near_threshold``: at the sampled alpha nearest each site's separability
  threshold alpha_c (where the finite-p rounding of the small-lam peak is largest), the
  pseudo-likelihood fits against logistic fits on Gaussian inputs with the same Sigma and teacher
  (``rm.simulate`` on the site's ``MaskedSite``): every |z| < 3. A gap to the theory that both share
  is a finite-p effect of the learning problem, not a failure of Gaussian equivalence;
* ``discrete.theory_near_threshold`` (full mode, L = 50 and 200): the theory against the many-seed
  Gaussian-input simulation at that alpha, test cross-entropy and estimation error within 3
  standard errors or 3 % (the criterion of ``discrete.agreement``, with the power to see the finite-L
  gap that a dozen pseudo-likelihood seeds cannot resolve);
* ``discrete.finite_size_near_threshold`` (with two sizes, i.e. full mode): where the Gaussian-input
  gap to the theory at that alpha and the smallest lam is resolved at the smallest L, it is smaller
  at the largest L by more than 2 standard errors (docs: "Finite size near the threshold");
* ``discrete.covariance_error`` (only where a covariance is sampled, i.e. full mode): the jackknife
  error of every prediction at most half the simulation's standard error (its bias is reported);
* ``discrete.peak_at_alpha_c``: the paper's fig. 3 (right) at q = 2: the peak of a site's theory
  test loss moves to the separability threshold alpha_c of the logit channel as lam -> 0 (relative
  gap shrinking monotonically, below 2 % at the smallest lam), and the simulated total MLM test
  loss (summed over sites) at small lam peaks at the sampled alpha where the theory's total does,
  or at a neighbour.

* ``discrete.local_agreement`` and ``discrete.local_matters``: the local theory (``theory="local"``)
  within 3 SE of pseudo-likelihood fits on a 10 x 10 periodic lattice and (full mode) a sparse Potts
  graph, a q = 3 Potts glass on a random 3-regular graph with L = 100, where Gaussian equivalence is
  off (:mod:`replica_mlm.validation.sparse_tables`; docs: "Sparse couplings");
* ``discrete.mixture_agreement`` and ``discrete.mixture_matters``: both theories of a masked site
  (``theory="gaussian"`` and ``theory="mixture"``) against ERM on discrete sequences where Gaussian
  equivalence is off (:mod:`replica_mlm.validation.discrete_mixture`; figure ``discrete_mixture``).

Towards the transition (beta = 0.7, 0.9, 1.2; full mode) the disagreement is measured and drawn,
not held to a threshold (table ``transition`` in ``discrete.json``, figure ``discrete_transition``).
Full mode: L = 50 and 200 with fewer seeds at 200, since per-site measures self-average (their
spread over data sets shrinks with p at fixed alpha); the simulations of one instance share one
pool of Boltzmann sequences per seed (nested training sets, see
:func:`replica_mlm.learners.pseudo_likelihood.simulate_nested`); ``workers`` processes run the
instances in parallel. Each finished instance is also written to ``discrete_blocks/``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import stats

from replica_mlm._base.io import write_json
from replica_mlm._base.pool import Task, run_tasks
from replica_mlm._base.stats import mean_stderr, zscore
from replica_mlm.validation import discrete_mixture, sparse_tables
from replica_mlm.validation.discrete_plots import figures as draw_figures
from replica_mlm.validation.discrete_plots import mixture_figure
from replica_mlm.validation.report import Check, Section

MEASURES = ("test_loss", "estimation_error", "eg")
Z_MAX, REL_MAX = 3.0, 0.03
#: largest accepted ratio of the prediction's jackknife error (sampled covariance) to the simulation's
COV_SE_MAX = 0.5


def _settings(quick: bool) -> dict:
    # seeds per L: per-site quantities self-average (their spread over data sets shrinks like
    # 1 / sqrt(p) at fixed alpha), so fewer seeds reach the same relative standard error at large L
    if quick:
        return dict(L=[16], betas=[0.2, 0.4], hot=[], hot_L=[], alphas=[0.5, 1.0, 4.0], lams=[1e-2, 1e-1],
                    seeds={16: 16}, gauss_seeds={16: 100}, hot_seeds=0, n_test=3000, cov_samples=40000,
                    cov_batches=10, fig_L=8,
                    fig_beta=0.4, fig_lam=1e-3, fig_seeds=8, fig_alphas=np.geomspace(0.5, 6.0, 8),
                    peak_lams=[1e-2, 1e-3, 1e-4, 1e-5], fig_extra=12)
    return dict(L=[50, 200], betas=[0.2, 0.4], hot=[0.7, 0.9, 1.2], hot_L=[50],
                alphas=list(np.geomspace(0.3, 5.0, 4)), lams=[1e-3, 1e-2, 1e-1], seeds={50: 12, 200: 5},
                gauss_seeds={50: 300, 200: 250},
                hot_seeds=8, n_test=500, cov_samples=8000, cov_batches=5, fig_L=16, fig_beta=0.4,
                fig_lam=1e-3, fig_seeds=10, fig_alphas=np.geomspace(0.4, 6.0, 8),
                peak_lams=[1e-2, 1e-3, 1e-4, 1e-5, 1e-6], fig_extra=16)


def _predict(model, cov, site: int, alpha: float, lam: float) -> dict[str, float]:
    import replica_mlm as rm
    from replica_mlm.tasks.ising_site import ising_site

    sp = rm.solve(ising_site(model, site, cov), alpha=alpha, lam=lam, loss="logistic")
    return {k: float(getattr(sp, k)) for k in MEASURES}


def _jackknife(model, cov, site: int, alpha: float, lam: float, full: dict[str, float]
               ) -> tuple[dict[str, float], dict[str, float]]:
    """Jackknife standard error and bias of the prediction over the covariance's batches (0 if exact)."""
    from replica_mlm.tasks.ising_site import SpinCovariance

    if cov.batches is None:
        return dict.fromkeys(MEASURES, 0.0), dict.fromkeys(MEASURES, 0.0)
    B = cov.batches.shape[0]
    total = cov.batches.sum(axis=0)
    rows = []
    for b in range(B):
        loo = SpinCovariance(covariance=(total - cov.batches[b]) / (B - 1), stderr=cov.stderr,
                             method=cov.method, n_samples=cov.n_samples, batches=None)
        rows.append(_predict(model, loo, site, alpha, lam))
    vals = {k: np.array([r[k] for r in rows]) for k in MEASURES}
    se = {k: float(np.sqrt((B - 1) / B * np.sum((v - v.mean()) ** 2))) for k, v in vals.items()}
    bias = {k: float((B - 1) * (v.mean() - full[k])) for k, v in vals.items()}
    return se, bias


def _blocks(s: dict) -> list[tuple[int, float]]:
    """The (L, beta) instances of the agreement check: held betas at every L, hot ones at ``hot_L``."""
    return ([(L, b) for L in s["L"] for b in s["betas"]]
            + [(L, b) for L in s["hot_L"] for b in s["hot"]])


def _agreement_block(L: int, beta: float, s: dict, rng: int, out: Path | None = None) -> list[dict]:
    """Theory against simulation on one SK instance: every alpha and lam of ``s``.

    With ``out``, the rows are also written to ``out/discrete_blocks/L{L}_beta{beta}.json`` as soon
    as the instance is done (progress of a long run; the section's numbers are in discrete.json).
    """
    import time

    import replica_mlm as rm
    from replica_mlm.learners.pseudo_likelihood import simulate_nested
    from replica_mlm.tasks.ising_site import ising_site, spin_covariance

    t0, c0 = time.time(), time.process_time()
    model = rm.PottsModel.random_ising(L=L, beta=beta, seed=rng)
    cov = spin_covariance(model, samples=s["cov_samples"], batches=s["cov_batches"], rng=rng)
    p = L - 1
    ns = sorted({max(1, round(float(a) * p)) for a in s["alphas"]})
    lams = np.asarray(s["lams"], dtype=float)
    seeds = s["hot_seeds"] if beta in s["hot"] else s["seeds"][L]
    # one pool of max(ns) + n_test sequences per seed; training sets nested (see simulate_nested)
    sim = simulate_nested(model, site=0, ns=ns, lam=lams, seeds=seeds, rng=rng + 1, n_test=s["n_test"])
    # the sampled alpha nearest the site's separability threshold: there the finite-p smearing of
    # the small-lam peak is largest; Gaussian inputs on the same Sigma separate it from non-Gaussianity
    task = ising_site(model, 0, cov)
    alpha_c = rm.separability_threshold(task)
    near = int(np.argmin([abs(n / p - alpha_c) for n in ns]))
    gauss = None
    if beta not in s["hot"]:
        g = rm.simulate(task, alpha=ns[near] / p, lam=lams, seeds=s["gauss_seeds"][L], rng=rng + 2,
                        loss="logistic")
        gauss = {k: getattr(g, k) for k in MEASURES}
    rows = []
    for a, n in enumerate(ns):
        for j, lam in enumerate(lams):
            th = _predict(model, cov, 0, n / p, float(lam))
            jk, bias = _jackknife(model, cov, 0, n / p, float(lam), th)
            row = dict(L=L, beta=beta, alpha=n / p, n=n, lam=float(lam), hot=beta in s["hot"],
                       covariance=cov.method, cov_samples=cov.n_samples, seeds=seeds,
                       sampler=str(sim["method"]), sweeps_between=int(sim["sweeps_between"]),
                       kkt=float(sim["kkt"]), alpha_c=alpha_c, near_threshold=a == near)
            for k in MEASURES:
                vals = sim[k][:, a, j]
                mean, sim_se = mean_stderr(vals)
                se = float(np.hypot(sim_se, jk[k]))
                row.update({k: th[k], f"{k}_sim": mean, f"{k}_sim_se": sim_se, f"{k}_se": se,
                            f"{k}_theory_se": jk[k], f"{k}_theory_bias": bias[k],
                            f"{k}_z": zscore(mean, th[k], se), f"{k}_rel": (mean - th[k]) / abs(th[k])})
                if gauss is not None and a == near:
                    row.update(_gaussian_columns(k, gauss[k][:, j], th[k], jk[k], mean, sim_se))
            rows.append(row)
    for r in rows:
        r["block_seconds"] = time.time() - t0
        r["block_cpu_seconds"] = time.process_time() - c0
    if out is not None:
        (out / "discrete_blocks").mkdir(exist_ok=True)
        write_json(out / "discrete_blocks" / f"L{L}_beta{beta:g}.json", rows, indent=1)
    return rows


def _gaussian_columns(k: str, vals: np.ndarray, theory: float, theory_se: float, disc: float,
                      disc_se: float) -> dict[str, float]:
    """Gaussian-input simulation of measure ``k`` against the theory and the discrete simulation.

    ``gauss_rel`` / ``gauss_rel_se``: relative gap (Gaussian - theory) / theory, its error from the
    Gaussian seeds and the theory's jackknife error (both use the sampled Sigma);
    ``disc_vs_gauss_z``: (discrete - Gaussian) over the two simulations' standard errors and the
    jackknife error (the Gaussian inputs use the sampled Sigma, the spins the true model).
    """
    mean, se = mean_stderr(vals)
    return {f"{k}_gauss": mean, f"{k}_gauss_se": se, f"{k}_gauss_seeds": int(vals.size),
            f"{k}_gauss_rel": (mean - theory) / abs(theory),
            f"{k}_gauss_rel_se": float(np.hypot(se, theory_se)) / abs(theory),
            f"{k}_disc_vs_gauss_z": zscore(disc, mean, float(np.sqrt(se**2 + disc_se**2 + theory_se**2)))}


def _compute(s: dict, rng: int, workers: int = 1, out: Path | None = None) -> tuple[list[dict], dict]:
    """Agreement rows (:func:`_agreement_block` over :func:`_blocks`) and fig. 3 right, in ``workers``
    processes (results do not depend on ``workers``: every block seeds itself)."""
    blocks = _blocks(s)
    # held instances first, largest first; then the figure; then the transition from the hottest
    held = sorted((k for k, b in enumerate(blocks) if b[1] not in s["hot"]), key=lambda k: -blocks[k][0])
    hot = sorted((k for k, b in enumerate(blocks) if b[1] in s["hot"]), key=lambda k: -blocks[k][1])
    order = [*held, None, *hot]  # None: the figure, started after the held instances
    tasks = [Task(_fig3_right, (s, rng)) if k is None else Task(_agreement_block, (*blocks[k], s, rng, out))
             for k in order]
    done = dict(zip(order, run_tasks(tasks, workers=workers), strict=True))
    fig = done.pop(None)
    return [r for k in range(len(blocks)) for r in done[k]], fig


def _peak(task, alpha_c: float, lam: float) -> float:
    """alpha of the largest theory test loss near alpha_c (bounded Brent in log alpha).

    Each evaluation starts the engine from the previous one's saddle point (a cold start only if
    that fails); the residual of every point is checked as for any other.
    """
    from scipy.optimize import minimize_scalar

    import replica_mlm as rm

    prev = []

    def minus_test_loss(la: float) -> float:
        alpha = float(np.exp(la))
        try:
            point = rm.solve(task, alpha=alpha, lam=lam, loss="logistic", init=prev[-1] if prev else None)
        except rm.ConvergenceError:
            if not prev:
                raise
            point = rm.solve(task, alpha=alpha, lam=lam, loss="logistic")
        prev.append(point)
        return -point.test_loss

    res = minimize_scalar(minus_test_loss, bounds=(np.log(0.5 * alpha_c), np.log(1.5 * alpha_c)),
                          method="bounded", options=dict(xatol=1e-3))
    return float(np.exp(res.x))


def _fig3_right(s: dict, rng: int) -> dict:
    import replica_mlm as rm
    from replica_mlm.learners.pseudo_likelihood import simulate_sites
    from replica_mlm.tasks.ising_site import ising_site, spin_covariance

    model = rm.PottsModel.random_ising(L=s["fig_L"], beta=s["fig_beta"], seed=rng + 1)
    cov = spin_covariance(model, samples=40000, rng=rng)
    L, p, lam = model.L, model.L - 1, s["fig_lam"]
    sites = [ising_site(model, i, cov) for i in range(L)]
    alpha_c = [rm.separability_threshold(t) for t in sites]
    ms = np.unique(np.round(s["fig_alphas"] * p).astype(int))
    # the total's peak is sharp at small lam: extra theory points across the sites' alpha_c
    near = np.linspace(0.85 * min(alpha_c), 1.15 * max(alpha_c), s["fig_extra"] // 2)
    grid = np.unique(np.concatenate([ms / p, np.geomspace(ms[0] / p, ms[-1] / p, s["fig_extra"]), near]))
    theory = sum(rm.learning_curve(t, alpha=grid, lam=lam, loss="logistic").test_loss for t in sites)
    # the peak of one site's test loss moves to its alpha_c as lam -> 0
    peaks = [_peak(sites[0], alpha_c[0], lm) for lm in s["peak_lams"]]
    totals = []
    for n in ms:
        out = simulate_sites(model, sites=range(L), n=int(n), lam=np.array([lam]), seeds=s["fig_seeds"],
                             rng=rng, n_test=s["n_test"])
        totals.append(out["test_loss"][:, :, 0].sum(axis=1))  # per seed: summed over sites
    totals = np.array(totals)
    return dict(L=L, beta=model.beta, lam=lam, alpha_fine=grid, theory_total=theory,
                alpha_c_sites=alpha_c, alpha_c_mean=float(np.mean(alpha_c)), M=ms, alpha_sim=ms / p,
                sim_mean=totals.mean(axis=1),
                sim_se=mean_stderr(totals, axis=1).stderr,
                theory_at_sim=theory[np.searchsorted(grid, ms / p)],
                peak_lams=s["peak_lams"], site0_peaks=peaks,
                site0_gaps=[abs(a / alpha_c[0] - 1.0) for a in peaks])


def _covariance_check(rng: int) -> dict:
    import replica_mlm as rm
    from replica_mlm.tasks.ising_site import spin_covariance

    model = rm.PottsModel.random_ising(L=12, beta=0.4, seed=rng)
    exact = spin_covariance(model).covariance
    sampled = spin_covariance(model, exact=False, samples=20000, rng=rng)
    iu = np.triu_indices(model.L, 1)
    z = zscore(sampled.covariance[iu], exact[iu], sampled.stderr[iu])
    return dict(chi2=float(np.sum(z**2)), dof=int(z.size), p_value=float(stats.chi2.sf(np.sum(z**2), z.size)),
                max_abs_z=float(np.abs(z).max()), method=sampled.method)


def run(out: Path, *, quick: bool = True, rng: int = 0, workers: int = 1) -> Section:
    """Run the section into ``out`` (figures ``discrete_*.png/.pdf``, numbers in ``discrete.json``).

    ``workers`` > 1 runs the (L, beta) instances and the figure in that many processes.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    s = _settings(quick)
    cov = _covariance_check(rng)
    rows, fig = _compute(s, rng, workers, out)

    held = [r for r in rows if not r["hot"]]
    # z uses the standard error estimated from the seeds: Student's t with seeds - 1 degrees of freedom
    # (with 5 seeds P(|t| >= 3) = 4 %, not the 0.27 % that "3 standard errors" means); it is held on
    # the normal scale, at the same tail probability
    for r in held:
        for k in MEASURES:
            r[f"{k}_z_normal"] = normal_equivalent(r[f"{k}_z"], r["seeds"] - 1)
    bad = [(r, k) for r in held for k in MEASURES
           if abs(r[f"{k}_z_normal"]) >= Z_MAX and abs(r[f"{k}_rel"]) >= REL_MAX]
    outside = "".join(f" [L = {r['L']}, beta = {r['beta']:g}, alpha = {r['alpha']:.2f} (alpha_c = "
                      f"{r['alpha_c']:.2f}), lam = {r['lam']:g}: {k} t = {r[f'{k}_z']:+.2f}, normal "
                      f"scale {r[f'{k}_z_normal']:+.2f}, {100 * r[f'{k}_rel']:+.1f} %]" for r, k in bad)
    worst_z = max(abs(r[f"{k}_z_normal"]) for r in held for k in MEASURES)
    worst_t = max(abs(r[f"{k}_z"]) for r in held for k in MEASURES)
    sampled = [r for r in held if r["covariance"] != "exact"]
    # the covariance's statistical error (jackknife over its batches) against the simulations' own
    ratio = max((r[f"{k}_theory_se"] / r[f"{k}_sim_se"] for r in sampled for k in MEASURES), default=0.0)
    bias = max((abs(r[f"{k}_theory_bias"]) / r[f"{k}_se"] for r in sampled for k in MEASURES), default=0.0)
    sim_peak = int(np.argmax(fig["sim_mean"]))
    theory_peak = int(np.argmax(fig["theory_at_sim"]))
    gaps = fig["site0_gaps"]
    checks = [
        Check("discrete.covariance", cov["p_value"] > 1e-3, cov["p_value"], 1e-3,
              f"sampled ({cov['method']}) vs exact spin covariance at L = 12, beta = 0.4: chi-square "
              f"{cov['chi2']:.1f} on {cov['dof']} entries, max |z| = {cov['max_abs_z']:.2f}"),
        Check("discrete.agreement", not bad, worst_z, [Z_MAX, REL_MAX],
              f"{len(held)} (L, beta, alpha, lam) points x {len(MEASURES)} measures at beta in "
              f"{s['betas']}, L in {s['L']}: theory vs pseudo-likelihood fits, |z| < 3 or relative gap "
              f"< 3 %, z = (simulation - theory) / standard error taken from Student's t with seeds - 1 "
              f"degrees of freedom to the normal scale; {len(bad)} outside{outside}; largest |z| = "
              f"{worst_z:.2f} (largest |t| = {worst_t:.2f}); seeds per L {s['seeds']}"),
        Check("discrete.peak_at_alpha_c",
              bool(gaps[-1] < 0.02 and all(np.diff(gaps) < 0) and abs(sim_peak - theory_peak) <= 1),
              gaps[-1], 0.02,
              f"site 0: the theory's test-loss peak approaches alpha_c = {fig['alpha_c_sites'][0]:.3f} "
              f"as lam -> 0 (relative gaps {', '.join(f'{g:.3f}' for g in gaps)} at lam = "
              f"{fig['peak_lams']}); total MLM loss at lam = {fig['lam']:g}: simulations peak at "
              f"alpha = {fig['alpha_sim'][sim_peak]:.3f}, theory (same grid) at "
              f"{fig['alpha_sim'][theory_peak]:.3f}"),
    ]
    checks.insert(2, _gaussian_check(held))
    if len(s["L"]) > 1:  # full mode: L = 50 and 200, the sizes the agreement is claimed for
        checks.insert(3, _threshold_check(held))
        checks.insert(4, _finite_size_check(held))
    if sampled:  # quick mode enumerates every covariance exactly: nothing to hold
        checks.insert(2, Check(
            "discrete.covariance_error", ratio < COV_SE_MAX, ratio, COV_SE_MAX,
            f"{len(sampled)} points with a sampled covariance ({s['cov_samples']} sequences, "
            f"{s['cov_batches']} batches): the jackknife error of the prediction is at most {ratio:.3f} "
            f"of the simulation's standard error (it is added in quadrature to the z-scores); its "
            f"jackknife bias at most {bias:.3f} standard errors"))
    figures = _figures(out, rows, fig, s)
    # both theories (Gaussian equivalence and the Gaussian mixture) against ERM on discrete sequences
    mix_settings, mix_sites = discrete_mixture.compute(quick, rng)
    checks += discrete_mixture.checks(mix_sites)
    figures += mixture_figure(out, mix_sites)
    # the local theory on sparse couplings: a lattice and a sparse Potts graph (docs: "Sparse couplings")
    local_rows = [r for inst in sparse_tables.section_instances(quick=quick)
                  for r in sparse_tables.measure(inst, rng=rng)]
    checks += sparse_tables.checks(local_rows)
    data = dict(covariance=cov, agreement=rows, fig3_right=fig, transition=_transition(rows),
                mixture=dict(settings=mix_settings, sites=mix_sites), local=local_rows)
    write_json(out / "discrete.json", data, indent=1)
    return Section(name="discrete", checks=checks, figures=figures, data={"file": "discrete.json"},
                   parameters={k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in s.items()})


def normal_equivalent(t: float, dof: int) -> float:
    """The normal deviate with the same one-sided tail probability as Student's ``t`` at ``dof``."""
    return float(np.sign(t) * stats.norm.isf(stats.t.sf(abs(t), dof)))


def _gaussian_check(held: list[dict]) -> Check:
    """Near the threshold the pseudo-likelihood fits agree with Gaussian inputs on the same Sigma."""
    near = [r for r in held if r["near_threshold"]]
    # on the normal scale as in discrete.agreement, with Welch's degrees of freedom of the two
    # simulations' standard errors (the jackknife term taken as exact)
    z = []
    for r in near:
        for k in MEASURES:
            v1, v2 = r[f"{k}_sim_se"] ** 2, r[f"{k}_gauss_se"] ** 2
            dof = (v1 + v2) ** 2 / (v1**2 / (r["seeds"] - 1) + v2**2 / (r[f"{k}_gauss_seeds"] - 1))
            z.append(abs(normal_equivalent(r[f"{k}_disc_vs_gauss_z"], dof)))
    bad = sum(v >= Z_MAX for v in z)
    worst = max(z)
    alphas = ", ".join(sorted({f"{r['alpha']:.2f}" for r in near}))
    alpha_c = ", ".join(sorted({f"{r['alpha_c']:.2f}" for r in near}))
    seeds = ", ".join(sorted({str(r["test_loss_gauss_seeds"]) for r in near}))
    return Check(
        "discrete.gaussian_inputs_near_threshold", bad == 0, worst, Z_MAX,
        f"{len(near)} (L, beta, lam) points at the sampled alpha nearest each site's alpha_c "
        f"(alpha = {alphas}; alpha_c = {alpha_c}) x {len(MEASURES)} measures: pseudo-likelihood fits "
        f"on Boltzmann samples against logistic fits on Gaussian inputs with the same Sigma and teacher "
        f"({seeds} seeds), |z| < 3 (normal scale, Welch's degrees of freedom); {bad} outside; largest "
        f"|z| = {worst:.2f}. A gap to the theory "
        f"shared by both is finite-p, not non-Gaussianity")


def _threshold_check(held: list[dict]) -> Check:
    """The theory against the many-seed Gaussian-input simulation at the sampled alpha nearest alpha_c.

    The agreement criterion of ``discrete.agreement`` (|z| < 3 or relative gap < 3 %) with the
    Gaussian-input simulation, whose hundreds of seeds resolve what the few pseudo-likelihood seeds
    cannot: the finite-p gap of docs "Finite size near the threshold".
    """
    near = [r for r in held if r["near_threshold"]]
    out, worst = [], 0.0
    for r in near:
        for k in ("test_loss", "estimation_error"):
            g, se = r[f"{k}_gauss_rel"], r[f"{k}_gauss_rel_se"]
            worst = max(worst, abs(g) / se)
            if abs(g) >= Z_MAX * se and abs(g) >= REL_MAX:
                out.append(f"L = {r['L']}, beta = {r['beta']:g}, lam = {r['lam']:g}: {k} "
                           f"{100 * g:+.1f} ± {100 * se:.1f} %")
    return Check(
        "discrete.theory_near_threshold", not out, worst, [Z_MAX, REL_MAX],
        f"{len(near)} (L, beta, lam) points at the sampled alpha nearest each site's alpha_c: the "
        f"theory against logistic fits on Gaussian inputs with the same Sigma "
        f"({near[0]['test_loss_gauss_seeds']}+ seeds), test cross-entropy and estimation error within "
        f"3 standard errors or 3 %; {len(out)} outside"
        + (f" ({'; '.join(out)})" if out else "")
        + ". The theory is the L -> infinity limit; near alpha_c at small lam the finite-L gap "
        "decays like 1/sqrt(L - 1) (docs: 'Finite size near the threshold')")


def _finite_size_check(held: list[dict]) -> Check:
    """The Gaussian-input gap to the theory near the threshold shrinks from the smallest to the largest L.

    Held where the gap at the smallest L is resolved (|gap| > 3 standard errors) at the smallest
    lam: there the largest L's |gap| must be smaller by more than 2 combined standard errors.
    """
    near = [r for r in held if r["near_threshold"]]
    lam = min(r["lam"] for r in near)
    lo, hi = min(r["L"] for r in near), max(r["L"] for r in near)
    pairs, bad, parts = 0, 0, []
    for beta in sorted({r["beta"] for r in near}):
        a, b = (next(r for r in near if (r["L"], r["beta"], r["lam"]) == (L, beta, lam)) for L in (lo, hi))
        for k in ("test_loss", "estimation_error"):
            g0, s0, g1, s1 = (a[f"{k}_gauss_rel"], a[f"{k}_gauss_rel_se"], b[f"{k}_gauss_rel"],
                              b[f"{k}_gauss_rel_se"])
            # the exponent a of |gap| ~ p^-a between the two sizes (where both gaps share a sign)
            expo = np.log(g0 / g1) / np.log((hi - 1) / (lo - 1)) if g0 * g1 > 0 else float("nan")
            parts.append(f"beta {beta:g} {k}: {100 * g0:+.1f} ± {100 * s0:.1f} % at L = {lo}, "
                         f"{100 * g1:+.1f} ± {100 * s1:.1f} % at L = {hi} (p^-a with a = {expo:.2f})")
            if abs(g0) > Z_MAX * s0:
                pairs += 1
                bad += not (abs(g0) - abs(g1) > 2.0 * np.hypot(s0, s1))
    return Check(
        "discrete.finite_size_near_threshold", pairs > 0 and bad == 0, bad, 0,
        f"relative gap (Gaussian-input simulation - theory) / theory at the sampled alpha nearest "
        f"alpha_c, lam = {lam:g}: {'; '.join(parts)}. Where resolved at L = {lo} ({pairs} cases) the "
        f"gap must shrink at L = {hi} by more than 2 standard errors; {bad} did not")


def _transition(rows: list[dict]) -> list[dict]:
    """Per (L, beta): median and largest |relative gap| and largest |z| of each measure."""
    table = []
    for L, beta in sorted({(r["L"], r["beta"]) for r in rows}):
        pts = [r for r in rows if (r["L"], r["beta"]) == (L, beta)]
        entry = dict(L=L, beta=beta, points=len(pts), sampler=pts[0]["sampler"],
                     sweeps_between=pts[0]["sweeps_between"], seconds=pts[0]["block_seconds"],
                     cpu_seconds=pts[0].get("block_cpu_seconds", float("nan")))
        for k in MEASURES:
            rel = np.abs([r[f"{k}_rel"] for r in pts])
            entry.update({f"{k}_median_rel": float(np.median(rel)), f"{k}_max_rel": float(rel.max()),
                          f"{k}_max_z": float(np.max(np.abs([r[f"{k}_z"] for r in pts])))})
        table.append(entry)
    return table


def _figures(out: Path, rows: list[dict], fig: dict, s: dict) -> list[str]:
    """The section's figures (:func:`replica_mlm.validation.discrete_plots.figures`) with its
    transition table and its threshold on the relative deviation."""
    return draw_figures(out, rows, fig, s, transition=_transition(rows), rel_max=REL_MAX)
