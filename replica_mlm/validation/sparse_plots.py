"""Figure of the sparse-coupling tables: each theory's gap to the simulation against L.

docs/discrete.md, section "Sparse couplings". Left: the relative gap ``|simulation - theory| /
simulation`` of the classification error against L on log-log axes for the contact-map-like band
(the family that spans L = 16 to 400), one line per theory, with error bars from the simulation's
standard error and the fitted rate ``gap ~ L^-r`` of the local theory; right: z of every point of
every family, per theory, against the Bayes-error ratio of the theory's data model (the validity
check), with the band ``|z| <= 3`` and the validity window shaded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

COLOURS = {"gaussian": "tab:blue", "mixture": "tab:orange", "local": "tab:green"}
BAND = "contact-map-like band"


def gap_rate(L: np.ndarray, gap: np.ndarray) -> float:
    """The exponent ``r`` of a least-squares fit ``log gap = c - r log L``."""
    return float(-np.polyfit(np.log(L), np.log(gap), 1)[0])


def gap_figure(rows: list[dict], path: str | Path) -> list[Path]:
    """Draw the figure; returns the PNG and PDF written at ``path`` (no suffix)."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from replica_mlm.figures.style import save
    from replica_mlm.tasks.validity import TOLERANCE

    theories = [k.removeprefix("ratio_") for k in rows[0] if k.startswith("ratio_")]  # the rows' own
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.2))
    band = [r for r in rows if r["family"] == BAND]
    alphas = sorted({r["alpha"] for r in band})
    for t in theories:
        for alpha, marker in zip(alphas, ("o", "s", "^", "v"), strict=False):
            pts = sorted((r for r in band if r["alpha"] == alpha), key=lambda r: r["L"])
            if not pts:
                continue
            L = np.array([r["L"] for r in pts], dtype=float)
            sim = np.array([r["eg_sim"] for r in pts])
            gap = np.abs(sim - np.array([r[f"eg_{t}"] for r in pts])) / sim
            err = np.array([r["eg_se"] for r in pts]) / sim
            label = f"{t}, alpha = {alpha:g}"
            if t == "local" and L.size >= 3:
                label += f" (rate {gap_rate(L, np.maximum(gap, 1e-12)):.2f})"
            left.errorbar(L, gap, yerr=err, color=COLOURS[t], marker=marker, capsize=2, label=label,
                          linestyle="-" if alpha == alphas[0] else "--")
    sizes = sorted({r["L"] for r in band})
    left.set_xscale("log")
    left.set_xticks(sizes, labels=[str(L) for L in sizes])
    left.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    left.set(yscale="log", xlabel="L (sites; each L its own instance)",
             ylabel="|simulation - theory| / simulation (error rate)",
             title="contact-map-like band, beta = 0.5: gap against L")
    if band:
        left.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    else:  # a run without the band family (the quick tables): say so instead of an empty legend
        left.text(0.5, 0.5, "no contact-map-like band in this run\n(--full draws it)", ha="center",
                  va="center", transform=left.transAxes)
    for t in theories:
        ratio = np.array([r[f"ratio_{t}"] for r in rows])
        z = np.array([r[f"eg_z_{t}"] for r in rows])
        right.scatter(ratio, z, s=18, color=COLOURS[t], label=t, alpha=0.8)
    right.axhspan(-3, 3, color="0.85", zorder=0, label="|z| <= 3")
    right.axvspan(1 - TOLERANCE, 1 + TOLERANCE, color="tab:green", alpha=0.12, zorder=0,
                  label=f"validity window 1 +- {TOLERANCE:g}")
    ratios = np.array([r[f"ratio_{t}"] for r in rows for t in theories])
    zs = np.array([r[f"eg_z_{t}"] for r in rows for t in theories])
    ratios = ratios[ratios > 0]
    right.set(xscale="log", xlabel="Bayes error of the data model / site's Bayes error",
              ylabel="z of the error rate (simulation - theory) / SE",
              title="every point of every family")
    # linear inside the band |z| <= 3, logarithmic beyond; ticks written as plain numbers (the
    # default formatter wrote 1 as 10^0 and -1 as -10^0)
    right.set_yscale("symlog", linthresh=3.0)
    right.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    # no point on the frame: a quarter decade beyond the extreme ratios, 1.5x beyond the extreme z
    right.set_xlim(min(ratios.min(), 1 - TOLERANCE) / 10**0.25, max(ratios.max(), 1 + TOLERANCE) * 10**0.25)
    right.set_ylim(min(zs.min(), -3.0) * 1.5, max(zs.max(), 3.0) * 1.5)
    right.legend(fontsize=7)
    fig.tight_layout()
    out = save(fig, Path(path))
    plt.close(fig)
    return out
