"""Figures of the ``figure2`` validation entry (fig. 2 a-d of Rende et al.), PNG and PDF."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from replica_mlm._base.stats import mean_stderr


def _save(fig, out: Path, stem: str) -> list[str]:
    from matplotlib.ticker import NullFormatter

    from replica_mlm.plotting import save

    for ax in fig.axes:  # minor tick labels of log x axes overlap
        ax.xaxis.set_minor_formatter(NullFormatter())

    return [p.name for p in save(fig, out / stem)]  # 300 dpi PNG + PDF, tight box


def _band(ax, x, curves, label, **kw):
    Y = np.asarray(curves, dtype=float)
    m, se = mean_stderr(Y, axis=0, single=0.0)
    (line,) = ax.plot(x, m, label=f"{label} (mean of {Y.shape[0]} seeds)", **kw)
    ax.fill_between(x, m - se, m + se, color=line.get_color(), alpha=0.25, lw=0)


def figures(out: Path, st, d: dict) -> list[str]:
    import matplotlib.pyplot as plt

    files: list[str] = []
    H = d["conditional_entropy"]
    models = d["models"]
    title = (f"$L = {st.L}$, $q = {st.q}$, $M = {st.M}$, $\\beta = {d['beta']:.3g}$ "
             f"(mean Hamming {d['mean_hamming']:.2f})")
    labels = {"transformer_1": "transformer, 1 layer", "transformer_3": "transformer, 3 layers",
              "factored": "factored attention (SGD)"}
    styles = {"transformer_1": "-", "transformer_3": "--", "factored": "-."}

    # (a) test loss per epoch
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for name, r in models.items():
        _band(ax, np.asarray(r["epochs"]), r["curves"], labels[name], ls=styles[name])
    fm = models["factored"]["final_mean"]
    ax.axhline(fm, color="C2", ls=(0, (1, 1)), lw=1.2,
               label=f"factored attention, minimiser of the objective {fm:.3f}")
    ax.axhline(H, color="k", ls=":", lw=1.2, label=f"conditional entropy {H:.3f}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("test MLM loss per sequence (nats)")
    top = max(float(np.max(np.asarray(r["curves"])[:, 0])) for r in models.values())
    ax.set_ylim(H - 0.05 * abs(H), top + 0.02 * abs(top))
    ax.set_title("(a) " + title, fontsize=8.5)
    ax.legend(fontsize=8)
    files += _save(fig, out, "fig2a_test_loss")
    plt.close(fig)

    # (b) attention maps beside |beta J|
    maps = d["attention_maps"]
    panels = [("$|\\beta J|$\n(true)", d["true_attention_abs_beta_J"], None),
              ("factored |A| (learned;\nonly A V is identifiable)", maps["factored"], "factored"),
              ("transformer,\n1 layer", maps["transformer_1"], "transformer_1"),
              ("transformer, 3 layers\n(mean of the last two)", maps["transformer_3"], "transformer_3")]
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.9), constrained_layout=True)
    for ax, (name, A, key) in zip(axes, panels, strict=True):
        im = ax.imshow(A, cmap="viridis")
        corr = "" if key is None else f"\noff-diagonal corr. with |J|: {d['attention_vs_J'][key]:.2f}"
        ax.set_title(name + corr, fontsize=9)
        ax.set_xlabel("position j")
        ax.set_ylabel("masked position i")
        ticks = np.arange(0, len(A), 5)
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("(b) attention maps (rows: the masked site's query); " + title, fontsize=9)
    files += _save(fig, out, "fig2b_attention_maps")
    plt.close(fig)

    # (c) reconstruction error vs M
    rc = d["reconstruction_vs_M"]
    Ms = np.asarray(rc["M"], dtype=float)
    E = [np.asarray(e, dtype=float) for e in rc["error"]]  # one entry per disjoint subset
    Em = np.array([e.mean() for e in E])
    Ese = np.array([mean_stderr(e, single=0.0).stderr for e in E])
    fig, ax = plt.subplots(figsize=(5.6, 4.2))
    ax.errorbar(Ms, Em, yerr=Ese, marker="o", capsize=3,
                label=f"factored attention, minimiser at $\\lambda$ = {st.lam:g} "
                      "(mean over disjoint subsets)")
    ax.plot(Ms, Em[-1] * (Ms / Ms[-1]) ** -0.5, "k--", lw=0.8,
            label="$M^{-1/2}$ through the largest $M$")
    fa = models["factored"]["reconstruction_error_sgd"]
    ax.errorbar([st.M], [np.mean(fa)], yerr=[mean_stderr(fa).stderr] if len(fa) > 1
                else None, marker="s", ls="none", capsize=3,
                label=f"factored attention (SGD, {st.epochs} epochs)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(Ms, [f"{m:g}" for m in Ms])
    ax.set_xlabel("number of training sequences M")
    ax.set_ylabel("relative error of $\\beta J U$ (zero-sum gauge)")
    ax.set_title("(c) coupling reconstruction; " + title, fontsize=8)
    ax.legend(fontsize=8, loc="lower left")
    files += _save(fig, out, "fig2c_reconstruction")
    plt.close(fig)

    # (d) gamma family vs factored attention
    fam = d["gamma_family"]
    g = np.asarray(fam["gamma"], dtype=float)
    F = [np.asarray(f, dtype=float) for f in fam["final"]]
    m = np.array([f.mean() for f in F])
    se = np.asarray(fam["final_se"], dtype=float)  # seeds and test set in quadrature
    fig, ax = plt.subplots(figsize=(5.6, 4.2))
    ax.errorbar(g, m, yerr=se, marker="o", capsize=3,
                label=f"one layer on $E e_s + \\gamma p$ ({len(F[0])} seed(s))")
    fm, fse = models["factored"]["final_mean"], models["factored"]["final_se"]
    ax.axhline(fm, color="C2", ls="-.", label=f"factored attention (minimiser) {fm:.3f} ± {fse:.3f}")
    ax.axhspan(fm - fse, fm + fse, color="C2", alpha=0.2, lw=0)
    ax.axhline(H, color="k", ls=":", label=f"conditional entropy {H:.3f}")
    ax.set_xscale("log")
    ax.set_xticks(g, [f"{v:g}" for v in g])
    ax.set_xlabel("$\\gamma$ (weight of the positional encoding)")
    ax.set_ylabel("final test MLM loss per sequence (nats)")
    ax.set_title("(d) $\\gamma$ family (error bars: 1 s.e., seeds and test set; band: test set)\n"
                 + title, fontsize=8)
    ax.legend(fontsize=8)
    files += _save(fig, out, "fig2d_gamma_family")
    plt.close(fig)
    return files
