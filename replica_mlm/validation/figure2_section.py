"""Validation entry ``figure2``: fig. 2 of Rende et al., vanilla transformers against factored attention.

On sequences sampled from a random generalised Potts model (``PottsModel.random``, beta tuned to a
target mean Hamming distance, train and test sets drawn together from the same chains and split at
random) it trains, for every seed of ``seeds``, on the **same** training set and with the **same**
seed:

* the vanilla transformer (:class:`replica_mlm.learners.transformer.TransformerMLM`) with 1 and with 3
  layers (SGD, mini-batches, cosine-annealed learning rate);
* one layer of fully factored attention (:meth:`replica_mlm.FactoredAttention.fit`, linear variant,
  small ``lam``) by mini-batch SGD with the same batch size, epochs and cosine schedule from each
  seed's random start (its test-loss curve is the one of fig. 2a); the trained layer of the checks
  and of fig. 2b-d is the minimiser of the same objective: every SGD end point and the
  deterministic mean-field start are taken to stationarity by L-BFGS and trust-region Newton with
  the exact Hessian, and the lowest objective reached is kept (all starts are reported: the
  objective is not convex and small random starts can end in worse local minima);
* the "gamma family": one transformer layer on tokens ``E e_{s_j} + gamma p_j`` for several gamma;

and writes ``fig2a`` (test MLM loss per epoch against the conditional entropy), ``fig2b`` (attention
maps beside ``|beta J|``), ``fig2c`` (gauge-invariant reconstruction error of the couplings by
factored attention vs the number of training sequences, disjoint subsets of the training set) and
``fig2d`` (final test loss along the gamma family against the factored layer), each as PNG and PDF,
and ``fig2.json`` with every number. The trainings and fits are independent tasks, run in
``workers`` processes; each seeds itself, so the numbers do not depend on ``workers``.

Training budget (a deviation from the paper, measured): the transformers are trained by SGD with
momentum 0.9 (the paper: plain SGD), because on one core plain SGD is far slower: on
``PottsModel.random(L=20, q=20, seed=0)`` at beta = 3 (conditional entropy 12.25 nats per
sequence), 10 epochs of a 1-layer transformer at lr 0.1 reached a test loss of 35.9 nats with plain
SGD and 25.5 with momentum 0.9. The epoch counts are in ``fig2.json``; transformers that are still
improving at the last epoch are reported as such by their curves in fig. 2a.

Learning rate of ``--full`` (measured; the same rule for both depths, chosen on a validation split
of the training set, never on the test set): at lr 0.1 with momentum 0.9 (a steady-state step of
lr / (1 - momentum) = 1, ten times the paper's largest plain-SGD rate) runs collapse early and
then sit on plateaus for tens of epochs. Two collapses were measured (rng 0, the first 30 of the
120 cosine epochs, training on the first 2500 training sequences): a 3-layer run (seed index 3)
learnt to a training loss of 27.9 by epoch 5, then by epoch 10 had 43-65 % dead ReLUs per layer
and logits identical for every position and sequence (the global colour frequencies, 32.7 nats;
in the last full run two of four 3-layer seeds sat there for 50-90 epochs); a 1-layer run (same
seed) put 96 % of the masked site's attention on the mask token itself (site marginals only,
14.4 nats). The validation loss (the last 500 training sequences) after those 30 epochs, seed
indices 3, 1, 0, for lr 0.1 / 0.03 / 0.01: 3 layers 32.7, 11.9, 12.1 / 11.8, 11.7, 12.4 / 12.6,
12.8, 13.6 (means 18.9 / 12.0 / 13.0); 1 layer 14.4, 12.7, 12.7 / 12.3, 12.0, 12.5 / 13.4, 13.2,
14.7 (means 13.3 / 12.2 / 13.8). lr 0.03 is the lowest for both depths and is used for both
(``Fig2Settings.lr``).

Cost of ``--full`` (4 seeds, 120 epochs, gamma 0.3, 3, 10 on two seeds), measured in CPU seconds
at L = q = 20, M = 3000 with one thread per process: 0.27 s per epoch of a 1-layer transformer and
0.65 s of a 3-layer one (batch 100; about 9 ms of forward and backward pass per batch), 0.57 s and
1.36 s per evaluation of the test loss (1000 sequences, every site masked in turn: 20,000 forward
passes), so about 13 minutes for the 14 transformer runs; each fit of the factored layer (L-BFGS
at 0.05 s per iteration, up to 300 iterations, then Newton at about 1.7 s per iteration, 10-44
of them) about 35 s, 12 fits (the M = 300 subsets of fig. 2c: up to 89 Newton iterations, 33 s);
plus the tuning and sampling at Hamming 0.3 (about 20 s). Measured for the whole section (rng 0,
``workers=2``, on two cores shared with other jobs, load 3-15): 1283 CPU seconds (a 3-layer run
105-114 s, a 1-layer run 40-43 s, a factored seed 51-63 s, the mean-field fit 33 s, the fits of
fig. 2c 6-30 s), 2740 s wall.

Losses are per sequence (sum over sites, mean over sequences; the convention of ``mlm_loss``). The
conditional entropy is the true model's negative log pseudo-likelihood on the test set. Standard
errors: over seeds (the spread of training), and over test sequences (the test set's sampling
error; paired differences where two models are compared on the same test set), added in
quadrature.

Checks (each can fail; a failing one means the paper's claim is not reproduced at these settings):

1. ``figure2.factored_reaches_entropy``: factored attention's test loss minus the conditional
   entropy is at most its standard error.
2. ``figure2.one_layer_gap``: the 1-layer transformer's test loss lies more than 3 standard errors
   above the conditional entropy.
3. ``figure2.three_layers_improve``: the 3-layer transformer's test loss is below the 1-layer one by
   more than 3 standard errors (paired by seed).
4. ``figure2.gamma_family_never_beats_factored``: no member of the gamma family has a test loss
   more than 2 standard errors below the factored layer's.

Not a check, data in ``fig2.json`` (``finite_M_excess``): the test-loss excess that a
well-specified model fitted on ``M`` sequences is expected to have, ``tr(H^-1 G) / (2 M)``
per sequence (``replica_mlm.learners.attention_diagnostics.finite_sample_excess``), beside the
measured excess and the standard error of check 1, so that a reader can see whether check 1 can
hold at this ``M``.

A precondition of check 1 is checked too: ``figure2.factored_converged``, every fit of the
factored layer (each start, and those of fig. 2c) is stationary, ``|grad F| |x| <= 0.01`` times
that standard error (``F`` the training objective per sequence, ``x`` the parameters: the
first-order change of ``F`` under any move of the parameters by up to their own size is far below
the statistical error).
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
from replica_mlm._base.stats import zscore
from replica_mlm.learners.attention import FactoredAttention, reconstruction_error
from replica_mlm.potts.instances import draw_like_pilot, tuned_instance
from replica_mlm.validation.figure2_checks import _se, factored_checks, transformer_checks
from replica_mlm.validation.report import Check, Section

__all__ = ["Fig2Settings", "make_data", "run", "settings_for"]



@dataclass
class Fig2Settings:
    """Sizes of the fig. 2 experiments."""

    L: int
    q: int
    target_hamming: float
    M: int
    n_test: int
    seeds: int
    epochs: int
    eval_every: int
    lr: float
    momentum: float
    lr_factored: float
    d_model: int
    gammas: tuple[float, ...]
    gamma_seeds: int
    rec_Ms: tuple[int, ...]
    lam: float = 1e-3
    #: linear warm-up of the transformers' learning rate (the tutorial's CosineWarmupScheduler)
    warmup_epochs: int = 2
    max_iter: int = 300
    #: L-BFGS's relative tolerance on the objective (scipy's ftol); the trust-region Newton polish
    #: of ``FactoredAttention.fit`` then takes the fit to stationarity
    lbfgs_tol: float = 1e-9
    batch_size: int = 100
    tune_method: str = "auto"
    #: limit of the Newton iterations after L-BFGS. Measured on the full data (rng 0): the fits
    #: of the whole training set were stationary after 10-44 iterations, but the first M = 300
    #: subset of fig. 2c needed 89 (its minimiser lies far out, |x| = 48, along directions of
    #: curvature 3e-5 set by the penalty; at the former limit of 60 it stopped at |grad F| |x| =
    #: 0.26); at 0.13 s per iteration for M = 300 and 1.7 s for M = 3000 the limit costs nothing
    #: where it is not needed
    newton_iter: int = 200


def settings_for(quick: bool) -> Fig2Settings:
    if quick:
        return Fig2Settings(L=6, q=4, target_hamming=0.45, M=2000, n_test=600, seeds=4, epochs=30,
                            eval_every=5, lr=0.05, momentum=0.9, lr_factored=0.1, d_model=16,
                            gammas=(0.3, 1.0, 3.0), gamma_seeds=1, rec_Ms=(200, 600, 2000),
                            tune_method="gibbs")
    return Fig2Settings(L=20, q=20, target_hamming=0.3, M=3000, n_test=1000, seeds=4, epochs=120,
                        eval_every=10, lr=0.03, momentum=0.9, lr_factored=0.05, d_model=20,
                        gammas=(0.3, 1.0, 3.0, 10.0), gamma_seeds=2, rec_Ms=(300, 1000, 3000))


def make_data(st: Fig2Settings, rng: int):
    """Model, tuned beta, sampler diagnostics, and the train / test split (shared by all models)."""
    gens = [np.random.default_rng(s) for s in np.random.SeedSequence([rng, 2]).spawn(4)]
    pm, tune, tried = tuned_instance(L=st.L, q=st.q, target_hamming=st.target_hamming,
                                     method=st.tune_method, gens=gens)
    diag, data = draw_like_pilot(pm, tune, st.M + st.n_test, gens=gens)
    return pm, diag, data[:st.M], data[st.M:], tried


def model_seeds(rng: int, n: int) -> list[int]:
    """The training seeds, one per repetition, shared by every model of the comparison."""
    return [int(x) for x in np.random.SeedSequence([rng, 3]).generate_state(n)]


def _nll_per_sequence(z: np.ndarray, s: np.ndarray) -> np.ndarray:
    m = z.max(axis=2, keepdims=True)
    lse = m[:, :, 0] + np.log(np.exp(z - m).sum(axis=2))
    return (lse - np.take_along_axis(z, s[:, :, None], axis=2)[:, :, 0]).sum(axis=1)


def _compare(per_seq_a: list[np.ndarray], per_seq_b: np.ndarray | list[np.ndarray]) -> dict:
    """Mean of (a - b) over seeds and test sequences, with seed and paired test-set errors."""
    a = np.asarray(per_seq_a)  # (seeds, n_test)
    b = np.asarray(per_seq_b)
    diff = a - (b if b.ndim == 2 else b[None, :])
    per_seed = diff.mean(axis=1)
    se_seed = _se(per_seed)
    se_test = _se(diff.mean(axis=0))
    se = math.hypot(se_seed, se_test)
    mean = float(per_seed.mean())
    return {"difference": mean, "se": se, "se_seeds": se_seed, "se_test": se_test,
            "z": zscore(mean, 0.0, se)}


def _train_transformer(st: Fig2Settings, train, test, *, layers: int, gamma: float, seed: int):
    from replica_mlm.learners.transformer import TransformerMLM

    tf = TransformerMLM(L=st.L, q=st.q, layers=layers, d_model=st.d_model, heads=1, gamma=gamma,
                        rng=seed)
    hist = tf.fit(train, epochs=st.epochs, batch_size=st.batch_size, lr=st.lr, schedule="cosine",
                  test=test, momentum=st.momentum, warmup=st.warmup_epochs * -(-st.M // st.batch_size),
                  eval_every=st.eval_every)
    return tf, hist


def _task_transformer(st, train, test, layers, gamma, seed, want_maps):
    t0 = time.process_time()
    tf, hist = _train_transformer(st, train, test, layers=layers, gamma=gamma, seed=seed)
    return {"curve": hist.test_loss, "epochs": hist.test_epochs, "per_seq": tf.per_sequence_loss(test),
            "maps": tf.attention_maps(test) if want_maps else None,
            "n_parameters": tf.n_parameters, "seconds": time.process_time() - t0}


def _fit_record(fa: FactoredAttention, test, W_true) -> dict:
    i = fa.fit_info
    return {"objective": i.objective, "stationarity": i.stationarity,
            "gradient_norm": i.gradient_norm, "iterations": i.n_iter,
            "newton_iterations": i.newton_iter, "converged": i.converged, "message": i.message,
            "per_seq": None if test is None else _nll_per_sequence(fa.logits(test), test),
            "reconstruction_error": reconstruction_error(fa.couplings(), W_true),
            "attention": fa.attention, "value": fa.value}


def _polish(st: Fig2Settings, train, x0) -> FactoredAttention:
    """``FactoredAttention.fit``'s L-BFGS and Newton polish from the parameters ``x0``."""
    from replica_mlm.learners.attention_fit import FactoredAttentionProblem, fit_lbfgs

    problem = FactoredAttentionProblem(np.asarray(train), st.q, st.lam, "linear")
    x, info = fit_lbfgs(problem, x0, max_iter=st.max_iter, tol=st.lbfgs_tol, monitor=None,
                         gtol=1e-7, newton_iter=st.newton_iter, init="warm start")
    A, V, _ = problem.unpack(x)
    return FactoredAttention(attention=A, value=V, fit_info=info)


def _task_factored_seed(st, train, test, W_true, seed):
    """Mini-batch SGD (fig. 2a's curve) from the seed's random start, then its end point taken
    to stationarity."""
    t0 = time.process_time()
    sgd = FactoredAttention.fit(train, q=st.q, lam=st.lam, rng=seed, method="sgd",
                                epochs=st.epochs, batch_size=st.batch_size, lr=st.lr_factored,
                                monitor=test)
    L = st.L
    fa = _polish(st, train, np.concatenate([sgd.attention[~np.eye(L, dtype=bool)],
                                            sgd.value.ravel()]))
    return {"curve": sgd.fit_info.monitor_history, "final_sgd": sgd.mlm_loss(test),
            "reconstruction_error_sgd": reconstruction_error(sgd.couplings(), W_true),
            "fit": _fit_record(fa, test, W_true), "seconds": time.process_time() - t0}


def _task_factored_mf(st, train, test, W_true):
    t0 = time.process_time()
    fa = FactoredAttention.fit(train, q=st.q, lam=st.lam, init="mean-field", max_iter=st.max_iter,
                               tol=st.lbfgs_tol, newton_iter=st.newton_iter)
    return {"fit": _fit_record(fa, test, W_true), "seconds": time.process_time() - t0}


def _task_reconstruction(st, train, W_true):
    t0 = time.process_time()
    fa = FactoredAttention.fit(train, q=st.q, lam=st.lam, init="mean-field", max_iter=st.max_iter,
                               tol=st.lbfgs_tol, newton_iter=st.newton_iter)
    rec = _fit_record(fa, None, W_true)
    return {"reconstruction_error": rec["reconstruction_error"],
            "fit": {k: v for k, v in rec.items() if k not in ("per_seq", "attention", "value")},
            "seconds": time.process_time() - t0}


def _run_keyed(tasks: dict, workers: int) -> dict:
    """``{key: fn(*args)}`` for ``tasks = {key: (fn, args)}``, in ``workers`` processes."""
    results = run_tasks([Task(fn, args) for fn, args in tasks.values()], workers=workers)
    return dict(zip(tasks, results, strict=True))


def run(out: Path, *, quick: bool = True, rng: int = 0, settings: Fig2Settings | None = None,
        workers: int = 1) -> Section:
    """Run the fig. 2 experiments; write the figures and ``fig2.json`` into ``out``.

    Parameters
    ----------
    out : pathlib.Path
        Output folder (created if missing).
    quick : bool
        Small model for CI (L = 6, q = 4) or the paper's setting (L = q = 20, Hamming 0.3,
        M = 3000).
    rng : int
        Root seed of the model, the samples and the training seeds.
    settings : Fig2Settings, optional
        Override the sizes (tests use tiny ones).
    workers : int
        Processes for the independent trainings and fits (the numbers do not depend on it).
    """
    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    st = settings or settings_for(quick)
    workers = positive_int(workers, "workers")
    section = Section(name="figure2: vanilla transformers vs factored attention (Rende et al. fig. 2)")
    section.parameters = {"quick": quick, "rng": rng, **vars(st)}
    pm, train, test, per_seq_true, W_true, seeds, d = _data_step(st, rng, section, t0)
    results = _run_keyed(_training_tasks(st, train, test, W_true, seeds), workers)
    models, maps, fam, best, rec_fits = _fit_step(st, seeds, results, d)
    d["workers"] = workers
    three_vs_one = _statistics(models, fam, per_seq_true)
    factored_checks(section, st=st, models=models, best=best, rec_fits=rec_fits, train=train, test=test,
                    per_seq_true=per_seq_true, d=d)
    transformer_checks(section, st, models, fam, three_vs_one)
    return _report(out, section, st=st, d=d, pm=pm, models=models, fam=fam, three_vs_one=three_vs_one,
                   maps=maps, t0=t0)


def _data_step(st: Fig2Settings, rng: int, section: Section, t0: float):
    """The data (a tuned instance, training and test sequences), its summary ``d`` (the start of
    ``fig2.json``'s data) and the check ``figure2.data.mixing``."""
    pm, diag, train, test, rejected = make_data(st, rng)
    seeds = model_seeds(rng, st.seeds)
    per_seq_true = _nll_per_sequence(pm.logits(test), test)
    H = float(per_seq_true.mean())
    hamming = pm.mean_hamming(test)
    W_true = pm.coupling_tensor()
    d: dict = {"beta": pm.beta, "mean_hamming": hamming, "conditional_entropy": H,
               "conditional_entropy_se": _se(per_seq_true), "conditional_entropy_per_site": H / st.L,
               "seeds": seeds, "rejected_instances": rejected,
               "sampler": {"method": diag.method, "tau_int": diag.tau_int,
                           "sweeps_between": diag.sweeps_between, "rungs": int(diag.ladder.size),
                           "mixing": bool(diag.mixing)},
               "seconds": {"data": time.perf_counter() - t0}}
    section.checks.append(Check(
        name="figure2.data.mixing", passed=bool(diag.mixing),
        value={"beta": pm.beta, "mean_hamming": hamming, "tau_int": diag.tau_int,
               "method": diag.method},
        threshold="the sampler's own mixing diagnostics pass",
        detail=f"{diag.method} sampler at beta = {pm.beta:.4g}, mean Hamming {hamming:.3f} "
               f"(target {st.target_hamming}); M = {st.M} train and {st.n_test} test sequences "
               "from the same chains"))
    return pm, train, test, per_seq_true, W_true, seeds, d


def _training_tasks(st: Fig2Settings, train, test, W_true, seeds) -> dict:
    """``{key: (fn, args)}``: every training run and fit of the figure."""
    # ---- every training run is an independent task (same data, seeds shared between models);
    # run in ``workers`` processes, each task seeds itself: the results do not depend on ``workers``
    tasks: dict = {}
    for k, seed in enumerate(seeds):
        for layers in (1, 3):
            tasks[("tf", layers, 1.0, k)] = (_task_transformer, (st, train, test, layers, 1.0, seed,
                                                                 k == 0))
        for g in st.gammas:
            if g != 1.0 and k < st.gamma_seeds:
                tasks[("tf", 1, g, k)] = (_task_transformer, (st, train, test, 1, g, seed, False))
        tasks[("fa", k)] = (_task_factored_seed, (st, train, test, W_true, seed))
    tasks[("fa_mf",)] = (_task_factored_mf, (st, train, test, W_true))
    for M in st.rec_Ms:
        if M != st.M:
            for r in range(min(st.seeds, st.M // M)):  # disjoint subsets of the training set
                tasks[("rec", M, r)] = (_task_reconstruction, (st, train[r * M:(r + 1) * M], W_true))
    return tasks


def _fit_step(st: Fig2Settings, seeds, results: dict, d: dict):
    """Gather the tasks' results: the models of fig. 2a/b, their attention maps, the gamma family
    (fig. 2d), the trained factored layer and the fits of fig. 2c (``d["reconstruction_vs_M"]``)."""
    models: dict[str, dict] = {}
    maps: dict[str, np.ndarray] = {}
    for name, layers in (("transformer_1", 1), ("transformer_3", 3)):
        runs = [results[("tf", layers, 1.0, k)] for k in range(len(seeds))]
        models[name] = {"curves": [r["curve"] for r in runs], "epochs": runs[0]["epochs"],
                        "final": [float(r["per_seq"].mean()) for r in runs],
                        "per_seq": [r["per_seq"] for r in runs],
                        "n_parameters": runs[0]["n_parameters"],
                        "seconds": float(sum(r["seconds"] for r in runs))}
        A = runs[0]["maps"]
        maps[name] = A[0] if layers == 1 else A[-2:].mean(axis=0)
    # factored attention: the SGD runs of fig. 2a, then the minimiser of the same objective. Every
    # start (each seed's SGD end point, and the mean-field start) is taken to stationarity by
    # L-BFGS and trust-region Newton; the trained layer is the lowest objective reached.
    fa_runs = [results[("fa", k)] for k in range(len(seeds))]
    mf = results[("fa_mf",)]
    starts = [dict(r["fit"], start=f"SGD end point, seed {seed}")
              for r, seed in zip(fa_runs, seeds, strict=True)]
    starts.append(dict(mf["fit"], start="mean-field"))
    best = min(starts, key=lambda f: f["objective"])
    rec = {"curves": [r["curve"] for r in fa_runs], "epochs": np.arange(1, st.epochs + 1),
           "final_sgd": [r["final_sgd"] for r in fa_runs],
           "reconstruction_error_sgd": [r["reconstruction_error_sgd"] for r in fa_runs],
           "final": [float(best["per_seq"].mean())], "per_seq": [best["per_seq"]],
           "reconstruction_error": [best["reconstruction_error"]], "trained_layer": best["start"],
           "starts": [{k: v for k, v in f.items() if k not in ("per_seq", "attention", "value")}
                      for f in starts],
           "starts_at_best": int(sum(f["objective"] - best["objective"]
                                     <= 1e-9 * abs(best["objective"]) for f in starts)),
           "n_parameters": st.L * (st.L - 1) + st.q**2,
           "seconds": float(sum(r["seconds"] for r in fa_runs) + mf["seconds"])}
    maps["factored"] = np.abs(best["attention"])
    models["factored"] = rec

    # ---- fig. 2c: reconstruction error vs M (mean-field start, disjoint subsets of the training set)
    rec_M = [[best["reconstruction_error"]] if M == st.M else
             [results[("rec", M, r)]["reconstruction_error"] for r in range(min(st.seeds, st.M // M))]
             for M in st.rec_Ms]
    rec_fits = [results[k]["fit"] for k in results if k[0] == "rec"]
    d["reconstruction_vs_M"] = {"M": list(st.rec_Ms), "error": rec_M,
                                "method": "L-BFGS + Newton from the mean-field start",
                                "stationarity": [f["stationarity"] for f in rec_fits],
                                "seconds": float(sum(results[k]["seconds"] for k in results
                                                     if k[0] == "rec"))}

    # ---- fig. 2d: the gamma family (one layer), seeds shared with the runs above
    fam = {"gamma": list(st.gammas), "final": [], "per_seq": []}
    for g in st.gammas:
        if g == 1.0:  # the vanilla 1-layer runs above
            per = models["transformer_1"]["per_seq"][:st.gamma_seeds]
        else:
            per = [results[("tf", 1, g, k)]["per_seq"] for k in range(min(st.gamma_seeds, st.seeds))]
        fam["per_seq"].append(per)
        fam["final"].append([float(p.mean()) for p in per])
    fam["seconds"] = float(sum(results[k]["seconds"] for k in results
                               if k[0] == "tf" and k[2] != 1.0))
    d["seconds"]["training_cpu_tasks"] = float(sum(r["seconds"] for r in results.values()))
    return models, maps, fam, best, rec_fits


def _statistics(models: dict, fam: dict, per_seq_true: np.ndarray) -> dict:
    """Final losses, their standard errors and the paired comparisons (in place); returns the
    comparison of three layers with one."""
    fa_ps = models["factored"]["per_seq"]
    for r in models.values():
        r["vs_entropy"] = _compare(r["per_seq"], per_seq_true)
        r["final_mean"] = float(np.mean(r["final"]))
        r["final_se_seeds"] = _se(r["final"])
        # seeds and test set in quadrature (the error bars of the figures)
        r["final_se"] = math.hypot(r["final_se_seeds"], float(np.mean([_se(p) for p in r["per_seq"]])))
    fam["final_se"] = [math.hypot(_se([float(p.mean()) for p in per]),
                                  float(np.mean([_se(p) for p in per]))) for per in fam["per_seq"]]
    fam["vs_factored"] = [_compare(per, fa_ps[0]) for per in fam["per_seq"]]
    three_vs_one = _compare(models["transformer_3"]["per_seq"], models["transformer_1"]["per_seq"])
    return three_vs_one


def _report(out: Path, section: Section, *, st: Fig2Settings, d: dict, pm, models: dict, fam: dict,
            three_vs_one: dict, maps: dict, t0: float) -> Section:
    """The figures and ``fig2.json``."""
    for r in models.values():
        r.pop("per_seq")
    fam.pop("per_seq")
    d["models"] = models
    d["three_vs_one"] = three_vs_one
    d["gamma_family"] = fam
    d["attention_maps"] = {k: v for k, v in maps.items()}
    d["attention_vs_J"] = {k: _offdiag_corr(v, np.abs(pm.couplings)) for k, v in maps.items()}
    d["true_attention_abs_beta_J"] = np.abs(pm.beta * pm.couplings)
    d["seconds"]["total_before_figures"] = time.perf_counter() - t0
    section.data = d
    from replica_mlm.plotting import styled
    from replica_mlm.validation.figure2_plots import figures

    section.figures += styled(figures)(out, st, d)  # drawn in the package's style
    d["seconds"]["total"] = time.perf_counter() - t0
    write_json(out / "fig2.json", {
        "passed": section.passed, "parameters": section.parameters,
        "checks": [vars(c) for c in section.checks], "data": d}, indent=2)
    return section


def _offdiag_corr(A: np.ndarray, B: np.ndarray) -> float:
    """Pearson correlation of the off-diagonal entries of two L x L maps (symmetrised)."""
    off = ~np.eye(A.shape[0], dtype=bool)
    a = (A + A.T)[off]
    b = (B + B.T)[off]
    return float(np.corrcoef(a, b)[0, 1])
