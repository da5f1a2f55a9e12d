"""The figures of the discrete section (:mod:`replica_mlm.validation.discrete_section`): the
agreement of the discrete model with the Gaussian theory and fig. 3 right."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["figures"]


def figures(out: Path, rows: list[dict], fig: dict, s: dict, *, transition: list[dict],
            rel_max: float) -> list[str]:
    """Draw and save the section's figures; ``transition`` is the section's transition table and
    ``rel_max`` its largest allowed relative deviation. Returns the names of the files written."""
    import matplotlib.pyplot as plt
    from matplotlib.legend_handler import HandlerTuple

    from replica_mlm.plotting import LINESTYLES, MARKERS, STYLE, grey, save

    names = []
    with plt.rc_context(STYLE):
        p = fig["L"] - 1
        f, ax = plt.subplots()
        lo, hi = min(fig["alpha_c_sites"]) * p, max(fig["alpha_c_sites"]) * p
        ax.axvspan(lo, hi, color="0.9", lw=0, label=r"sites' separability thresholds $\alpha_c (L-1)$")
        ax.axvline(fig["alpha_c_mean"] * p, color="0.5", ls="--", lw=1, label=r"mean $\alpha_c (L-1)$")
        ax.plot(np.asarray(fig["alpha_fine"]) * p, fig["theory_total"], color="black",
                label="replica theory (Gaussian equivalence)")
        ax.errorbar(fig["M"], fig["sim_mean"], yerr=fig["sim_se"], fmt="o", color="black",
                    mfc="white", capsize=2,
                    label=f"pseudo-likelihood fits (mean ± s.e., {s['fig_seeds']} seeds)")
        ax.set_xscale("log")
        _plain_log_m(ax)
        ax.set_xlabel("training sequences $M$")
        ax.set_ylabel(r"MLM test loss $\sum_i \epsilon_i$ (nats)")
        top = ax.secondary_xaxis("top", functions=(lambda m: m / p, lambda a: a * p))
        top.set_xlabel(r"$\alpha = M / (L - 1)$", fontsize=9)
        _plain_log_x(top, log=False)
        ax.set_title(rf"Ising (SK), $L = {fig['L']}$, $\beta = {fig['beta']:g}$, "
                     rf"$\lambda = {fig['lam']:g}$", fontsize=10)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
        save(f, out / "discrete_fig3_right")
        plt.close(f)
        names += ["discrete_fig3_right.png", "discrete_fig3_right.pdf"]

        held = [r for r in rows if not r["hot"]]
        Ls = sorted({r["L"] for r in held})
        keys = sorted({(r["beta"], r["lam"]) for r in held})
        f, axes = plt.subplots(len(Ls), 2, figsize=(8.4, 3.0 * len(Ls)), squeeze=False)
        entries: dict = {}  # (beta, lam) -> ((theory line, fits), label): one entry shows both
        for row_axes, L in zip(axes, Ls, strict=True):
            for n, key in enumerate(keys):
                pts = [r for r in held if (r["L"], r["beta"], r["lam"]) == (L, *key)]
                a = [r["alpha"] for r in pts]
                for ax, k in zip(row_axes, ("test_loss", "estimation_error"), strict=True):
                    (line,) = ax.plot(a, [r[k] for r in pts], color=grey(n, len(keys)), ls=LINESTYLES[n % 6])
                    fits = ax.errorbar(a, [r[f"{k}_sim"] for r in pts], yerr=[r[f"{k}_se"] for r in pts],
                                       fmt=MARKERS[n % 6], color=grey(n, len(keys)), mfc="white", capsize=2)
                    entries.setdefault(key, ((line, fits), rf"$\beta={key[0]:g}$, $\lambda={key[1]:g}$"))
            seeds = held[[r["L"] for r in held].index(L)]["seeds"]
            row_axes[0].set_ylabel(rf"site test cross-entropy" "\n" rf"($L = {L}$, {seeds} seeds)")
            row_axes[1].set_ylabel(r"$|\hat w - w^*|^2$")
            for ax in row_axes:
                ax.set_yscale("log")
                _plain_log_x(ax)
                _plain_log_y(ax)
        for ax in axes[-1]:
            ax.set_xlabel(r"$\alpha = M / (L - 1)$")
        f.subplots_adjust(wspace=0.3, hspace=0.25)
        f.legend([h for h, _ in entries.values()], [label for _, label in entries.values()],
                 handler_map={tuple: HandlerTuple(ndivide=None)}, loc="upper center", ncol=3, fontsize=7,
                 bbox_to_anchor=(0.5, -0.035))
        f.suptitle("lines: replica theory; markers: pseudo-likelihood fits (mean ± s.e.)", fontsize=9)
        save(f, out / "discrete_agreement")
        plt.close(f)
        names += ["discrete_agreement.png", "discrete_agreement.pdf"]

        if s["hot"]:
            table = transition
            f, axes = plt.subplots(1, 2, figsize=(8.4, 3.4))
            for ax, k, what in zip(axes, ("test_loss", "estimation_error"),
                                   ("site test cross-entropy", r"$|\hat w - w^*|^2$"), strict=True):
                for n, L in enumerate(sorted({e["L"] for e in table})):
                    es = [e for e in table if e["L"] == L]
                    b_ = [e["beta"] for e in es]
                    ax.plot(b_, [e[f"{k}_median_rel"] for e in es], marker=MARKERS[n], color="black",
                            ls=LINESTYLES[n], label=rf"median, $L = {L}$")
                    ax.plot(b_, [e[f"{k}_max_rel"] for e in es], marker=MARKERS[n], color="0.55",
                            ls=LINESTYLES[n], mfc="white", label=rf"largest, $L = {L}$")
                ax.axhline(rel_max, color="0.5", ls="--", lw=1, label="3 %")
                ax.axvline(1.0, color="0.5", ls=":", lw=1, label=r"SK transition $\beta = 1$")
                ax.set_xlabel(r"$\beta$")
                ax.set_title(what, fontsize=9)
                ax.set_yscale("log")
                _plain_log_y(ax)
            axes[0].set_ylabel("|relative gap| simulation vs theory")
            f.subplots_adjust(wspace=0.3)
            f.legend(*axes[0].get_legend_handles_labels(), loc="upper center", ncol=3, fontsize=7,
                     bbox_to_anchor=(0.5, -0.04))
            f.suptitle(rf"over $\alpha \in [{min(s['alphas']):.1f}, {max(s['alphas']):.0f}]$ and "
                       rf"$\lambda \in$ {{{', '.join(f'{x:g}' for x in s['lams'])}}}", fontsize=9)
            save(f, out / "discrete_transition")
            plt.close(f)
            names += ["discrete_transition.png", "discrete_transition.pdf"]
    return names


def _plain_log_m(ax) -> None:
    """Ticks 1, 2, 5 x 10^k labelled as plain integers on a log axis of sequence counts."""
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _plain_log_y(ax) -> None:
    """Plain-number labels on a log y axis (no 9x10^-1); minor ticks 2, 3, 5 labelled on short ranges."""
    from matplotlib.ticker import FormatStrFormatter, FuncFormatter, NullFormatter

    def minor(v, _pos) -> str:
        mantissa = round(v / 10 ** np.floor(np.log10(v)), 6) if v > 0 else 0
        return f"{v:g}" if mantissa in (2, 3, 5) else ""

    lo, hi = ax.get_ylim()
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(FuncFormatter(minor) if hi / lo < 30 else NullFormatter())


def _plain_log_x(ax, log: bool = True) -> None:
    """Log x axis with plain-number major ticks and no minor labels (no overlapping 3x10^0)."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    if log:
        ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    ticks = [t for t in (0.3, 0.5, 1, 2, 3, 5, 10) if lo <= t <= hi]
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())


def mixture_figure(out: Path, sites: list[dict]) -> list[str]:
    """Both theories' lines (test loss and error rate against alpha) and the discrete simulations at
    the sites of :mod:`replica_mlm.validation.discrete_mixture` that have curves."""
    import matplotlib.pyplot as plt

    from replica_mlm.plotting import STYLE, save

    drawn = [s for s in sites if "curves" in s]
    with plt.rc_context(STYLE):
        f, axes = plt.subplots(2, len(drawn), figsize=(4.2 * len(drawn), 5.6), squeeze=False)
        for col, site in zip(axes.T, drawn, strict=True):
            c = site["curves"]
            for ax, k, what in zip(col, ("test_loss", "eg"), ("test loss (nats)", "error rate"), strict=True):
                ax.plot(c["alpha"], c[f"{k}_gaussian"], color="0.55", ls="--",
                        label='theory="gaussian" (Gaussian equivalence)')
                ax.plot(c["alpha"], c[f"{k}_mixture"], color="black", ls="-",
                        label='theory="mixture" (Gaussian mixture)')
                rows = site["rows"]
                ax.errorbar([r["alpha"] for r in rows], [r[f"{k}_sim"] for r in rows],
                            yerr=[r[f"{k}_se"] for r in rows], fmt="o", color="black", mfc="white",
                            capsize=2,
                            label="ERM on discrete sequences (mean ± s.e. over seeds)")
                ax.set_xscale("log")
                _plain_log_x(ax)
                ax.set_ylabel(what)
            col[0].set_title(f"{site['site']}, {site['rows'][0]['seeds']} seeds", fontsize=9)
            col[1].set_xlabel(r"$\alpha = M / p$")
        f.subplots_adjust(wspace=0.3, hspace=0.25)
        f.legend(*axes[0][0].get_legend_handles_labels(), loc="upper center", ncol=1, fontsize=7,
                 bbox_to_anchor=(0.5, 0.0))
        save(f, out / "discrete_mixture")
        plt.close(f)
    return ["discrete_mixture.png", "discrete_mixture.pdf"]
