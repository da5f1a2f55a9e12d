"""Potts sites (q > 2): Gaussian equivalence and the Gaussian mixture against discrete simulations.

Standard Potts models (U = I) on the couplings of ``PottsModel.random_ising(L, beta=1.0, seed=s)``
(the instances of docs/multiclass.md; ``s`` = instance) at inverse temperature beta, site 0. The
replica predictions of the test cross-entropy, the error rate and the estimation error of the
multinomial pseudo-likelihood (softmax cross-entropy on the centred reduced one-hot inputs) with
``theory="gaussian"`` and ``theory="mixture"`` are held against ``rm.simulate`` on the model
(training sets from the sampler or, for ``q**L <= 2**22``, the same exact covariance; test measures
Rao-Blackwellised on fresh sequences), ``seeds`` seeds with ``rng=1``; z = (simulation - theory) / SE.

    python benchmarks/potts_mixture.py OUT.json --q 3 --L 12 --betas 0.5 1.0 1.5 --seeds 40
    python benchmarks/potts_mixture.py --table OUT.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

import replica_mlm as rm

POINTS = [(1.0, 0.1), (5.0, 0.1), (5.0, 0.01)]
MEASURES = ("eg", "test_loss", "estimation_error")
KEY = ("q", "L", "beta", "instance", "site")
#: rows written before instance and site were recorded: instance 3, site 0
DEFAULTS = {"instance": 3, "site": 0}
SIM = {"eg": ("eg_mean", "eg_stderr"), "test_loss": ("test_loss_mean", "test_loss_stderr"),
       "estimation_error": ("estimation_error_mean", "estimation_error_stderr")}


def run_instance(q, L, beta, seeds, *, instance=3, site=0, points=POINTS, log=print):
    J = rm.PottsModel.random_ising(L=L, beta=1.0, seed=instance).couplings
    model = rm.PottsModel(couplings=J, colours=np.eye(q), beta=beta)
    t0 = time.process_time()
    task = model.masked_site(site, rng=0)
    chk = task.mixture.cavity_check()
    rows = []
    for alpha, lam in points:
        th = {name: rm.solve(task, alpha=alpha, lam=lam, theory=name) for name in ("gaussian", "mixture")}
        sim = rm.simulate(model, site=site, alpha=alpha, lam=lam, seeds=seeds, rng=1, loss="cross_entropy")
        row = {"q": q, "L": L, "beta": beta, "instance": instance, "site": site, "alpha": alpha, "lam": lam,
               "seeds": seeds}
        for m in MEASURES:
            mean, se = (float(np.ravel(getattr(sim, a))[0]) for a in SIM[m])
            row[f"{m}_sim"], row[f"{m}_se"] = mean, se
            for name, sp in th.items():
                row[f"{m}_{name}"] = float(getattr(sp, m))
                row[f"{m}_z_{name}"] = (mean - row[f"{m}_{name}"]) / se
        row.update(cavity_distance=chk.covariance_distance, cavity_skewness=chk.skewness,
                   cavity_kurtosis=chk.excess_kurtosis, method=task.mixture.method)
        rows.append(row)
        log(f"q={q} L={L} beta={beta} instance={instance} site={site} alpha={alpha} lam={lam}: " + ", ".join(
            f"{m}: G {row[f'{m}_gaussian']:.4f} M {row[f'{m}_mixture']:.4f} sim {row[f'{m}_sim']:.4f}"
            f"+-{row[f'{m}_se']:.4f} (z {row[f'{m}_z_gaussian']:+.1f} / {row[f'{m}_z_mixture']:+.1f})"
            for m in MEASURES))
    log(f"  cavity: distance {chk.covariance_distance:.4f}, skewness {chk.skewness:+.3f}, excess kurtosis "
        f"{chk.excess_kurtosis:+.3f}; {time.process_time() - t0:.1f} CPU s")
    return rows


def summary(rows) -> str:
    """Per instance: the cavity check against the largest |z| of each theory over its points."""
    keys = sorted({tuple(r.get(k, DEFAULTS.get(k)) for k in KEY) for r in rows})
    out = ["| " + " | ".join(KEY) + " | S distance | cavity excess kurtosis | largest abs z gaussian "
           "| largest abs z mixture | same at lam = 0.1: gaussian | mixture |", "|" + "---|" * (len(KEY) + 6)]
    for key in keys:
        sel = [r for r in rows if tuple(r.get(k, DEFAULTS.get(k)) for k in KEY) == key]
        zg = max(abs(r[f"{m}_z_gaussian"]) for r in sel for m in MEASURES)
        zm = max(abs(r[f"{m}_z_mixture"]) for r in sel for m in MEASURES)
        big = [r for r in sel if r["lam"] >= 0.1]
        zg1 = max(abs(r[f"{m}_z_gaussian"]) for r in big for m in MEASURES)
        zm1 = max(abs(r[f"{m}_z_mixture"]) for r in big for m in MEASURES)
        out.append("| " + " | ".join(str(k) for k in key) + f" | {sel[0]['cavity_distance']:.4f} | "
                   f"{sel[0]['cavity_kurtosis']:+.3f} | {zg:.1f} | {zm:.1f} | {zg1:.1f} | {zm1:.1f} |")
    return "\n".join(out)


def table(rows) -> str:
    out = ["| q | L | beta | instance | site | alpha | lam | measure | gaussian | mixture | simulation "
           "| z gaussian | z mixture |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for m in MEASURES:
            where = f"| {r['q']} | {r['L']} | {r['beta']} | {r.get('instance', 3)} | {r.get('site', 0)} |"
            out.append(where + f" {r['alpha']:g} | {r['lam']:g} | {m} | "
                       f"{r[m + '_gaussian']:.4f} | {r[m + '_mixture']:.4f} | {r[m + '_sim']:.4f} ± "
                       f"{r[m + '_se']:.4f} | {r[m + '_z_gaussian']:+.1f} | {r[m + '_z_mixture']:+.1f} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--more", nargs="*", default=[], help="with --table: further OUT files to merge")
    ap.add_argument("--q", type=int, default=3)
    ap.add_argument("--L", type=int, nargs="+", default=[12])
    ap.add_argument("--betas", type=float, nargs="+", default=[0.5, 1.0, 1.5])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--instances", type=int, nargs="+", default=[3], help="seeds of the couplings")
    ap.add_argument("--sites", type=int, nargs="+", default=[0])
    args = ap.parse_args(argv)
    ap_rows = []
    if args.table:
        for path in [args.out, *args.more]:
            with open(path) as fh:
                ap_rows += json.load(fh)["rows"]
        print(table(ap_rows))
        print(summary(ap_rows))
        return 0
    rows, t0 = [], time.process_time()
    for L in args.L:
        for beta in args.betas:
            for instance in args.instances:
                for site in args.sites:
                    rows += run_instance(args.q, L, beta, args.seeds, instance=instance, site=site,
                                         log=lambda s: print(s, flush=True))
            rm.io.write_json(args.out, {"rows": rows, "cpu_seconds": time.process_time() - t0})
    print(table(rows))
    print(f"CPU seconds: {time.process_time() - t0:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
