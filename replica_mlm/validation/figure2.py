"""Validation entry ``figure2``: fig. 2 of Rende et al., vanilla transformers against factored attention.

On sequences sampled from a random generalised Potts model (``PottsModel.random``, beta tuned to a
target mean Hamming distance, train and test sets drawn together from the same chains and split at
random) it trains, for every seed of ``seeds``, on the **same** training set and with the **same**
seed:

* the vanilla transformer (:class:`replica_mlm.discrete.transformer.TransformerMLM`) with 1 and with 3
  layers (SGD, mini-batches, cosine-annealed learning rate);
* one layer of fully factored attention (:meth:`replica_mlm.FactoredAttention.fit`, linear variant,
  small ``lam``), once by mini-batch SGD with the same batch size, epochs and cosine schedule (its
  test-loss curve is the one of fig. 2a) and once minimised to convergence by L-BFGS from the same
  initialisation seed (the trained layer of the checks, fig. 2b-d);
* the "gamma family": one transformer layer on tokens ``E e_{s_j} + gamma p_j`` for several gamma;

and writes ``fig2a`` (test MLM loss per epoch against the conditional entropy), ``fig2b`` (attention
maps beside ``|beta J|``), ``fig2c`` (gauge-invariant reconstruction error of the couplings by
factored attention vs the number of training sequences) and ``fig2d`` (final test loss along the
gamma family against the factored layer), each as PNG and PDF, and ``fig2.json`` with every number.

Training budget (a deviation from the paper, measured): the transformers are trained by SGD with
momentum 0.9 (the paper: plain SGD) for a few tens of epochs, because on one core plain SGD is far
slower: on ``PottsModel.random(L=20, q=20, seed=0)`` at beta = 3 (conditional entropy 12.25 nats per
sequence), 10 epochs of a 1-layer transformer at lr 0.1 reached a test loss of 35.9 nats with plain
SGD and 25.5 with momentum 0.9. The epoch counts are in ``fig2.json``; transformers that are still
improving at the last epoch are reported as such by their curves in fig. 2a.

Cost of ``--full`` (3 seeds, 40 epochs, gamma 0.3, 3, 10 on one seed, L-BFGS up to 5000
iterations; one thread, one process), measured in CPU seconds at L = q = 20, M = 3000: 2.2-2.4 s
per transformer epoch (1 or 3 layers, with one test evaluation), 0.095 s per L-BFGS iteration of
the factored layer. That is about 9 minutes for the six transformer runs, 5 for the gamma
family, at most 71 for the nine L-BFGS fits if every one ran to 5000 iterations (they stop
earlier when the gradient criterion is met), plus the tuning and sampling at Hamming 0.3.

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

A precondition of check 1 is checked too: ``figure2.factored_converged``, every L-BFGS fit of the
factored layer is stationary, ``|grad F| |x| <= 0.01`` times that standard error (``F`` the
training objective per sequence, ``x`` the parameters: the first-order change of ``F`` under any
move of the parameters by up to their own size is far below the statistical error).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from replica_mlm.discrete.attention import FactoredAttention, reconstruction_error
from replica_mlm.io import write_json
from replica_mlm.stats import mean_stderr, zscore
from replica_mlm.validation.potts import draw_like_pilot, tuned_instance
from replica_mlm.validation.report import Check, Section

__all__ = ["Fig2Settings", "factored_gradient", "make_data", "run", "settings_for"]

#: the L-BFGS fits count as converged when ``|grad F| |x|`` is below this fraction of the
#: standard error of the factored layer's test loss (check ``figure2.factored_converged``)
KKT_FRACTION = 0.01


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
    max_iter: int = 500
    #: L-BFGS's relative tolerance on the objective (scipy's ftol)
    lbfgs_tol: float = 1e-9
    batch_size: int = 100
    tune_method: str = "auto"


def settings_for(quick: bool) -> Fig2Settings:
    if quick:
        return Fig2Settings(L=6, q=4, target_hamming=0.45, M=2000, n_test=600, seeds=4, epochs=30,
                            eval_every=5, lr=0.05, momentum=0.9, lr_factored=0.1, d_model=16,
                            gammas=(0.3, 1.0, 3.0), gamma_seeds=1, rec_Ms=(200, 600, 2000),
                            tune_method="gibbs")
    return Fig2Settings(L=20, q=20, target_hamming=0.3, M=3000, n_test=1000, seeds=3, epochs=40,
                        eval_every=5, lr=0.1, momentum=0.9, lr_factored=0.05, d_model=20,
                        gammas=(0.3, 1.0, 3.0, 10.0), gamma_seeds=1, rec_Ms=(300, 1000, 3000),
                        max_iter=5000, lbfgs_tol=1e-15)


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


def _se(x) -> float:
    x = np.asarray(x, dtype=float)
    return mean_stderr(x, single=0.0).stderr


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
    from replica_mlm.discrete.transformer import TransformerMLM

    tf = TransformerMLM(L=st.L, q=st.q, layers=layers, d_model=st.d_model, heads=1, gamma=gamma,
                        rng=seed)
    hist = tf.fit(train, epochs=st.epochs, batch_size=st.batch_size, lr=st.lr, schedule="cosine",
                  test=test, momentum=st.momentum, warmup=st.warmup_epochs * -(-st.M // st.batch_size),
                  eval_every=st.eval_every)
    return tf, hist


def run(out: Path, *, quick: bool = True, rng: int = 0, settings: Fig2Settings | None = None) -> Section:
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
    """
    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    st = settings or settings_for(quick)
    section = Section(name="figure2: vanilla transformers vs factored attention (Rende et al. fig. 2)")
    section.parameters = {"quick": quick, "rng": rng, **vars(st)}
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

    # ---- 1- and 3-layer transformers and factored attention: same data, same seeds
    models: dict[str, dict] = {}
    maps: dict[str, np.ndarray] = {}
    for name, layers in (("transformer_1", 1), ("transformer_3", 3)):
        t1 = time.perf_counter()
        rec = {"curves": [], "epochs": None, "final": [], "per_seq": []}
        for k, seed in enumerate(seeds):
            tf, hist = _train_transformer(st, train, test, layers=layers, gamma=1.0, seed=seed)
            ps = tf.per_sequence_loss(test)
            rec["curves"].append(hist.test_loss)
            rec["epochs"] = hist.test_epochs
            rec["final"].append(float(ps.mean()))
            rec["per_seq"].append(ps)
            if k == 0:
                A = tf.attention_maps(test)
                maps[name] = A[0] if layers == 1 else A[-2:].mean(axis=0)
                rec["n_parameters"] = tf.n_parameters
        rec["seconds"] = time.perf_counter() - t1
        models[name] = rec
    t1 = time.perf_counter()
    rec = {"curves": [], "epochs": np.arange(1, st.epochs + 1), "final": [], "per_seq": [],
           "reconstruction_error": [], "final_sgd": [], "reconstruction_error_sgd": []}
    for k, seed in enumerate(seeds):
        # the curve of fig. 2a: mini-batch SGD with the transformers' batch size and schedule
        sgd = FactoredAttention.fit(train, q=st.q, lam=st.lam, rng=seed, method="sgd",
                                    epochs=st.epochs, batch_size=st.batch_size, lr=st.lr_factored,
                                    monitor=test)
        rec["curves"].append(sgd.fit_info.monitor_history)
        rec["final_sgd"].append(sgd.mlm_loss(test))
        rec["reconstruction_error_sgd"].append(reconstruction_error(sgd.couplings(), W_true))
        # the trained layer: the same objective minimised to convergence by L-BFGS, same init seed
        fa = FactoredAttention.fit(train, q=st.q, lam=st.lam, rng=seed, max_iter=st.max_iter,
                                   tol=st.lbfgs_tol)
        ps = _nll_per_sequence(fa.logits(test), test)
        rec["final"].append(float(ps.mean()))
        rec["per_seq"].append(ps)
        rec["reconstruction_error"].append(reconstruction_error(fa.couplings(), W_true))
        rec.setdefault("lbfgs_converged", []).append(bool(fa.fit_info.converged))
        rec.setdefault("lbfgs_iterations", []).append(int(fa.fit_info.n_iter))
        rec.setdefault("lbfgs_message", []).append(fa.fit_info.message)
        rec.setdefault("gradient", []).append(factored_gradient(fa, train, lam=st.lam))
        if k == 0:
            maps["factored"] = np.abs(fa.attention)
            rec["n_parameters"] = st.L * (st.L - 1) + st.q**2
    rec["seconds"] = time.perf_counter() - t1
    models["factored"] = rec

    # ---- fig. 2c: reconstruction error vs M (L-BFGS on nested subsets of the same training set)
    t1 = time.perf_counter()
    rec_M = []
    for M in st.rec_Ms:
        if M == st.M:
            rec_M.append(list(rec["reconstruction_error"]))
            continue
        rec_M.append([reconstruction_error(
            FactoredAttention.fit(train[:M], q=st.q, lam=st.lam, rng=seed, max_iter=st.max_iter)
            .couplings(), W_true) for seed in seeds])
    d["reconstruction_vs_M"] = {"M": list(st.rec_Ms), "error": rec_M, "method": "L-BFGS",
                                "seconds": time.perf_counter() - t1}

    # ---- fig. 2d: the gamma family (one layer), seeds shared with the runs above
    t1 = time.perf_counter()
    fam = {"gamma": list(st.gammas), "final": [], "per_seq": []}
    for g in st.gammas:
        if g == 1.0 and st.gamma_seeds <= st.seeds:  # the vanilla 1-layer runs above
            per = models["transformer_1"]["per_seq"][:st.gamma_seeds]
        else:
            per = [_train_transformer(st, train, test, layers=1, gamma=g, seed=seed)[0]
                   .per_sequence_loss(test) for seed in seeds[:st.gamma_seeds]]
        fam["per_seq"].append(per)
        fam["final"].append([float(p.mean()) for p in per])
    fam["seconds"] = time.perf_counter() - t1

    # ---- statistics and checks
    fa_ps = models["factored"]["per_seq"]
    for r in models.values():
        r["vs_entropy"] = _compare(r["per_seq"], per_seq_true)
        r["final_mean"] = float(np.mean(r["final"]))
        r["final_se_seeds"] = _se(r["final"])
        # seeds and test set in quadrature (the error bars of the figures)
        r["final_se"] = math.hypot(r["final_se_seeds"], float(np.mean([_se(p) for p in r["per_seq"]])))
    fam["final_se"] = [math.hypot(_se([float(p.mean()) for p in per]),
                                  float(np.mean([_se(p) for p in per]))) for per in fam["per_seq"]]
    fam["vs_factored"] = [_compare(per, fa_ps[:len(per)]) for per in fam["per_seq"]]
    three_vs_one = _compare(models["transformer_3"]["per_seq"], models["transformer_1"]["per_seq"])

    c = models["factored"]["vs_entropy"]
    se_fa = math.hypot(models["factored"]["final_se_seeds"],
                       float(np.mean([_se(p) for p in fa_ps])))
    # stationarity of every L-BFGS fit: |grad F| |x| bounds the first-order change of the
    # objective (nats per sequence) under any move of the parameters by up to their own size
    first_order = [g["norm"] * g["parameter_norm"] for g in models["factored"]["gradient"]]
    section.checks.append(Check(
        name="figure2.factored_converged",
        passed=bool(max(first_order) <= KKT_FRACTION * se_fa),
        value={"first_order_change": first_order, "standard_error": se_fa,
               "gradient_norm": [g["norm"] for g in models["factored"]["gradient"]],
               "iterations": models["factored"]["lbfgs_iterations"]},
        threshold=f"|grad F| |x| <= {KKT_FRACTION:g} x the test loss's standard error, every seed",
        detail=f"L-BFGS fits of factored attention: |grad F| |x| at most {max(first_order):.2e} "
               f"nats per sequence against the standard error {se_fa:.4f} "
               f"(iterations {models['factored']['lbfgs_iterations']}; scipy messages: "
               f"{sorted(set(models['factored']['lbfgs_message']))})"))
    section.checks.append(Check(
        name="figure2.factored_reaches_entropy", passed=c["difference"] <= se_fa,
        value={"excess": c["difference"], "standard_error": se_fa, "test_loss": models["factored"]
               ["final_mean"], "conditional_entropy": H},
        threshold="test loss - conditional entropy <= the test loss's standard error (seeds and test set)",
        detail=f"factored attention (L-BFGS, converged in {sum(models['factored']['lbfgs_converged'])}"
               f" of {len(seeds)} fits): test loss "
               f"{models['factored']['final_mean']:.4f} vs conditional entropy {H:.4f}: excess "
               f"{c['difference']:.4f} against its standard error {se_fa:.4f}"))
    c = models["transformer_1"]["vs_entropy"]
    section.checks.append(Check(
        name="figure2.one_layer_gap", passed=c["z"] > 3.0, value=c,
        threshold="(test loss - conditional entropy) / s.e. > 3",
        detail=f"1-layer transformer: test loss {models['transformer_1']['final_mean']:.4f}, "
               f"excess over the conditional entropy {c['difference']:.4f} +- {c['se']:.4f} "
               f"(z = {c['z']:.1f})"))
    section.checks.append(Check(
        name="figure2.three_layers_improve", passed=three_vs_one["z"] < -3.0, value=three_vs_one,
        threshold="(loss_3 - loss_1) / s.e. < -3 (paired by seed and test sequence)",
        detail=f"3-layer minus 1-layer test loss {three_vs_one['difference']:.4f} +- "
               f"{three_vs_one['se']:.4f} (z = {three_vs_one['z']:.1f})"))
    zs = [f["z"] for f in fam["vs_factored"]]
    section.checks.append(Check(
        name="figure2.gamma_family_never_beats_factored", passed=min(zs) > -2.0,
        value={"gamma": list(st.gammas), "z": zs,
               "difference": [f["difference"] for f in fam["vs_factored"]]},
        threshold="(loss_gamma - loss_factored) / s.e. > -2 for every gamma",
        detail="test loss of one layer on E e_s + gamma p minus the factored layer's: "
               + ", ".join(f"gamma {g:g}: {f['difference']:+.3f} (z = {f['z']:.1f})"
                           for g, f in zip(st.gammas, fam["vs_factored"], strict=True))))

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


def factored_gradient(fa: FactoredAttention, train: np.ndarray, *, lam: float) -> dict:
    """Gradient of the fitted layer's training objective ``F`` (per sequence) at its parameters.

    ``F`` is the objective ``FactoredAttention.fit`` minimises (linear variant, penalty
    ``(lam p / 2)(|A|^2 + |V|^2)`` on the summed loss); returns the Euclidean norm and the largest
    component of its gradient and the norm of the parameters ``(A off the diagonal, V)``.
    """
    from replica_mlm.discrete.attention import _FAProblem

    L = fa.attention.shape[0]
    problem = _FAProblem(np.asarray(train), fa.value.shape[0], lam, "linear")
    x = np.concatenate([fa.attention[~np.eye(L, dtype=bool)], fa.value.ravel()])
    _, g = problem.loss_grad(x)
    return {"norm": float(np.linalg.norm(g)), "max": float(np.abs(g).max()),
            "parameter_norm": float(np.linalg.norm(x))}


def _offdiag_corr(A: np.ndarray, B: np.ndarray) -> float:
    """Pearson correlation of the off-diagonal entries of two L x L maps (symmetrised)."""
    off = ~np.eye(A.shape[0], dtype=bool)
    a = (A + A.T)[off]
    b = (B + B.T)[off]
    return float(np.corrcoef(a, b)[0, 1])
