"""Figures of the attractor validation section (:mod:`replica_mlm.validation.attractor_section`).

Each function draws one figure in the package's style and writes it as PNG and PDF with
:func:`replica_mlm.plotting.save`; it returns the names of the files written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from replica_mlm._base.stats import mean_stderr

__all__: list[str] = []


def _styled(draw):
    """Draw in the package's style (:func:`replica_mlm.plotting.styled`, imported when drawing)."""
    import functools

    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        from replica_mlm.plotting import styled as in_style

        return in_style(draw)(*args, **kwargs)

    return wrapper


def _band(ax, t, a, label, style="-", color=None):
    m, se = mean_stderr(a, axis=0)
    (line,) = ax.plot(t, m, style, color=color, label=label)
    ax.fill_between(t, m - se, m + se, alpha=0.25, color=line.get_color())


@_styled
def _plot_errors(dig, path: Path) -> list[str]:
    """Error vs step on test inputs with the three references of the test as lines."""
    import matplotlib.pyplot as plt

    from replica_mlm.plotting import save

    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for col, task in enumerate(("masked", "noise")):
        c, mem = dig.curves[task]["test"], dig.memory[task]["test"]
        T = c.error.shape[1] - 1
        t = np.arange(T + 1)
        ax = axes[0, col]
        _band(ax, t, c.error, "dynamics from the corrupted input", color="C0")
        err0 = c.error[:, 0].mean()
        ax.axhline(err0, color="C2", ls="--", label=f"$t = 0$ (corrupted input): {err0:.4f}")
        b = dig.baseline["test"]
        ax.axhline(b[0], color="k", ls="-.", label=f"mean training image: {b[0]:.4f}")
        ax.axhline(c.error[:, -1].mean(), color="C3", ls=":",
                   label=f"$t = {T}$: {c.error[:, -1].mean():.4f}")
        sh = c.extra["shrinkage_error"].mean()
        ax.axhline(sh, color="C4", ls=(0, (1, 3)), lw=1.5,
                   label=f"input shrunk toward the mean image ($k = {dig.shrink[task]:.2f}$): "
                   f"{sh:.4f}")
        ax.axvline(mem.t_best, color="0.5", lw=0.8)
        z = mem.margins()
        ax.set_title(f"{task} test digits: $t^* = {mem.t_best}$ (chosen on the other half); gains "
                     f"{z['z_vs_t0']:.0f}, {z['z_vs_baseline']:.0f}, {z['z_vs_last']:.0f} s.e.",
                     fontsize=8)
        ax.set_ylabel("mean squared pixel error")
        ax = axes[1, col]
        rec = dig.recall[task]["test"]
        _band(ax, t, c.correlation_train, "centred correlation, nearest training image",
              color="C1")
        ax.axhline(c.correlation_train[:, 0].mean(), color="C2", ls="--", label="$t = 0$")
        ax.axvline(rec.t_best, color="0.5", lw=0.8)
        ax.set_title(f"recall test: $t^* = {rec.t_best}$, "
                     + ("passed" if rec.passed else "failed")
                     + f" ($z$ vs $t = 0$: {rec.margins()['z_vs_t0']:.1f})", fontsize=8)
        ax.set_ylabel("centred corr. with nearest training image")
        ax.set_xlabel("step $t$ of the dynamics")
        lo, hi = axes[0, col].get_ylim()
        axes[0, col].set_ylim(lo, lo + 1.7 * (hi - lo))  # head room for the legend
        axes[0, col].legend(fontsize=7, loc="upper right")
        axes[1, col].legend(fontsize=7, loc="upper left")
        for ax in axes[:, col]:
            ax.set_xscale("symlog", linthresh=1.0)
            ax.grid(alpha=0.3)
    s = dig.settings
    fig.suptitle(f"digits, {dig.sizes['n_eval']} held-out test images ($\\beta = {s.beta:g}$, "
                 f"$\\gamma = {s.gamma:g}$, weight decay {s.weight_decay:g}): mean, bands = 1 s.e.")
    fig.tight_layout()
    files = [written.name for written in save(fig, path)]
    plt.close(fig)
    return files


@_styled
def _plot_lifetimes(dig, path: Path) -> list[str]:
    import matplotlib.pyplot as plt

    from replica_mlm.plotting import save

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, task in zip(axes, ("masked", "noise"), strict=True):
        life = dig.lifetimes[task]["test"]
        hi = int(max(life.half_depth.max(), life.t_min.max())) + 2
        bins = np.arange(-0.5, hi + 0.5)
        ax.hist(life.half_depth, bins=bins, color="0.75", label="lifetime (steps at half depth)")
        ax.hist(life.t_min, bins=bins, histtype="step", color="k", ls="--",
                label="step of the lowest error")
        sm = life.summary()["half_depth"]
        ax.axvline(sm["mean"], color="C2", ls="-.",
                   label=f"mean {sm['mean']:.1f} ± {sm['sem']:.1f} (s.d. {sm['std']:.1f})")
        ax.set_xlabel("steps")
        ax.set_ylabel("test images")
        ax.set_title(f"{task} test digits: lifetime of the transient", fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    files = [written.name for written in save(fig, path)]
    plt.close(fig)
    return files


@_styled
def _plot_examples(examples: dict, t_show: list[int], path: Path) -> list[str]:
    """Clean images and decoded states as one mosaic (one image in one axes, 0.8 inch per tile:
    the 300 dpi PNG and the PDF of 64 axes at 1.4 inch per tile cost 4.5 s of CPU)."""
    import matplotlib.pyplot as plt

    from replica_mlm.plotting import save

    rows = [(task, split, k) for task in ("masked", "noise") for split in ("train", "test")
            for k in range(2)]
    H, W = examples[rows[0][0]][rows[0][1]]["clean"].shape[1:]
    gap = 2
    cell_h, cell_w = H + gap, W + gap
    mosaic = np.full((len(rows) * cell_h - gap, (len(t_show) + 1) * cell_w - gap), np.nan)
    for r, (task, split, k) in enumerate(rows):
        ex = examples[task][split]
        tiles = [ex["clean"][k]] + [ex["states"][t, k] for t in t_show]
        for c, tile in enumerate(tiles):
            mosaic[r * cell_h:r * cell_h + H, c * cell_w:c * cell_w + W] = tile
    fig, ax = plt.subplots(figsize=(0.8 * (len(t_show) + 1) + 0.8, 0.8 * len(rows) + 0.5))
    cmap = plt.get_cmap("gray_r").with_extremes(bad="white")
    ax.imshow(mosaic, cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
    ax.set_xticks([c * cell_w + (W - 1) / 2 for c in range(len(t_show) + 1)],
                  ["clean"] + [f"t = {t}" for t in t_show], fontsize=8)
    ax.xaxis.tick_top()
    ax.set_yticks([r * cell_h + (H - 1) / 2 for r in range(len(rows))],
                  [f"{task}\n{split}" for task, split, _ in rows], fontsize=7)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    fig.suptitle("digits: clean image and decoded states of the dynamics from the corrupted input")
    fig.tight_layout()
    files = [written.name for written in save(fig, path)]
    plt.close(fig)
    return files


@_styled
def _plot_potts(masked: dict, path: Path) -> list[str]:
    import matplotlib.pyplot as plt

    from replica_mlm.plotting import save

    fig, ax = plt.subplots(figsize=(7, 6))
    m, se = np.asarray(masked["curve_mean"]), np.asarray(masked["curve_sem"])
    t = np.arange(len(m))
    ax.plot(t, m, color="C0", label="attractor network, masked site (band: unpaired s.e. over sequences)")
    ax.fill_between(t, m - se, m + se, color="C0", alpha=0.2)
    for key, label, style in (
        ("factored_attention_oracle", r"1 step of factored attention, $A = -P_{i\cdot}/P_{ii}$", "--"),
        ("factored_attention_fitted", "1 step of factored attention, fitted (MLM)", ":"),
        ("predict_zero", "predict the mean ($x_i = 0$)", "-."),
    ):
        mu, s = masked[key]
        ax.axhline(mu, ls=style, color={"factored_attention_oracle": "C1", "factored_attention_fitted": "C2",
                                        "predict_zero": "k"}[key],
                   label=f"{label}: {mu:.3f} ± {s:.3f}")
    for key, label, color, ls in (("theory_oracle_mean_1_over_Pii", "exact $1/P_{ii}$", "C4", (0, (1, 1))),
                                  ("theory_zero_mean_Cii", "exact $C_{ii}$", "0.4", (0, (6, 2)))):
        ax.axhline(masked[key], color=color, ls=ls, lw=0.9, label=f"{label}: {masked[key]:.3f}")
    avz = masked["attractor_vs_zero"]
    ax.axvline(avz["t_best"], color="0.5", lw=0.8)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(0, len(m) - 1)
    ax.set_xlabel("step $t$ of the dynamics")
    ax.set_ylabel("squared error at the masked site (units of $x$)")
    ax.set_title(f"Gaussian Potts sequences (held-out), one masked site\nattractor at $t^* = $"
                 f"{avz['t_best']} vs predicting the mean, paired: gain "
                 f"{avz['gain_vs_baseline'][0]:+.4f} ± {avz['gain_vs_baseline'][1]:.4f}", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=1)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    files = [written.name for written in save(fig, path)]
    plt.close(fig)
    return files


@_styled
def _plot_scan(rows: list[dict], path: Path, *, min_lifetime: float) -> list[str]:
    import matplotlib.pyplot as plt

    from replica_mlm.plotting import save

    fig, axes = plt.subplots(1, 2, figsize=(12, 0.35 * len(rows) + 2), sharey=True)
    y = np.arange(len(rows))
    for ax, task in zip(axes, ("masked", "noise"), strict=True):
        lf = [r[task]["lifetime"] for r in rows]
        ax.errorbar([x["median"] for x in lf], y,
                    xerr=[[x["median"] - x["q25"] for x in lf], [x["q75"] - x["median"] for x in lf]],
                    fmt="s", color="C0", capsize=2, label="lifetime: median, quartiles")
        ax.plot([x["mean"] for x in lf], y, "o", mfc="none", color="C2", label="lifetime: mean")
        ax.plot([r[task]["t_min"]["mean"] for r in rows], y, "x", color="k",
                label="mean step of the lowest error")
        ax.axvline(min_lifetime, color="0.5", ls="--", lw=0.8)
        T = rows[0]["settings"]["steps"]
        for yi, r in zip(y, rows, strict=True):
            if not r[task]["memory_passed"]:
                ax.annotate("transient test failed", (1.5 * T, yi), fontsize=6, color="C3",
                            ha="right", va="center")
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(0, 1.5 * T)
        ax.set_xlabel(f"steps (of $T = {T}$)")
        ax.set_title(f"{task} test digits", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_yticks(y, [r["config"] for r in rows], fontsize=7)
    axes[0].invert_yaxis()
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=7)
    fig.suptitle("lifetime of the transient per configuration (one factor changed at a time)")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    files = [written.name for written in save(fig, path)]
    plt.close(fig)
    return files
