"""Figures of the ``potts`` validation section (:mod:`replica_mlm.validation.potts_section`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["figures"]


def _errbar(ax, x, Y, label, marker="o", **kw):
    Y = np.asarray(Y, dtype=float)
    ok = ~np.all(np.isnan(Y), axis=1)
    if not ok.any():  # not measured in this mode (e.g. the softmax fits of --full)
        return
    m = np.nanmean(Y[ok], axis=1)
    n = np.sum(~np.isnan(Y[ok]), axis=1)
    dev = np.where(np.isnan(Y[ok]), 0.0, Y[ok] - m[:, None])
    sd = np.sqrt((dev**2).sum(axis=1) / np.maximum(n - 1, 1))
    se = np.where(n > 1, sd / np.sqrt(n), 0.0)  # no error bar for a single data set
    ax.errorbar(np.asarray(x)[ok], m, yerr=np.nan_to_num(se), capsize=2.5, marker=marker, mfc="white",
                label=label, **kw)


def _save(fig, out: Path, stem: str) -> list[str]:
    from replica_mlm.plotting import log_ticks, save

    for ax in fig.axes:  # plain-number labels on log axes (no overlapping minor labels)
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log":
                log_ticks(axis)
    return [written.name for written in save(fig, out / stem)]


def _versus_M(ax, ylabel: str, title: str) -> None:
    """Log-log axes of a quantity against the number of training sequences M, with legend."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of training sequences $M$")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)


def figures(out: Path, st, d: dict, diag, intercept: float) -> list[str]:
    """Draw the section's four figures (PNG and PDF) into ``out`` from its settings ``st``, data
    ``d``, sampler diagnostics ``diag`` and the fitted intercept of the reconstruction slope;
    returns the file names written."""
    import matplotlib.pyplot as plt

    from replica_mlm.plotting import STYLE

    with plt.rc_context(STYLE):
        return _draw(out, st, d, diag, intercept)


def _draw(out: Path, st, d: dict, diag, intercept: float) -> list[str]:
    import matplotlib.pyplot as plt

    files: list[str] = []
    Ms = np.asarray(st.Ms, dtype=float)
    title = (rf"$L = {st.L}$, $q = {st.q}$, $\beta = {d['beta']:.3g}$ "
             f"(mean Hamming distance {d['mean_hamming']:.2f})")

    # reconstruction error vs M
    fig, ax = plt.subplots(figsize=(6, 4.5))
    rec = d["reconstruction"]
    _errbar(ax, Ms, rec["fa"], "factored attention (linear)", marker="o")
    _errbar(ax, Ms, rec["fa_sym"], "factored attention, symmetrised", marker="s")
    _errbar(ax, Ms, rec["plm"], r"full $q \times q$ blocks (plmDCA-style)", marker="^")
    _errbar(ax, Ms, rec["plm_sym"], "full blocks, symmetrised", marker="D")
    ax.plot(Ms, np.exp(intercept) * Ms ** d["reconstruction_slope"], color="0.3", ls=(0, (1, 1.5)), lw=1.2,
            label=rf"fit to factored attention: $\propto M^{{{d['reconstruction_slope']:.2f}}}$")
    ax.plot(Ms, np.nanmean(rec["fa"][0]) * (Ms / Ms[0]) ** -0.5, color="0.5", ls=(0, (6, 2)), lw=0.9,
            label=r"$\propto M^{-1/2}$")
    _versus_M(ax, "relative coupling error\n"
                  r"$\Vert\hat W - W\Vert_F\,/\,\Vert W\Vert_F$ (zero-sum gauge)", title)
    files += _save(fig, out, "potts_reconstruction")
    plt.close(fig)

    # test loss: training curves (2a) and excess vs M (2c)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    H = d["conditional_entropy"]
    for v, c in d["training_curves"].items():
        it = np.arange(1, len(c["train"]) + 1)
        (line,) = ax1.plot(it, c["train"], label=f"{v}: train")
        ax1.plot(it, c["test"], color=line.get_color(), ls=":", lw=2.0, label=f"{v}: test")
    ax1.axhline(H, color="0.4", ls=(0, (6, 2)), lw=1, label="conditional entropy $H$ (optimum)")
    ax1.set_xscale("log")
    ax1.set_xlabel("iteration (L-BFGS, then Newton for the linear layer)")
    ax1.set_ylabel("MLM loss per sequence (nats)")
    ax1.set_title(rf"(a) training at $M = {max(st.Ms)}$, $\lambda = {st.lam:g}$", fontsize=9)
    lo = min(min(np.min(c["train"]) for c in d["training_curves"].values()), H)
    ax1.set_ylim(lo - 0.05 * abs(lo), None)
    ax1.legend(fontsize=8)
    gaps = d["excess_test_loss"]
    _errbar(ax2, Ms, gaps["gap_fa"], "factored attention (linear)", marker="o")
    _errbar(ax2, Ms, gaps["gap_soft"], "factored attention (softmax)", marker="s")
    _errbar(ax2, Ms, gaps["gap_plm"], r"full $q \times q$ blocks (plmDCA-style)", marker="^")
    ax2.plot(Ms, np.nanmean(gaps["gap_fa"][0]) * Ms[0] / Ms, color="0.5", ls=(0, (6, 2)), lw=0.9,
             label=r"$\propto 1/M$")
    _versus_M(ax2, "test loss $-$ conditional entropy $H$ (nats)", "(c) excess test loss " + title)
    files += _save(fig, out, "potts_test_loss")
    plt.close(fig)

    # small lam: test loss vs M
    sl = d["small_lam"]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.errorbar(sl["M"], sl["test_loss"], yerr=sl["test_loss_se"], marker="o", mfc="white", capsize=2.5,
                label=rf"factored attention, $\lambda = {st.small_lam:g}$")
    ax.axhline(H, color="0.4", ls=(0, (6, 2)), lw=1, label="conditional entropy $H$")
    ax.axvline(sl["threshold_M_params_over_L"], color="0.5", ls=":",
               label="$M$ = number of parameters$/L$")
    _versus_M(ax, "test MLM loss per sequence (nats)", "test loss at small regularisation\n" + title)
    files += _save(fig, out, "potts_small_lam")
    plt.close(fig)

    # sampler autocorrelation
    fig, ax = plt.subplots(figsize=(6, 4.5))
    lags = np.arange(diag.rho_spin.size)
    ax.plot(lags, diag.rho_spin, marker="o", ms=3,
            label=rf"spin overlap, $\tau_{{\rm int}} = {diag.tau_spin:.2f}$")
    ax.plot(lags, diag.rho_energy, marker="s", ms=3,
            label=rf"energy, $\tau_{{\rm int}} = {diag.tau_energy:.2f}$")
    ax.axvline(diag.sweeps_between, color="0.5", ls=":",
               label=f"sweeps between samples = {diag.sweeps_between}")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xlabel("lag (sweeps)")
    ax.set_ylabel("normalised autocorrelation")
    who = (f"Gibbs sampler, {diag.n_chains} chains" if diag.method == "gibbs" else
           f"parallel tempering, coldest rung of {diag.n_chains} x {diag.ladder.size}-rung ladders")
    ax.set_title(f"{who}\n" + title, fontsize=9)
    ax.legend(fontsize=8)
    files += _save(fig, out, "potts_gibbs")
    plt.close(fig)
    return files
