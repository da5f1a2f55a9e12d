"""Validation entry: MLM with factored attention is pseudo-likelihood (docs/potts.md).

Samples a random generalised Potts model, trains factored attention by MLM (and the plmDCA-style
full-block pseudo-likelihood fit for comparison) on growing numbers of sequences M, and writes
figures (PNG and PDF) and ``potts.json`` into ``out``:

* ``potts_reconstruction``: gauge-invariant reconstruction error of ``W = A V`` against
  ``beta J U`` vs M (log-log, slope fitted, ``M^{-1/2}`` reference);
* ``potts_test_loss``: (a) train / test MLM loss during training at the largest M, dashed line at
  the conditional entropy (paper's fig. 2a); (c) excess test loss over the conditional entropy vs M
  for the linear factored layer, the full-block fit and (quick mode) the softmax layer (paper's
  fig. 2c);
* ``potts_small_lam``: test loss vs M at small regularisation (paper's fig. 3, right);
* ``potts_gibbs``: measured autocorrelation functions of the sampler.

The conditional entropy ``sum_i H(s_i | s_-i)`` is estimated by the true model's negative log
pseudo-likelihood on the test set; excess losses are paired differences on that same test set.

Instances. The full mode (L = q = 20, target Hamming distance 0.3, the paper's value) tunes beta
with ``tune_beta(method="auto", return_result=True)`` (parallel-tempering scans, then a pilot run
that must pass the mixing check and measure the Hamming distance within 0.01 with a standard error
below 0.01 / 3; docs/potts.md, "Sampling"). Random instances differ a lot (the target lies between
beta = 3 and beyond 20) and the sampler's cost grows with beta, so an instance is kept on the
sampler's cost alone, before any fit (``replica_mlm.potts.instances.tuned_instance``): a pre-scan (8
replicas, 200 + 200 steps of a geometric ladder from beta = 1 to ``max_beta`` = 5, about 2 CPU
seconds) must already cross the target; the tuner's pilot runs may record at most
``max_pilot_sweeps`` = 1600 steps; the tuned pilot may need at most ``max_sweeps_between`` = 40
steps between samples. Rejected instances and their measured reasons are listed in ``potts.json``
(``data["rejected_instances"]``). The data continue the verified pilot's chains
(``PottsModel.sample(resume=...)``), and the check ``potts.sampler.target_hamming`` requires the
test set's mean Hamming distance within 0.01 of the target. The quick mode (L = 6, q = 4, target
0.5) keeps plain Gibbs (``tune_method="gibbs"``).

Fits. Every fit is a :class:`~replica_mlm._base.pool.Task` seeded from the root seed and
its own key, run in ``workers`` processes (the numbers do not depend on ``workers``). Linear
factored attention starts from the mean-field point (``init="mean-field"``), runs L-BFGS (up to
``max_iter``) and trust-region Newton to a tenth of the check's threshold; the full-block fit is
convex and runs L-BFGS (up to ``plm_max_iter``); ``potts.fits_converged`` requires every fit's
``|grad F| max(|x|, 1)`` below ``KKT_FRACTION`` = 1 % of the conditional entropy's standard error on
the test set. The softmax layer has no Newton polish; at L = q = 20 3000 L-BFGS iterations at
M = 2000 (136 CPU seconds) left it at 2.3e-2 against a threshold of 7e-4, so the full mode does
not fit it (the quick mode does, and its fits converge).

Cost of the full mode (``validate --full --section potts --workers 2``, rng 0; measured once on
the shared 2-core machine at a load average of 10-15, so the wall time says little): 1541 s wall,
497 s CPU. Instances 0-2 of the seed stream were rejected by the pre-scan (Hamming distance at
beta = 5 of 0.728, 0.353, 0.456; about 1.4 CPU seconds each; with ``max_beta`` = 8 instead,
instance 1 passed the pre-scan and its tuning had not finished after 200 CPU seconds); instance 3
tuned to beta = 2.561 (pilot 0.3006 +- 0.0030, 8 rungs, 64 replicas, tau_int 1.8, 9 steps between
samples), 22.6 CPU seconds including the pre-scans, and the 7000 sequences from the pilot's chains
12.5 CPU seconds. The 28 fits took 451 CPU seconds (L-BFGS 1000 iterations then 2 Newton steps
for the linear fits at lam = 1e-3: 6, 12, 23 and 45-88 s at M = 250, 500, 1000, 2000, the last
with the test loss monitored; small-lam fits 0.3-37 s with up to 174 Newton steps; full blocks
26 s at M = 250 and 45 s at M = 500 after 694 and 1059 iterations). Worst stationarity 4.1e-4
(the full-block fit at M = 250) against the threshold 7.3e-4. On a quiet machine the section's
CPU time split over two workers is about 250-300 s of wall time (not measured quiet). Of the nine
checks, ``potts.consistency.test_loss_to_entropy`` failed: the excess test loss at M = 2000 is
0.2095 +- 0.0003 nats (two data sets), above 2 % of the conditional entropy 9.328 (0.187); about
``p / (2 M)`` = 0.195 is what a regular model with p = 780 parameters leaves at that M.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from replica_mlm._base.checks import positive_int
from replica_mlm._base.io import write_json
from replica_mlm._base.pool import Task, run_tasks
from replica_mlm._base.progress import bar
from replica_mlm._base.stats import mean_stderr
from replica_mlm.learners.attention import FactoredAttention, reconstruction_error
from replica_mlm.learners.plm import FullCouplingPotts
from replica_mlm.potts.instances import draw_like_pilot, tuned_instance
from replica_mlm.validation.potts_checks import equivalence_check, sampler_checks
from replica_mlm.validation.report import Check, Section

__all__ = ["PottsSettings", "run"]

#: every fit must reach ``|grad F| max(|x|, 1) <= KKT_FRACTION`` x the standard error of the
#: conditional entropy on the test set (nats per sequence; check ``potts.fits_converged``): the
#: first-order change of the objective under any move of the parameters by up to their own size
#: is then far below the statistical error of every loss compared
KKT_FRACTION = 0.01
#: L-BFGS's relative tolerance on the objective (scipy's ftol) of the factored fits
LBFGS_FTOL = 1e-12


@dataclass
class PottsSettings:
    """Sizes of the experiments."""

    L: int
    q: int
    target_hamming: float
    Ms: tuple[int, ...]
    reps: int
    n_test: int
    lam: float
    small_lam: float
    small_lam_Ms: tuple[int, ...]
    small_lam_reps: int
    plm_max_M: int
    max_iter: int
    #: sampler(s) tune_beta may use: quick mode keeps an instance on which plain Gibbs mixes
    tune_method: str = "auto"
    #: limit of the trust-region Newton iterations after L-BFGS (linear factored attention)
    newton_iter: int = 300
    #: L-BFGS iteration limit of the full-block fits (convex, no Newton polish)
    plm_max_iter: int = 5000
    #: L-BFGS's relative tolerance on the objective of the full-block fits, which stop on it, not
    #: on their gradient. In --full (152000 parameters) 1e-12 left the M = 500 fit at
    #: |grad F| max(|x|, 1) = 7.7e-4, above the check's 7.2e-4; 1e-15 reached 2.6e-5 with 19 % more
    #: iterations (test losses equal to 2e-5 nats). Quick mode passes at 1e-12 (1.6e-4 against
    #: 3.4e-4), where 1e-15 would add 7 CPU-s to the test suite.
    plm_ftol: float = 1e-12
    #: fit the softmax variant too (one data set per M; L-BFGS only, no Newton polish exists)
    softmax: bool = True
    #: cost rule for instances (``tuned_instance``; None: no limit)
    max_beta: float | None = None
    max_pilot_sweeps: int | None = None
    max_sweeps_between: int | None = None


def settings_for(quick: bool) -> PottsSettings:
    if quick:
        return PottsSettings(L=6, q=4, target_hamming=0.5, Ms=(250, 700, 2000, 5000), reps=3,
                             n_test=4000, lam=1e-3, small_lam=1e-4,
                             small_lam_Ms=(3, 5, 8, 12, 20, 40, 100, 400), small_lam_reps=4,
                             plm_max_M=5000, max_iter=500, tune_method="gibbs")
    # sized for about 6 minutes with two workers (module docstring, "Cost of the full mode")
    return PottsSettings(L=20, q=20, target_hamming=0.3, Ms=(250, 500, 1000, 2000), reps=2,
                         n_test=3000, lam=1e-3, small_lam=1e-4,
                         small_lam_Ms=(5, 10, 20, 30, 40, 50, 70, 100, 200),
                         small_lam_reps=2, plm_max_M=500, max_iter=1000, softmax=False,
                         max_beta=5.0, max_pilot_sweeps=1600, max_sweeps_between=40,
                         plm_ftol=1e-15)


def _mean_se(x) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    return mean_stderr(x, single=math.nan)


def run(out: Path, *, quick: bool = True, rng: int = 0, workers: int = 1) -> Section:
    """Run the Potts / factored-attention experiments; write figures and ``potts.json``.

    Parameters
    ----------
    out : pathlib.Path
        Output folder (created if missing).
    quick : bool
        Small model (L = 6, q = 3; CI, well under a minute) or the paper's size (L = q = 20).
    rng : int
        Seed of everything (model, sampling, initialisations).
    workers : int
        Processes for the fits (independent tasks, each seeded from ``rng`` and its own key: the
        numbers do not depend on ``workers``).
    """
    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    st = settings_for(quick)
    workers = positive_int(workers, "workers")
    seeds = np.random.SeedSequence(rng).spawn(6)
    gens = [np.random.default_rng(s) for s in seeds]

    section = Section(name="discrete Potts model and factored attention (docs/potts.md)")
    section.parameters = {"quick": quick, "rng": rng, **{k: v for k, v in vars(st).items()}}
    pm, tune, diag, n_train, train, test, hamming, H, per_seq_true, W_true, t_tune, t_sample = \
        _data_step(st, gens, section, t0)
    chi = sampler_checks(section, st=st, pm=pm, tune=tune, diag=diag, test=test, hamming=hamming, gens=gens,
                         t_tune=t_tune)
    d_loss, d_cond = equivalence_check(section, pm, train, H, n_train)
    results, rec, curves, fits, se_H, t_fit = _fit_step(st, train, test, W_true, per_seq_true, H,
                                                        rng=rng, workers=workers)
    slope, intercept = _consistency_checks(section, st, rec, fits, se_H, H)
    _small_lam_check(section, st, results)
    return _report(out, section, st=st, pm=pm, diag=diag, hamming=hamming, H=H, per_seq_true=per_seq_true,
                   chi=chi, d_loss=d_loss, d_cond=d_cond, rec=rec, slope=slope, intercept=intercept,
                   curves=curves, fits=fits, workers=workers, t_tune=t_tune, t_sample=t_sample, t_fit=t_fit,
                   t0=t0)


def _data_step(st: PottsSettings, gens: list, section: Section, t0: float):
    """Model, temperature and sampler: a tuned instance and its training and test sequences."""
    # ---- model, temperature, sampler
    pm, tune, tried = tuned_instance(L=st.L, q=st.q, target_hamming=st.target_hamming,
                                     method=st.tune_method, gens=gens, max_beta=st.max_beta,
                                     max_pilot_sweeps=st.max_pilot_sweeps,
                                     max_sweeps_between=st.max_sweeps_between)
    section.data["rejected_instances"] = tried
    section.parameters["instances_rejected"] = len(tried)
    t_tune = time.perf_counter() - t0
    n_train = max(max(st.Ms) * st.reps, sum(st.small_lam_Ms) * st.small_lam_reps)
    diag, data = draw_like_pilot(pm, tune, n_train + st.n_test, gens=gens, resume=True)
    train, test = data[:n_train], data[n_train:]
    hamming = pm.mean_hamming(test)
    H = pm.neg_pseudo_loglikelihood(test)
    per_seq_true = _per_sequence_nll(pm.logits(test), test)
    W_true = pm.coupling_tensor()
    t_sample = time.perf_counter() - t0
    return pm, tune, diag, n_train, train, test, hamming, H, per_seq_true, W_true, t_tune, t_sample


def _fit_step(st: PottsSettings, train, test, W_true, per_seq_true, H: float, *, rng: int,
              workers: int):
    """Every fit as an independent task; the reconstruction errors and excess losses per M."""
    # ---- every fit is an independent task with its own seed (results do not depend on workers)
    se_H = mean_stderr(per_seq_true).stderr
    # the linear fits aim at a tenth of the check's threshold (Newton is cheap near the optimum)
    tasks, keys = _fit_tasks(st, train, test, W_true, gtol=0.1 * KKT_FRACTION * se_H, rng=rng)
    t_fit = time.perf_counter()
    with bar(progress=None, desc="potts: fits", total=len(tasks), unit="fit") as done:
        results = dict(zip(keys, run_tasks(tasks, workers=workers, on_result=lambda k, r: done.update()),
                           strict=True))
    t_fit = time.perf_counter() - t_fit
    rec = {k: np.full((len(st.Ms), st.reps), np.nan) for k in
           ("fa", "fa_sym", "plm", "plm_sym", "gap_fa", "gap_soft", "gap_plm")}
    for a, _M in enumerate(st.Ms):
        for r in range(st.reps):
            f = results[("fa", a, r)]
            rec["fa"][a, r], rec["fa_sym"][a, r] = f["rec"], f["rec_sym"]
            rec["gap_fa"][a, r] = f["test_loss"] - H
        if ("soft", a) in results:
            rec["gap_soft"][a, 0] = results[("soft", a)]["test_loss"] - H
        if ("plm", a) in results:  # the check compares the first data set of each M
            f = results[("plm", a)]
            rec["plm"][a, 0], rec["plm_sym"][a, 0] = f["rec"], f["rec_sym"]
            rec["gap_plm"][a, 0] = f["test_loss"] - H
    top = len(st.Ms) - 1
    curves = {v: results[key]["curve"] for v, key in (("linear", ("fa", top, 0)),
                                                      ("softmax", ("soft", top)))
              if key in results}
    fits = [dict(results[k], task=list(map(str, k))) for k in keys]
    for f in fits:
        f.pop("curve", None)
    return results, rec, curves, fits, se_H, t_fit


def _consistency_checks(section: Section, st: PottsSettings, rec: dict, fits: list, se_H: float,
                        H: float) -> tuple[float, float]:
    """``potts.fits_converged``, ``potts.consistency.*`` and ``potts.plm_comparison``; returns the
    log-log fit of the reconstruction error (slope, intercept)."""
    section.checks.append(fits_converged_check(fits, se_H))
    Ms = np.asarray(st.Ms, dtype=float)
    fa_mean = np.nanmean(rec["fa"], axis=1)
    slope, intercept = np.polyfit(np.log(Ms), np.log(fa_mean), 1)
    section.checks.append(Check(
        name="potts.consistency.reconstruction_slope",
        passed=bool(-0.7 <= slope <= -0.3 and np.all(np.diff(fa_mean) < 0)),
        value=float(slope),
        threshold="error decreasing in M and log-log slope in [-0.7, -0.3] (theory: -1/2)",
        detail=f"gauge-invariant error of A V vs beta J U (zero-sum gauge), M = {list(st.Ms)}, "
               f"{st.reps} data sets per M, lam = {st.lam}",
    ))
    gap_mean = np.nanmean(rec["gap_fa"], axis=1)
    gap_last = _mean_se(rec["gap_fa"][-1])
    section.checks.append(Check(
        name="potts.consistency.test_loss_to_entropy",
        passed=bool(gap_mean[-1] < gap_mean[0] and 0 < gap_last[0] < 0.02 * H),
        value={"excess_at_largest_M": gap_last, "conditional_entropy": H},
        threshold="excess test loss smaller at the largest M than at the smallest, positive, "
                  "below 2 % of the entropy at the largest M",
        detail="test MLM loss of linear factored attention minus the exact conditional entropy "
               "(true model's pseudo-likelihood on the same test set)",
    ))
    plm_rows = ~np.isnan(rec["gap_plm"][:, 0])
    plm_gap = rec["gap_plm"][plm_rows, 0]
    section.checks.append(Check(
        name="potts.plm_comparison",
        passed=bool(np.all(plm_gap > rec["gap_fa"][plm_rows, 0]) and plm_gap[-1] < plm_gap[0]),
        value={"M": Ms[plm_rows], "excess_full_block": plm_gap,
               "excess_factored": rec["gap_fa"][plm_rows, 0]},
        threshold="full-block excess above factored excess at every M and falling with M",
        detail=f"plmDCA-style fit ({st.L * (st.L - 1) * st.q ** 2} parameters) vs factored attention "
               f"({st.L * (st.L - 1) + st.q ** 2}) on the same data: same optimum, slower approach",
    ))
    return slope, intercept


def _small_lam_check(section: Section, st: PottsSettings, results: dict) -> None:
    """Small regularisation: test loss vs M (the paper's fig. 3, right), ``section.data["small_lam"]``."""
    small = np.array([[results[("small", a, r)]["test_loss"] for r in range(st.small_lam_reps)]
                      for a in range(len(st.small_lam_Ms))])
    small_mean, small_se = mean_stderr(small, axis=1)
    k = int(np.argmax(small_mean))
    n_params = st.L * (st.L - 1) + st.q**2
    threshold_M = n_params / st.L
    nonmono = bool(0 < k < len(small_mean) - 1
                   and small_mean[k] - small_mean[0] > 2 * math.hypot(small_se[k], small_se[0]))
    section.data["small_lam"] = {"M": st.small_lam_Ms, "test_loss": small_mean,
                                 "test_loss_se": small_se, "peak_M": st.small_lam_Ms[k],
                                 "threshold_M_params_over_L": threshold_M,
                                 "non_monotone": nonmono}
    section.checks.append(Check(
        name="potts.small_lam.non_monotone",
        passed=nonmono,
        value={"peak_M": st.small_lam_Ms[k], "params_over_L": threshold_M},
        threshold="interior maximum of the test loss exceeding the smallest-M value by 2 s.e.",
        detail=f"test loss vs M at lam = {st.small_lam}: peak at M = {st.small_lam_Ms[k]} "
               f"(parameters / L = {threshold_M:.1f})",
    ))


def _report(out: Path, section: Section, *, st: PottsSettings, pm, diag, hamming, H, per_seq_true, chi,
            d_loss, d_cond, rec, slope, intercept, curves, fits, workers, t_tune, t_sample, t_fit,
            t0) -> Section:
    """The figures and ``potts.json``."""
    beta = pm.beta
    section.data.update({
        "beta": beta, "mean_hamming": hamming, "conditional_entropy": H,
        "conditional_entropy_se": mean_stderr(per_seq_true).stderr,
        "gibbs": {"tau_int": diag.tau_int, "tau_spin": diag.tau_spin,
                  "tau_energy": diag.tau_energy, "sweeps_between": diag.sweeps_between,
                  "burn_in": diag.burn_in, "method": diag.method,
                  "ladder": diag.ladder.tolist(),
                  "swap_acceptance": diag.swap_acceptance.tolist()},
        "chi_square": chi,
        "equivalence": {"loss_difference": d_loss, "max_conditional_difference": d_cond},
        "M": st.Ms, "reconstruction": {k: rec[k] for k in ("fa", "fa_sym", "plm", "plm_sym")},
        "reconstruction_slope": float(slope),
        "excess_test_loss": {k: rec[k] for k in ("gap_fa", "gap_soft", "gap_plm")},
        "training_curves": curves,
        "fits": fits, "workers": workers,
        "seconds": {"tuning": t_tune, "sampling": t_sample, "fits_wall": t_fit,
                    "fits_cpu_tasks": float(sum(f["seconds"] for f in fits))},
    })
    from replica_mlm.validation.potts_plots import figures

    section.figures += figures(out, st, section.data, diag, intercept)
    section.data["seconds"]["total"] = time.perf_counter() - t0
    write_json(out / "potts.json", {
        "passed": section.passed, "parameters": section.parameters,
        "checks": [vars(c) for c in section.checks], "data": section.data}, indent=2)
    return section


def fits_converged_check(fits: list[dict], se_H: float) -> Check:
    """Check ``potts.fits_converged``: the worst stationarity ``|grad F| max(|x|, 1)`` of ``fits``
    (records of :func:`_fit_task`, with their ``task`` key) against ``KKT_FRACTION * se_H``."""
    kkt = KKT_FRACTION * se_H
    worst = max(fits, key=lambda f: f["stationarity"])
    return Check(
        name="potts.fits_converged",
        passed=bool(worst["stationarity"] <= kkt),
        value={"worst_stationarity": worst["stationarity"], "threshold": kkt,
               "worst_fit": worst["task"], "n_fits": len(fits)},
        threshold=f"|grad F| max(|x|, 1) <= {KKT_FRACTION:g} x the standard error of the "
                  "conditional entropy on the test set, every fit",
        detail=f"{len(fits)} fits (factored linear: L-BFGS + Newton from the mean-field start; "
               f"softmax: L-BFGS; full blocks: L-BFGS): worst |grad F| max(|x|, 1) = "
               f"{worst['stationarity']:.2e} nats per sequence ({' '.join(worst['task'])}) "
               f"against {kkt:.2e} = {KKT_FRACTION:g} x {se_H:.4f}",
    )


def _task_seed(rng: int, key: tuple) -> int:
    """The seed of one fit: a function of the root seed and the task's key alone."""
    words = [rng, 11] + [k if isinstance(k, int) else sum(map(ord, k)) for k in key]
    return int(np.random.SeedSequence(words).generate_state(1)[0])


def _fit_tasks(st: PottsSettings, train, test, W_true, *, gtol: float, rng: int):
    """Every fit of the section as a :class:`Task`, longest first, and the tasks' keys."""
    items: list[tuple[tuple, dict]] = []
    top = len(st.Ms) - 1
    for a, M in enumerate(st.Ms):
        for r in range(st.reps):
            items.append((("fa", a, r), dict(seqs=train[r * M:(r + 1) * M], lam=st.lam,
                                              variant="linear", monitor=a == top and r == 0)))
        if st.softmax:
            items.append((("soft", a), dict(seqs=train[:M], lam=st.lam, variant="softmax",
                                            monitor=a == top)))
        if M <= st.plm_max_M:
            items.append((("plm", a), dict(seqs=train[:M], lam=st.lam, variant="full",
                                           monitor=False)))
    start = 0
    for a, M in enumerate(st.small_lam_Ms):
        for r in range(st.small_lam_reps):
            items.append((("small", a, r), dict(seqs=train[start:start + M], lam=st.small_lam,
                                                variant="linear", monitor=False)))
            start += M
    weight = {"plm": 40.0, "soft": 2.0, "fa": 1.0, "small": 1.0}  # rough cost per sequence
    items.sort(key=lambda kv: -weight[kv[0][0]] * len(kv[1]["seqs"]))
    tasks = [Task(_fit_task, kwargs=dict(kw, q=st.q, test=test, W_true=W_true, gtol=gtol,
                                         max_iter=st.max_iter, newton_iter=st.newton_iter,
                                         plm_max_iter=st.plm_max_iter, plm_ftol=st.plm_ftol,
                                         seed=_task_seed(rng, key)))
             for key, kw in items]
    return tasks, [key for key, _ in items]


def _fit_task(*, seqs, q: int, lam: float, variant: str, monitor: bool, test, W_true,
              gtol: float, max_iter: int, newton_iter: int, plm_max_iter: int,
              plm_ftol: float, seed: int) -> dict:
    """One fit (factored linear or softmax, or the full-block pseudo-likelihood): its test loss,
    reconstruction errors, stationarity ``|grad F| max(|x|, 1)`` and cost."""
    c0 = time.process_time()
    if variant == "full":
        model = FullCouplingPotts.fit(seqs, q=q, lam=lam, max_iter=plm_max_iter, tol=plm_ftol)
        newton = 0
    else:
        # linear: deterministic mean-field start, L-BFGS, then Newton to gtol; softmax: L-BFGS
        # from its random start (no Newton polish exists for it)
        model = FactoredAttention.fit(seqs, q=q, lam=lam, variant=variant, rng=seed,
                                      max_iter=max_iter, tol=LBFGS_FTOL, gtol=gtol,
                                      newton_iter=newton_iter, monitor=test if monitor else None,
                                      init="mean-field" if variant == "linear" else "random")
        newton = model.fit_info.newton_iter
    info = model.fit_info
    return {"M": len(seqs), "variant": variant, "lam": lam, "seed": seed,
            "test_loss": model.mlm_loss(test),
            "rec": reconstruction_error(model.couplings(), W_true),
            "rec_sym": reconstruction_error(model.couplings(), W_true, symmetrise=True),
            "stationarity": float(info.stationarity), "gradient_norm": float(info.gradient_norm),
            "iterations": int(info.n_iter), "newton_iterations": int(newton),
            "message": info.message, "seconds": time.process_time() - c0,
            "curve": ({"train": info.history, "test": info.monitor_history} if monitor
                      else None)}


def _per_sequence_nll(z: np.ndarray, s: np.ndarray) -> np.ndarray:
    m = z.max(axis=2, keepdims=True)
    lse = m[:, :, 0] + np.log(np.exp(z - m).sum(axis=2))
    return (lse - np.take_along_axis(z, s[:, :, None], axis=2)[:, :, 0]).sum(axis=1)
