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
* ``discrete.peak_at_alpha_c``: the paper's fig. 3 (right) at q = 2: the peak of a site's theory
  test loss moves to the separability threshold alpha_c of the logit channel as lam -> 0 (relative
  gap shrinking monotonically, below 2 % at the smallest lam), and the simulated total MLM test
  loss (summed over sites) at small lam peaks at the sampled alpha where the theory's total does,
  or at a neighbour.

Towards the transition (beta = 0.7, 0.9, 1.2; full mode) the disagreement is measured and drawn,
not held to a threshold.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy import stats

from replica_mlm.validation.report import Check, Section, _jsonable, atomic_write_text

MEASURES = ("test_loss", "estimation_error", "eg")
Z_MAX, REL_MAX = 3.0, 0.03


def _settings(quick: bool) -> dict:
    if quick:
        return dict(L=[16], betas=[0.2, 0.4], hot=[], alphas=[0.5, 1.0, 4.0], lams=[1e-2, 1e-1],
                    seeds=16, n_test=3000, fig_L=8, fig_beta=0.4, fig_lam=1e-3, fig_seeds=8,
                    fig_alphas=np.geomspace(0.5, 6.0, 8), peak_lams=[1e-2, 1e-3, 1e-4, 1e-5],
                    fig_extra=0)
    return dict(L=[50, 100], betas=[0.2, 0.4], hot=[0.7, 0.9, 1.2],
                alphas=list(np.geomspace(0.3, 5.0, 6)), lams=[1e-3, 1e-2, 1e-1], seeds=40,
                n_test=8000, fig_L=16, fig_beta=0.4, fig_lam=1e-3, fig_seeds=20,
                fig_alphas=np.geomspace(0.4, 6.0, 13), peak_lams=[1e-2, 1e-3, 1e-4, 1e-5, 1e-6],
                fig_extra=30)


def _predict(model, cov, site: int, alpha: float, lam: float) -> dict[str, float]:
    import replica_mlm as rm
    from replica_mlm.models.ising import ising_site

    sp = rm.solve(ising_site(model, site, cov), alpha=alpha, lam=lam, loss="logistic")
    return {k: float(getattr(sp, k)) for k in MEASURES}


def _jackknife(model, cov, site: int, alpha: float, lam: float) -> dict[str, float]:
    """Jackknife standard error of the prediction over the covariance's batches (0 if exact)."""
    from replica_mlm.models.ising import SpinCovariance

    if cov.batches is None:
        return dict.fromkeys(MEASURES, 0.0)
    B = cov.batches.shape[0]
    total = cov.batches.sum(axis=0)
    rows = []
    for b in range(B):
        loo = SpinCovariance(covariance=(total - cov.batches[b]) / (B - 1), stderr=cov.stderr,
                             method=cov.method, n_samples=cov.n_samples, batches=None)
        rows.append(_predict(model, loo, site, alpha, lam))
    return {k: float(np.sqrt((B - 1) / B * np.sum((np.array([r[k] for r in rows])
                                                   - np.mean([r[k] for r in rows])) ** 2)))
            for k in MEASURES}


def _agreement(s: dict, rng: int) -> list[dict]:
    import replica_mlm as rm
    from replica_mlm.models.ising import spin_covariance

    rows = []
    for L in s["L"]:
        for beta in [*s["betas"], *s["hot"]]:
            model = rm.PottsModel.random_ising(L=L, beta=beta, seed=rng)
            cov = spin_covariance(model, samples=40000, rng=rng)
            for alpha in s["alphas"]:
                sim = rm.simulate(model, site=0, alpha=float(alpha), lam=s["lams"], seeds=s["seeds"],
                                  rng=rng, loss="logistic", n_test=s["n_test"])
                for j, lam in enumerate(s["lams"]):
                    th = _predict(model, cov, 0, sim.alpha, lam)
                    jk = _jackknife(model, cov, 0, sim.alpha, lam)
                    row = dict(L=L, beta=beta, alpha=sim.alpha, lam=lam, hot=beta in s["hot"],
                               covariance=cov.method)
                    for k in MEASURES:
                        mean = float(getattr(sim, f"{k}_mean")[j])
                        se = float(np.hypot(getattr(sim, f"{k}_stderr")[j], jk[k]))
                        row.update({k: th[k], f"{k}_sim": mean, f"{k}_se": se,
                                    f"{k}_theory_se": jk[k], f"{k}_z": (mean - th[k]) / se,
                                    f"{k}_rel": (mean - th[k]) / abs(th[k])})
                    rows.append(row)
    return rows


def _peak(task, alpha_c: float, lam: float) -> float:
    """alpha of the largest theory test loss near alpha_c (bounded Brent in log alpha)."""
    from scipy.optimize import minimize_scalar

    import replica_mlm as rm

    res = minimize_scalar(
        lambda la: -rm.solve(task, alpha=float(np.exp(la)), lam=lam, loss="logistic").test_loss,
        bounds=(np.log(0.5 * alpha_c), np.log(1.5 * alpha_c)), method="bounded",
        options=dict(xatol=1e-3))
    return float(np.exp(res.x))


def _fig3_right(s: dict, rng: int) -> dict:
    import replica_mlm as rm
    from replica_mlm.models.ising import ising_site, spin_covariance
    from replica_mlm.models.pseudo_likelihood import simulate_sites

    model = rm.PottsModel.random_ising(L=s["fig_L"], beta=s["fig_beta"], seed=rng + 1)
    cov = spin_covariance(model, samples=40000, rng=rng)
    L, p, lam = model.L, model.L - 1, s["fig_lam"]
    sites = [ising_site(model, i, cov) for i in range(L)]
    alpha_c = [rm.separability_threshold(t) for t in sites]
    ms = np.unique(np.round(s["fig_alphas"] * p).astype(int))
    grid = np.unique(np.concatenate([ms / p, np.geomspace(ms[0] / p, ms[-1] / p, s["fig_extra"])]))
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
                sim_se=totals.std(axis=1, ddof=1) / np.sqrt(totals.shape[1]),
                theory_at_sim=theory[np.searchsorted(grid, ms / p)],
                peak_lams=s["peak_lams"], site0_peaks=peaks,
                site0_gaps=[abs(a / alpha_c[0] - 1.0) for a in peaks])


def _covariance_check(rng: int) -> dict:
    import replica_mlm as rm
    from replica_mlm.models.ising import spin_covariance

    model = rm.PottsModel.random_ising(L=12, beta=0.4, seed=rng)
    exact = spin_covariance(model).covariance
    sampled = spin_covariance(model, exact=False, samples=20000, rng=rng)
    iu = np.triu_indices(model.L, 1)
    z = (sampled.covariance - exact)[iu] / sampled.stderr[iu]
    return dict(chi2=float(np.sum(z**2)), dof=int(z.size), p_value=float(stats.chi2.sf(np.sum(z**2), z.size)),
                max_abs_z=float(np.abs(z).max()), method=sampled.method)


def run(out: Path, *, quick: bool = True, rng: int = 0) -> Section:
    """Run the section into ``out`` (figures ``discrete_*.png/.pdf``, numbers in ``discrete.json``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    s = _settings(quick)
    cov = _covariance_check(rng)
    rows = _agreement(s, rng)
    fig = _fig3_right(s, rng)

    held = [r for r in rows if not r["hot"]]
    bad = [r for r in held for k in MEASURES if abs(r[f"{k}_z"]) >= Z_MAX and abs(r[f"{k}_rel"]) >= REL_MAX]
    worst_z = max(abs(r[f"{k}_z"]) for r in held for k in MEASURES)
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
              f"< 3 %; {len(bad)} outside; largest |z| = {worst_z:.2f}"),
        Check("discrete.peak_at_alpha_c",
              bool(gaps[-1] < 0.02 and all(np.diff(gaps) < 0) and abs(sim_peak - theory_peak) <= 1),
              gaps[-1], 0.02,
              f"site 0: the theory's test-loss peak approaches alpha_c = {fig['alpha_c_sites'][0]:.3f} "
              f"as lam -> 0 (relative gaps {', '.join(f'{g:.3f}' for g in gaps)} at lam = "
              f"{fig['peak_lams']}); total MLM loss at lam = {fig['lam']:g}: simulations peak at "
              f"alpha = {fig['alpha_sim'][sim_peak]:.3f}, theory (same grid) at "
              f"{fig['alpha_sim'][theory_peak]:.3f}"),
    ]
    figures = _figures(out, rows, fig, s)
    data = dict(covariance=cov, agreement=rows, fig3_right=fig)
    atomic_write_text(out / "discrete.json", json.dumps(_jsonable(data), indent=1))
    return Section(name="discrete", checks=checks, figures=figures, data={"file": "discrete.json"},
                   parameters={k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in s.items()})


def _figures(out: Path, rows: list[dict], fig: dict, s: dict) -> list[str]:
    import matplotlib.pyplot as plt

    from replica_mlm.plotting import LINESTYLES, MARKERS, STYLE, grey, save

    names = []
    with plt.rc_context(STYLE):
        f, ax = plt.subplots()
        ax.plot(fig["alpha_fine"], fig["theory_total"], color="black", label="replica theory")
        ax.errorbar(fig["alpha_sim"], fig["sim_mean"], yerr=fig["sim_se"], fmt="o", color="black",
                    mfc="white", capsize=2, label="pseudo-likelihood fits")
        ax.axvline(fig["alpha_c_mean"], color="0.5", ls="--", lw=1,
                   label=r"separability $\alpha_c$")
        _plain_log_x(ax)
        ax.set_xlabel(r"$\alpha = M / (L - 1)$")
        ax.set_ylabel(r"MLM test loss $\sum_i \epsilon_i$ (nats)")
        ax.set_title(rf"Ising, $L = {fig['L']}$, $\beta = {fig['beta']:g}$, $\lambda = {fig['lam']:g}$")
        ax.legend()
        save(f, out / "discrete_fig3_right")
        plt.close(f)
        names += ["discrete_fig3_right.png", "discrete_fig3_right.pdf"]

        f, axes = plt.subplots(1, 2, figsize=(8.4, 3.4))
        keys = sorted({(r["L"], r["beta"], r["lam"]) for r in rows})
        for n, key in enumerate(keys):
            pts = [r for r in rows if (r["L"], r["beta"], r["lam"]) == key]
            a = [r["alpha"] for r in pts]
            for ax, k in zip(axes, ("test_loss", "estimation_error"), strict=True):
                ax.plot(a, [r[k] for r in pts], color=grey(n, len(keys)), ls=LINESTYLES[n % 6])
                ax.errorbar(a, [r[f"{k}_sim"] for r in pts], yerr=[r[f"{k}_se"] for r in pts],
                            fmt=MARKERS[n % 6], color=grey(n, len(keys)), mfc="white", capsize=2,
                            label=rf"$L={key[0]}$, $\beta={key[1]:g}$, $\lambda={key[2]:g}$")
        axes[0].set_ylabel(r"site test cross-entropy")
        axes[1].set_ylabel(r"$|\hat w - w^*|^2$")
        for ax in axes:
            ax.set_yscale("log")
            _plain_log_x(ax)
            ax.set_xlabel(r"$\alpha$")
        f.legend(*axes[1].get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=7,
                 bbox_to_anchor=(0.5, -0.12))
        f.suptitle("lines: replica theory; markers: pseudo-likelihood fits (mean ± s.e.)", fontsize=9)
        save(f, out / "discrete_agreement")
        plt.close(f)
        names += ["discrete_agreement.png", "discrete_agreement.pdf"]

        if s["hot"]:
            f, ax = plt.subplots()
            betas = sorted({r["beta"] for r in rows})
            for n, L in enumerate(s["L"]):
                gap = [np.median([abs(r["test_loss_rel"]) for r in rows if r["L"] == L and r["beta"] == b])
                       for b in betas]
                ax.plot(betas, gap, marker=MARKERS[n], color=grey(n, len(s["L"])), label=rf"$L = {L}$")
            ax.axvline(1.0, color="0.5", ls=":", lw=1, label=r"SK transition $\beta = 1$")
            ax.set_xlabel(r"$\beta$")
            ax.set_ylabel("median |relative gap| of the test loss")
            ax.set_yscale("log")
            ax.legend()
            save(f, out / "discrete_transition")
            plt.close(f)
            names += ["discrete_transition.png", "discrete_transition.pdf"]
    return names


def _plain_log_x(ax) -> None:
    """Log x axis with plain-number major ticks and no minor labels (no overlapping 3x10^0)."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    ticks = [t for t in (0.3, 0.5, 1, 2, 3, 5, 10) if lo <= t <= hi]
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
