"""The checks of the fig. 2 section (:mod:`replica_mlm.validation.figure2_section`), from the
gathered results of its training runs and fits."""

from __future__ import annotations

import math

import numpy as np

from replica_mlm._base.stats import mean_stderr, zscore
from replica_mlm.learners.attention import FactoredAttention
from replica_mlm.learners.attention_diagnostics import finite_sample_excess
from replica_mlm.validation.report import Check, Section

__all__ = ["KKT_FRACTION", "factored_checks", "transformer_checks"]

#: the L-BFGS fits count as converged when ``|grad F| |x|`` is below this fraction of the
#: standard error of the factored layer's test loss (check ``figure2.factored_converged``)
KKT_FRACTION = 0.01


def _se(x) -> float:
    """Standard error of the mean of ``x`` (0 for a single value)."""
    x = np.asarray(x, dtype=float)
    return mean_stderr(x, single=0.0).stderr


def factored_checks(section: Section, *, st, models: dict, best: dict, rec_fits: list, train, test,
                    per_seq_true: np.ndarray, d: dict) -> None:
    """``figure2.factored_converged`` and ``figure2.factored_reaches_entropy`` (appended to
    ``section``); the expected finite-M excess goes to ``d["finite_M_excess"]``."""
    rec = models["factored"]
    fa_ps = rec["per_seq"]
    H = float(per_seq_true.mean())
    c = models["factored"]["vs_entropy"]
    se_fa = math.hypot(models["factored"]["final_se_seeds"],
                       float(np.mean([_se(p) for p in fa_ps])))
    # stationarity of every fit of the objective (each start, and the fits of fig. 2c):
    # |grad F| |x| bounds the first-order change of the objective (nats per sequence) under any
    # move of the parameters by up to their own size
    fits = rec["starts"] + rec_fits
    first_order = [f["stationarity"] for f in fits]
    section.checks.append(Check(
        name="figure2.factored_converged",
        passed=bool(max(first_order) <= KKT_FRACTION * se_fa),
        value={"first_order_change": first_order, "standard_error": se_fa,
               "gradient_norm": [f["gradient_norm"] for f in fits],
               "iterations": [f["iterations"] for f in fits],
               "newton_iterations": [f["newton_iterations"] for f in fits]},
        threshold=f"|grad F| |x| <= {KKT_FRACTION:g} x the test loss's standard error, every fit",
        detail=f"{len(fits)} fits of factored attention (L-BFGS then trust-region Newton): "
               f"|grad F| |x| at most {max(first_order):.2e} nats per sequence against the "
               f"standard error {se_fa:.4f}; {rec['starts_at_best']} of {len(rec['starts'])} starts "
               f"reached the lowest objective {best['objective']:.10f} (the others: "
               + (", ".join(f"{f['objective'] - best['objective']:+.2e}" for f in rec["starts"]
                            if f["objective"] - best["objective"] > 1e-9 * abs(best["objective"]))
                  or "none") + ")"))
    # data, not a check: the excess a well-specified model is expected to have at this M
    fitted = FactoredAttention(attention=best["attention"], value=best["value"])
    ex = finite_sample_excess(fitted, train, lam=st.lam)
    ex.pop("per_sequence_gradients")
    # the same trace with H and G from the test sequences (at the fit, G on the training set is
    # biased low by the fit itself): a second estimate of the expectation at M training sequences
    trace_test = finite_sample_excess(fitted, test, lam=st.lam)["trace"]
    d["finite_M_excess"] = dict(
        ex, trace_test_set=trace_test, expected_excess_test_set=trace_test / (2 * st.M),
        measured_excess=c["difference"], measured_excess_se=c["se"],
        test_loss_standard_error=se_fa,
        z_measured_vs_expected=zscore(c["difference"], ex["expected_excess"], c["se"]),
        note="expected test-loss excess over the true conditionals of a well-specified model "
             "fitted on M sequences, tr(H^-1 G)/(2M) per sequence (H: Hessian of the training "
             "objective, G: covariance of the per-sequence gradients, both at the fit)")
    section.checks.append(Check(
        name="figure2.factored_reaches_entropy", passed=c["difference"] <= se_fa,
        value={"excess": c["difference"], "standard_error": se_fa, "test_loss": models["factored"]
               ["final_mean"], "conditional_entropy": H, "excess_paired_se": c["se"]},
        threshold="test loss - conditional entropy <= the test loss's standard error (test set)",
        detail=f"factored attention (minimiser of the MLM objective, start: {rec['trained_layer']}): "
               f"test loss {models['factored']['final_mean']:.4f} vs conditional entropy {H:.4f}: "
               f"excess {c['difference']:.4f} (paired s.e. {c['se']:.4f}) against the test loss's "
               f"standard error {se_fa:.4f}; a well-specified fit on M = {st.M} sequences is "
               f"expected to exceed by tr(H^-1 G)/(2M) = {ex['expected_excess']:.4f} (H, G on the "
               f"training set; {trace_test / (2 * st.M):.4f} with H, G on the test set; fig2.json: "
               "finite_M_excess)"))


def transformer_checks(section: Section, st, models: dict, fam: dict, three_vs_one: dict) -> None:
    """``figure2.one_layer_gap``, ``figure2.three_layers_improve`` and
    ``figure2.gamma_family_never_beats_factored`` (appended to ``section``)."""
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
