"""The local theory with each cluster's own covariance against the sparse tables' simulations.

docs/discrete.md, section "Each cluster's own covariance". For every Ising row (q = 2) of a
``sparse_tables.csv`` written by ``python -m replica_mlm.validation.sparse_tables --out DIR --full``,
the same instance and site, built with the same rng (so the same sampled sequences and clusters),
is solved by ``rm.solve(..., theory="local")`` with ``covariance="pooled"`` (checked against the
row's stored local theory: the same numbers) and ``covariance="cluster"``; prints both theories' z
against the row's simulation, per measure, the CPU seconds of the two solves, and their totals' ratio.

    python benchmarks/local_own_covariances.py DIR/sparse_tables.csv [--only SUBSTRING]
"""
import argparse
import csv
import time
import warnings

import replica_mlm as rm
from replica_mlm.validation import sparse_tables

MEASURES = ("eg", "test_loss", "estimation_error")

parser = argparse.ArgumentParser()
parser.add_argument("csv")
parser.add_argument("--only", default="", help="instances whose label contains this text")
args = parser.parse_args()
rows = [r for r in csv.DictReader(open(args.csv)) if r["q"] == "2" and args.only in r["instance"]]
print("family | instance | alpha | measure | simulation +- SE | pooled (z) | own covariances (z)")
cpu = {"pooled": 0.0, "own": 0.0}
for inst in sparse_tables.instances(quick=False):
    mine = [r for r in rows if r["instance"] == inst.label and r["family"] == inst.family
            and int(r["site"]) == inst.site]
    if not mine:
        continue
    task = inst.model.masked_site(inst.site, rng=0)
    for r in mine:
        a, lam = float(r["alpha"]), float(r["lam"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            t0 = time.process_time()
            pooled = rm.solve(task, alpha=a, lam=lam, loss="logistic", theory="local")
            t1 = time.process_time()
            own = rm.solve(task, alpha=a, lam=lam, loss="logistic", theory="local", covariance="cluster")
            t2 = time.process_time()
        for k in MEASURES:
            sim, se, stored = float(r[f"{k}_sim"]), float(r[f"{k}_se"]), float(r[f"{k}_local"])
            p, o = float(getattr(pooled, k)), float(getattr(own, k))
            same = "" if abs(p - stored) <= 1e-6 * max(1.0, abs(stored)) else f" (stored {stored:.5g})"
            print(f"{inst.family} | {inst.label} | {a:g} | {k} | {sim:.4f} +- {se:.4f} | "
                  f"{p:.4f} ({(sim - p) / se:+.1f}){same} | {o:.4f} ({(sim - o) / se:+.1f})", flush=True)
        print(f"    CPU s: pooled {t1 - t0:.1f}, own covariances {t2 - t1:.1f} (clusters {own.M.shape[1]})",
              flush=True)
        cpu["pooled"] += t1 - t0
        cpu["own"] += t2 - t1
print(f"CPU s over all rows (each instance's first solve builds its data model): pooled {cpu['pooled']:.1f}, "
      f"own covariances {cpu['own']:.1f}, ratio {cpu['own'] / cpu['pooled']:.2f}")
