"""Validation section ``bayes``: the Bayes-optimal error beside ERM (docs/bayes_optimal.md).

Checks (each with its number and threshold):

* ``bayes.ridge_equivalence``: gaussian channel, isotropic Gaussian prior: ``rm.bayes_optimal_curve``
  equals ``rm.optimal_lambda``'s eg at every alpha of a grid, to 1e-10 relative;
* ``bayes.anisotropic_mismatch``: on a Gaussian Potts site (anisotropic Sigma) the Gaussian-prior
  posterior mean is the ridge at ``lam = sigma^2 / tau``; on the site's own teacher its eg is never
  below ``optimal_lambda``'s (both reported);
* ``bayes.perceptron_constant``: noiseless sign channel: ``eg alpha`` fitted as ``A + B / alpha`` on
  alpha in [200, 3200] gives ``A`` within 1e-4 of ``1 / (sqrt(2 pi) int phi^2 / Phi) = 0.44170``
  (Engel and Van den Broeck's 0.442);
* ``bayes.logistic_gap``: the same task: ERM (logistic, optimal lam) minus BO is > 0 on a grid;
* ``bayes.ising_below_erm_prior_model``: the logit channel of an Ising site (SK, L = 16, beta = 0.4
  and 0.6, exact covariance) with teachers drawn from the prior (the site's eigenvalues, teacher
  weights ``b_k tau``): BO below logistic ERM at every (alpha, lam) of a grid;
* ``bayes.ising_below_erm_own_teacher``: the same at beta = 0.4 on the site's own teacher; the
  margin at beta = 0.6, negative, is reported in the detail (the SK teacher is aligned with Sigma);
* ``bayes.fig3_right_test_loss``: the quantities of fig. 3 (right) at q = 2: the Bayes-optimal
  predictive log-loss below logistic ERM's test cross-entropy on the same grid (own teacher and
  prior's model);
* ``bayes.amp_state_evolution``: AMP on instances of an Ising site's covariance (p = 100 quick,
  300 full; 8 / 16 seeds): the per-iteration overlaps ``q_t`` and ``m_t`` within 3 standard errors
  of the state evolution at each of the first 8 iterations;
* ``bayes.sampler_state_evolution``: the posterior mean by HMC
  (:mod:`replica_mlm.learners.posterior_sampler`) on the same instances: its overlaps within 3
  standard errors of the Bayes-optimal fixed point;
* ``bayes.sampler_vs_amp``: the HMC posterior mean and AMP's estimate differ by less than 1 % of
  ``w^T Sigma w`` (mean over instances).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from replica_mlm._base.io import write_json
from replica_mlm.validation.report import Check, Section

GRID = (0.2, 0.5, 0.9, 1.0, 1.1, 2.0, 5.0, 20.0)
LARGE = (200.0, 400.0, 800.0, 1600.0, 3200.0)
ISING_ALPHA = (0.5, 1.0, 2.0, 4.0)
ISING_LAMS = (1e-3, 1e-2, 1e-1, 1.0)
ITERATIONS = 8


def _iso(noise: float):
    import replica_mlm as rm

    return rm.Spectrum(omega=np.ones(1), bulk=np.ones(1), teacher=np.ones(1), noise=noise)


def _ridge() -> dict:
    import replica_mlm as rm

    spec = _iso(0.25)
    bo = rm.bayes_optimal_curve(spec, alpha=list(GRID))
    opt = rm.optimal_lambda(spec, alpha=list(GRID))
    rel = np.abs(bo.eg - opt.eg_opt) / opt.eg_opt
    site = rm.GaussianPotts.random(L=200, shift=3.0, seed=0).masked_site(0)
    grid = [0.5, 1.0, 2.0, 4.0]
    bo_site = rm.bayes_optimal_curve(site, alpha=grid)
    lam_prior = site.noise / bo_site.tau
    on_task = rm.learning_curve(site, alpha=grid, lam=lam_prior).eg
    best = rm.optimal_lambda(site, alpha=grid).eg_opt
    return dict(alpha=list(GRID), eg_bayes=bo.eg.tolist(), eg_ridge_opt=opt.eg_opt.tolist(),
                max_rel=float(rel.max()), site_alpha=grid, site_eg_bayes_prior_model=bo_site.eg.tolist(),
                site_lam_prior=float(lam_prior), site_eg_posterior_mean=on_task.tolist(),
                site_eg_optimal_lambda=best.tolist(), site_excess=(on_task - best).tolist())


def _perceptron(quick: bool) -> dict:
    from scipy import integrate, special, stats

    import replica_mlm as rm

    spec = _iso(0.0)
    bo = rm.bayes_optimal_curve(spec, alpha=list(LARGE), channel="sign")
    _, A = np.polyfit(1 / np.array(LARGE), bo.eg * np.array(LARGE), 1)
    integral = integrate.quad(lambda u: np.exp(2 * stats.norm.logpdf(u) - special.log_ndtr(u)), -60, 40,
                              epsabs=1e-15, epsrel=1e-13, limit=200)[0]
    grid = [0.5, 2.0, 4.0] if quick else [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    bo_grid = rm.bayes_optimal_curve(spec, alpha=grid, channel="sign")
    erm = rm.optimal_lambda(spec, alpha=grid, loss="logistic", channel="sign")
    return dict(large_alpha=list(LARGE), eg_alpha=(bo.eg * np.array(LARGE)).tolist(), fitted=float(A),
                constant=float(1 / (math.sqrt(2 * math.pi) * integral)), alpha=grid,
                eg_bayes=bo_grid.eg.tolist(), eg_logistic=erm.eg_opt.tolist(), lam_opt=erm.lam_opt.tolist(),
                gap=(erm.eg_opt - bo_grid.eg).tolist())


def _ising(out: Path) -> tuple[dict, list[str]]:
    import matplotlib.pyplot as plt

    import replica_mlm as rm
    from replica_mlm.tasks.ising_site import ising_site, spin_covariance

    alpha = np.geomspace(0.3, 6.0, 24)
    data: dict = dict(alpha=alpha.tolist(), lam=list(ISING_LAMS))
    figures: list[str] = []
    for beta in (0.4, 0.6):
        model = rm.PottsModel.random_ising(L=16, beta=beta, rng=1)
        site = ising_site(model, 0, spin_covariance(model, exact=True))
        bo = rm.bayes_optimal_curve(site, alpha=alpha)
        curves = rm.learning_curve(site, alpha=alpha, lam=list(ISING_LAMS), loss="logistic")
        # ERM in the prior's own model: the same eigenvalues, teacher weights b_k tau
        spec = site.spectrum
        model_spec = rm.Spectrum(omega=spec.omega, bulk=spec.bulk, teacher=spec.bulk * bo.tau,
                                 noise=spec.noise)
        in_model = rm.learning_curve(model_spec, alpha=alpha, lam=list(ISING_LAMS), loss="logistic",
                                     channel="logit")
        key = f"beta_{beta:g}"
        data[key] = dict(eg_bayes=bo.eg.tolist(), eg_erm=[c.eg.tolist() for c in curves],
                         own_teacher_margin=float(np.min([c.eg - bo.eg for c in curves])),
                         prior_model_margin=float(np.min([c.eg - bo.eg for c in in_model])),
                         test_loss_bayes=bo.test_loss.tolist(),
                         test_loss_erm=[c.test_loss.tolist() for c in curves],
                         test_loss_margin=float(np.min([c.test_loss - bo.test_loss
                                                        for c in (*curves, *in_model)])))
        if beta == 0.4:
            fig = rm.plotting.plot_learning_curves(
                curves, bayes_optimal=bo, path=out / "bayes_ising", logy=True,
                title=rf"SK Ising site, $L = 16$, $\beta = {beta:g}$: logistic ERM and Bayes-optimal")
            plt.close(fig)
            figures += ["bayes_ising.png", "bayes_ising.pdf"]
            figures += _plot_fig3_right(alpha, bo, curves, beta, out)
    return data, figures


def _plot_fig3_right(alpha, bo, curves, beta, out: Path) -> list[str]:
    """The quantities of the paper's fig. 3 (right) at q = 2: logistic ERM's test cross-entropy beside
    the Bayes-optimal predictive log-loss."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from replica_mlm.plotting import LINESTYLES, STYLE, save

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        ax.plot(alpha, bo.test_loss, color="#009E73", lw=3.2, alpha=0.55, label="Bayes-optimal (predictive)")
        for i, c in enumerate(curves):
            ax.plot(alpha, c.test_loss, color="black", ls=LINESTYLES[i % len(LINESTYLES)], lw=1.1,
                    label=rf"logistic ERM, $\lambda = {c.lam:g}$")
        ax.set_xscale("log")
        ax.set_xticks([0.3, 0.5, 1, 2, 4, 6], ["0.3", "0.5", "1", "2", "4", "6"])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(r"$\alpha = M/p$")
        ax.set_ylabel("test cross-entropy (nats)")
        ax.set_title(rf"SK Ising site, $L = 16$, $\beta = {beta:g}$ (fig. 3 right, $q = 2$)", fontsize=9)
        ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        save(fig, out / "bayes_fig3_right")
        plt.close(fig)
    return ["bayes_fig3_right.png", "bayes_fig3_right.pdf"]


def _amp(quick: bool, rng: int) -> dict:
    import replica_mlm as rm
    from replica_mlm.learners.amp import instance
    from replica_mlm.learners.posterior_sampler import posterior_mean
    from replica_mlm.tasks.ising_site import ising_site, spin_covariance

    L, seeds = (101, 8) if quick else (301, 16)
    model = rm.PottsModel.random_ising(L=L, beta=0.5, rng=rng + 1)
    site = ising_site(model, 0, spin_covariance(model, samples=2000, batches=4, rng=rng + 2))
    p, S = site.p, site.covariance
    qs, ms, hq, hm, gap, acc = [], [], [], [], [], []
    for seed in range(seeds):
        X, y, w_star = instance(site, 2 * p, rng=rng * 1000 + seed)
        w_amp, info = rm.amp(X, y, site=site, teacher=w_star, max_iter=ITERATIONS, tol=1e-300)
        qs.append(info.q)
        ms.append(info.m)
        w_hmc, hinfo = posterior_mean(X, y, site=site, samples=1000 if quick else 2000, burn_in=300,
                                      step=0.15, leapfrog=10, rng=rng * 1000 + seed)
        hq.append(float(w_hmc @ S @ w_hmc))
        hm.append(float(w_hmc @ S @ w_star))
        d = w_hmc - w_amp
        gap.append(float(d @ S @ d) / hq[-1])
        acc.append(hinfo.acceptance)
    qs, ms = np.array(qs), np.array(ms)
    z = [np.abs(a.mean(0) - info.se_q) / (a.std(0, ddof=1) / math.sqrt(seeds)) for a in (qs, ms)]
    zh = [abs(np.mean(a) - info.fixed_point_q) / (np.std(a, ddof=1) / math.sqrt(seeds)) for a in (hq, hm)]
    return dict(L=L, p=p, seeds=seeds, alpha=2.0, se_q=info.se_q.tolist(), q_mean=qs.mean(0).tolist(),
                q_se=(qs.std(0, ddof=1) / math.sqrt(seeds)).tolist(), m_mean=ms.mean(0).tolist(),
                m_se=(ms.std(0, ddof=1) / math.sqrt(seeds)).tolist(),
                max_z=float(max(z[0].max(), z[1].max())), fixed_point_q=info.fixed_point_q,
                sampler_q=hq, sampler_m=hm, sampler_max_z=float(max(zh)), sampler_vs_amp=gap,
                sampler_acceptance=acc)


def _plot_amp(am: dict, out: Path) -> list[str]:
    import matplotlib.pyplot as plt

    from replica_mlm.plotting import STYLE, save

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        t = np.arange(1, len(am["se_q"]) + 1)
        ax.plot(t, am["se_q"], color="#009E73", lw=2.0, label="state evolution $q_t$")
        ax.errorbar(t - 0.08, am["q_mean"], yerr=am["q_se"], fmt="o", color="black", mfc="white", capsize=2,
                    label=r"AMP $q_t = \hat w^T \Sigma \hat w$ (mean $\pm$ s.e.)")
        ax.errorbar(t + 0.08, am["m_mean"], yerr=am["m_se"], fmt="s", color="0.45", mfc="white", capsize=2,
                    label=r"AMP $m_t = \hat w^T \Sigma w^*$ (mean $\pm$ s.e.)")
        ax.axhline(am["fixed_point_q"], color="0.6", ls="--", lw=0.8, label="Bayes-optimal fixed point")
        ax.set_xlabel("iteration $t$")
        ax.set_ylabel("overlap")
        ax.set_title(f"AMP on an SK Ising site's covariance, $p = {am['p']}$, $\\alpha = 2$, "
                     f"{am['seeds']} seeds", fontsize=9)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        save(fig, out / "bayes_amp")
        plt.close(fig)
    return ["bayes_amp.png", "bayes_amp.pdf"]


def run(out: Path, *, quick: bool = True, rng: int = 0) -> Section:
    """Run the section into ``out`` (figures ``bayes_*.png/.pdf``, numbers in ``bayes.json``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ri = _ridge()
    pe = _perceptron(quick)
    ising, figures = _ising(out)
    am = _amp(quick, rng)
    figures += _plot_amp(am, out)
    excess = min(ri["site_excess"])
    ising_loss = min(ising["beta_0.4"]["test_loss_margin"], ising["beta_0.6"]["test_loss_margin"])
    ising_model = min(ising["beta_0.4"]["prior_model_margin"], ising["beta_0.6"]["prior_model_margin"])
    checks = [
        Check("bayes.ridge_equivalence", ri["max_rel"] < 1e-10, ri["max_rel"], 1e-10,
              "gaussian channel, isotropic prior: max relative |eg_BO - eg(optimal_lambda)| over "
              f"alpha = {list(GRID)}"),
        Check("bayes.anisotropic_mismatch", excess >= -1e-12, excess, [0.0, 1e-12],
              "Gaussian Potts site (L = 200): eg of the prior's posterior mean (ridge at lam = sigma^2 / tau "
              f"= {ri['site_lam_prior']:.4g}) on the site's teacher minus optimal_lambda's, smallest over "
              f"alpha = {ri['site_alpha']}"),
        Check("bayes.perceptron_constant", abs(pe["fitted"] - pe["constant"]) < 1e-4, pe["fitted"],
              [pe["constant"], 1e-4], "noiseless sign channel: A of eg alpha = A + B / alpha on alpha in "
              "[200, 3200] vs 1 / (sqrt(2 pi) int phi^2 / Phi) (Engel & Van den Broeck: 0.442)"),
        Check("bayes.logistic_gap", min(pe["gap"]) > 0, min(pe["gap"]), "> 0",
              f"eg(logistic ERM, optimal lam) - eg(BO), smallest over alpha = {pe['alpha']}"),
        Check("bayes.ising_below_erm_prior_model", ising_model > 0, ising_model, "> 0",
              "logit channel, SK site L = 16 (beta = 0.4 and 0.6) with teachers drawn from the prior: "
              "smallest eg(logistic ERM) - eg(BO) over 24 alphas in [0.3, 6] and "
              f"lam = {list(ISING_LAMS)}"),
        Check("bayes.ising_below_erm_own_teacher", ising["beta_0.4"]["own_teacher_margin"] > 0,
              ising["beta_0.4"]["own_teacher_margin"], "> 0",
              "the same at beta = 0.4 on the site's own teacher (2 beta J); at beta = 0.6 the margin is "
              f"{ising['beta_0.6']['own_teacher_margin']:.2e}: the SK teacher is aligned with Sigma, which "
              "the isotropic prior does not assume (docs/bayes_optimal.md)"),
        Check("bayes.fig3_right_test_loss", ising_loss > 0, ising_loss, "> 0",
              "the Bayes-optimal predictive log-loss below logistic ERM's test cross-entropy at every alpha "
              "and lam, beta = 0.4 and 0.6, on the site's own teacher and with teachers from the prior"),
        Check("bayes.amp_state_evolution", am["max_z"] < 3, am["max_z"], 3,
              f"AMP on {am['seeds']} instances (p = {am['p']}, alpha = 2): largest |mean - SE| / s.e. of "
              f"q_t and m_t over t = 1..{ITERATIONS}"),
        Check("bayes.sampler_state_evolution", am["sampler_max_z"] < 3, am["sampler_max_z"], 3,
              f"HMC posterior mean on the same {am['seeds']} instances: largest |mean - SE| / s.e. of "
              "w^T Sigma w and w^T Sigma w* against the Bayes-optimal fixed point"),
        Check("bayes.sampler_vs_amp", float(np.mean(am["sampler_vs_amp"])) < 0.01,
              float(np.mean(am["sampler_vs_amp"])), 0.01,
              "mean over instances of (w_HMC - w_AMP)^T Sigma (w_HMC - w_AMP) / (w_HMC^T Sigma w_HMC): "
              "AMP's estimate is the posterior mean"),
    ]
    data = dict(ridge=ri, perceptron=pe, ising=ising, amp=am)
    write_json(out / "bayes.json", data, indent=2)
    return Section(name="bayes", checks=checks, figures=figures, data=data,
                   parameters=dict(quick=quick, rng=rng))
