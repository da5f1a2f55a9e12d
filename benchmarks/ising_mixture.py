"""Ising sites: Gaussian equivalence and the Gaussian mixture against discrete simulations.

For SK instances at several (beta, L), site 0, the replica predictions of the test cross-entropy,
the classification error and the estimation error of l2-penalised logistic regression (the site's
pseudo-likelihood) are computed with ``theory="gaussian"`` and ``theory="mixture"`` and held against
fits on Boltzmann samples of the spins:

* L <= 16: training sets drawn i.i.d. from the exact Boltzmann law (enumeration of the 2^L
  configurations), every test measure exact (the sum over all configurations);
* L > 16: training sets from the package's sampler (Gibbs, or parallel tempering, thinned by the
  measured integrated autocorrelation time, recorded), test measures Rao-Blackwellised over the
  masked spin on a pool of fresh test sequences; the covariance and the mixture of the theory come
  from 20000 sampled sequences.

The simulation's standard error is over seeds (fixed seeds); z = (simulation - theory) / SE.

    python benchmarks/ising_mixture.py OUT.json [--betas 0.3 0.5] [--sizes 13 41] [--seeds 400 80]
    python benchmarks/ising_mixture.py --table OUT.json   # the markdown table of docs/discrete.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import replica_mlm as rm
from replica_mlm.learners.logistic import fit_binary
from replica_mlm.tasks.ising_site import spins

POINTS = [(1.0, 0.1), (4.0, 0.1)]
MEASURES = ("eg", "test_loss", "estimation_error")
KEY = ("beta", "L")


def _softplus(t):
    return np.logaddexp(0.0, t)


def _measures(w, x, p_plus, prob, teacher):
    """Test cross-entropy and error of ``w`` on inputs ``x`` with P(s_i = +1 | x) = p_plus, averaged
    with weights ``prob`` (exact probabilities, or 1/n over a test pool)."""
    z = x @ w
    loss = p_plus * _softplus(-z) + (1 - p_plus) * _softplus(z)
    err = np.where(z >= 0, 1 - p_plus, p_plus)
    return {"eg": float(prob @ err), "test_loss": float(prob @ loss),
            "estimation_error": float(np.sum((w - teacher) ** 2))}


def run_instance(beta, L, seeds, *, instance=0, site=0, points=POINTS, log=print):
    model = rm.PottsModel.random_ising(L=L, beta=beta, seed=instance)
    t0 = time.process_time()
    task = model.masked_site(site, rng=0, samples=20000)
    mix = task.mixture
    chk = mix.cavity_check()
    keep = np.arange(L) != site
    teacher = task.teacher
    gen = np.random.default_rng(1000 * L + instance)
    diag = None
    if L <= 16:
        allx = spins(model.all_sequences())
        prob = model.boltzmann_probabilities()
        x_all, y_all = allx[:, keep], allx[:, site]
        # exact test measures: the sum over all configurations (x, y) of P(x, y) ell(y, w . x)
        test_x, test_p, test_w = x_all, (y_all > 0).astype(float), prob
    else:
        pool, diag = model.sample(20000, rng=gen, method="auto", return_diagnostics=True)
        test_x = spins(pool)[:, keep]
        test_p = 1 / (1 + np.exp(-(test_x @ teacher)))
        test_w = np.full(test_x.shape[0], 1.0 / test_x.shape[0])
    p = L - 1
    rows = []
    for alpha, lam in points:
        n = round(alpha * p)
        th = {name: rm.solve(task, alpha=alpha, lam=lam, loss="logistic", theory=name)
              for name in ("gaussian", "mixture")}
        sims = []
        for _ in range(seeds):
            if L <= 16:
                idx = gen.choice(prob.size, size=n, p=prob)
                x, y = x_all[idx], y_all[idx]
            else:
                seqs = model.sample(n, rng=gen, method=diag.method, sweeps_between=diag.sweeps_between,
                                    burn_in=diag.burn_in,
                                    **({"ladder": diag.ladder, "swap_rounds": diag.swap_rounds}
                                       if diag.method == "tempering" else {}))
                sp_ = spins(seqs)
                x, y = sp_[:, keep], sp_[:, site]
            w, kkt = fit_binary(x, y, lam * p)
            if kkt > 1e-7:
                raise RuntimeError(f"fit did not converge: KKT residual {kkt}")
            sims.append(_measures(w, test_x, test_p, test_w, teacher))
        row = {"beta": beta, "L": L, "instance": instance, "site": site, "alpha": alpha, "lam": lam,
               "seeds": seeds, "n": n}
        for m in MEASURES:
            vals = np.array([r[m] for r in sims])
            mean, se = float(vals.mean()), float(vals.std(ddof=1) / np.sqrt(seeds))
            row[f"{m}_sim"], row[f"{m}_se"] = mean, se
            for name, sp in th.items():
                row[f"{m}_{name}"] = float(getattr(sp, m))
                row[f"{m}_z_{name}"] = (mean - row[f"{m}_{name}"]) / se
        row.update(cavity_distance=chk.covariance_distance, cavity_skewness=chk.skewness,
                   cavity_kurtosis=chk.excess_kurtosis, cavity_kurtosis_se=chk.kurtosis_stderr,
                   sampler=("exact" if diag is None else diag.method),
                   tau_int=(None if diag is None else float(diag.tau_int)),
                   sweeps_between=(None if diag is None else int(diag.sweeps_between)))
        rows.append(row)
        log(f"beta={beta} L={L} alpha={alpha} lam={lam}: " + ", ".join(
            f"{m}: G {row[f'{m}_gaussian']:.4f} M {row[f'{m}_mixture']:.4f} sim {row[f'{m}_sim']:.4f}"
            f"+-{row[f'{m}_se']:.4f} (z {row[f'{m}_z_gaussian']:+.1f} / {row[f'{m}_z_mixture']:+.1f})"
            for m in MEASURES))
    log(f"  cavity: distance {chk.covariance_distance:.4f}, skewness {chk.skewness:+.3f}, excess kurtosis "
        f"{chk.excess_kurtosis:+.3f}; sampler {rows[-1]['sampler']} tau_int {rows[-1]['tau_int']}; "
        f"{time.process_time() - t0:.1f} CPU s")
    return rows


def summary(rows) -> str:
    """Per instance: the cavity check against the largest |z| of each theory over its points."""
    keys = sorted({tuple(r[k] for k in KEY) for r in rows})
    out = ["| " + " | ".join(KEY) + " | S distance | cavity excess kurtosis | largest abs z gaussian "
           "| largest abs z mixture |", "|" + "---|" * (len(KEY) + 4)]
    for key in keys:
        sel = [r for r in rows if tuple(r[k] for k in KEY) == key]
        zg = max(abs(r[f"{m}_z_gaussian"]) for r in sel for m in MEASURES)
        zm = max(abs(r[f"{m}_z_mixture"]) for r in sel for m in MEASURES)
        out.append("| " + " | ".join(str(k) for k in key) + f" | {sel[0]['cavity_distance']:.4f} | "
                   f"{sel[0]['cavity_kurtosis']:+.3f} | {zg:.1f} | {zm:.1f} |")
    return "\n".join(out)


def table(rows) -> str:
    head = ("| beta | L | alpha | measure | gaussian | mixture | simulation | z gaussian | z mixture |\n"
            "|---|---|---|---|---|---|---|---|---|")
    out = [head]
    for r in rows:
        for m in MEASURES:
            out.append(f"| {r['beta']} | {r['L']} | {r['alpha']:g} | {m} | {r[m + '_gaussian']:.4f} | "
                       f"{r[m + '_mixture']:.4f} | {r[m + '_sim']:.4f} ± {r[m + '_se']:.4f} | "
                       f"{r[m + '_z_gaussian']:+.1f} | {r[m + '_z_mixture']:+.1f} |")
    return "\n".join(out)


def _gap(rows, m, name, L) -> float:
    return float(np.mean([abs(r[f"{m}_{name}"] - r[f"{m}_sim"]) for r in rows if r["L"] == L]))


def _gap_se(rows, m, L) -> float:
    """Standard error of :func:`_gap` from the simulations' (the mean of independent points)."""
    se = [r[f"{m}_se"] for r in rows if r["L"] == L]
    return float(np.sqrt(np.sum(np.square(se))) / len(se))


def plot(rows, path) -> None:
    """|theory - simulation| against L (log-log), one panel per measure, one colour per beta, solid
    lines and circles gaussian, dashed lines and squares mixture, averaged over the alpha points;
    error bars one standard error of that mean from the simulations' (the lower one clipped at 90 %
    of the gap); open markers: gaps below 2 SE (not resolved). The points of each (beta, theory) are
    shifted a little along L so that their error bars do not hide each other."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    betas = sorted({r["beta"] for r in rows})
    sizes = sorted({r["L"] for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.2), constrained_layout=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = {"gaussian": ("-", "o"), "mixture": ("--", "s")}
    for ax, m in zip(axes, MEASURES, strict=True):
        for j, (b, colour) in enumerate(zip(betas, colours, strict=False)):
            sel = [r for r in rows if r["beta"] == b]
            Ls = sorted({r["L"] for r in sel})
            for k, (name, (line, marker)) in enumerate(styles.items()):
                gap = np.array([_gap(sel, m, name, L) for L in Ls])
                se = np.array([_gap_se(sel, m, L) for L in Ls])
                x = np.array(Ls) * np.exp(0.035 * (2 * j + k - len(betas) + 0.5))
                ax.errorbar(x, gap, yerr=[np.minimum(se, 0.9 * gap), se], ls=line, color=colour, lw=1.2,
                            capsize=2, elinewidth=0.8)
                weak = gap < 2 * se  # not resolved: open markers
                ax.plot(x[~weak], gap[~weak], marker, color=colour, ms=5, ls="none")
                ax.plot(x[weak], gap[weak], marker, color=colour, mfc="white", ms=5, ls="none")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(L) for L in sizes])
        ax.minorticks_off()
        ax.set_xlabel("L (sequence length; p = L - 1 inputs)")
        ax.set_title({"eg": "classification error", "test_loss": "test cross-entropy (nats)",
                      "estimation_error": r"estimation error $|\hat w - w^*|^2$"}[m])
    axes[0].set_ylabel(r"|theory $-$ simulation| (mean over $\alpha$)")
    handles = [Line2D([], [], color=c, lw=2, label=rf"$\beta$ = {b}")
               for b, c in zip(betas, colours, strict=False)]
    handles += [Line2D([], [], color="k", ls="-", marker="o", label="Gaussian equivalence"),
                Line2D([], [], color="k", ls="--", marker="s", label="Gaussian mixture"),
                Line2D([], [], color="k", ls="none", marker="o", mfc="white",
                       label="open: gap < 2 SE (not resolved)"),
                Line2D([], [], color="k", ls="none", marker="|", ms=10, label="bars: 1 SE of the mean gap")]
    axes[-1].legend(handles=handles, fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))
    alphas = sorted({r["alpha"] for r in rows})
    lams = sorted({r["lam"] for r in rows})
    fig.suptitle("Ising (SK) site 0: gap of each theory to pseudo-likelihood fits on Boltzmann samples, "
                 rf"$\lambda$ = {', '.join(f'{x:g}' for x in lams)}, "
                 rf"$\alpha$ = {', '.join(f'{x:g}' for x in alphas)}",
                 fontsize=10)
    fig.savefig(path, dpi=120)


def rates(rows) -> str:
    """Least-squares slope of log|gap| against log L per (beta, measure, theory), over the sizes, and
    which gaps are resolved (at least 2 SE)."""
    out = []
    for b in sorted({r["beta"] for r in rows}):
        sel = [r for r in rows if r["beta"] == b]
        Ls = sorted({r["L"] for r in sel})
        if len(Ls) < 2:
            continue
        for m in MEASURES:
            for name in ("gaussian", "mixture"):
                gap = [_gap(sel, m, name, L) for L in Ls]
                resolved = [g >= 2 * _gap_se(sel, m, L) for g, L in zip(gap, Ls, strict=True)]
                slope = np.polyfit(np.log(Ls), np.log(gap), 1)[0]
                out.append(f"beta={b} {m} {name}: gap {' '.join(f'{g:.4f}' for g in gap)} at L={Ls} "
                           f"(resolved, >= 2 SE: {''.join('y' if r else 'n' for r in resolved)}), "
                           f"slope {slope:+.2f}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--table", action="store_true", help="print the table of an existing OUT")
    ap.add_argument("--plot", help="with --table: draw the gaps against L into this PNG, print slopes")
    ap.add_argument("--more", nargs="*", default=[], help="with --table: further OUT files to merge")
    ap.add_argument("--betas", type=float, nargs="+", default=[0.3, 0.5, 0.8, 1.2])
    ap.add_argument("--sizes", type=int, nargs="+", default=[13, 41])
    ap.add_argument("--seeds", type=int, nargs="+", default=[400, 80],
                    help="seeds per size (one number per --sizes entry)")
    args = ap.parse_args(argv)
    if args.table:
        rows = []
        for path in [args.out, *args.more]:
            with open(path) as fh:
                rows += json.load(fh)["rows"]
        print(table(rows))
        print(summary(rows))
        if args.plot:
            plot(rows, args.plot)
            print(rates(rows))
        return 0
    rows = []
    t0 = time.process_time()
    for L, seeds in zip(args.sizes, args.seeds, strict=True):
        for beta in args.betas:
            rows += run_instance(beta, L, seeds, log=lambda s: print(s, flush=True))
            rm.io.write_json(args.out, {"rows": rows, "cpu_seconds": time.process_time() - t0})
    print(table(rows))
    print(f"CPU seconds: {time.process_time() - t0:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
