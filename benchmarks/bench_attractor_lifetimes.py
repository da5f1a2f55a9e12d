"""Lifetime of the attractor network's transients on a gamma x weight-decay grid (digits).

The lifetime scan of the validation's full mode (``replica_mlm.validation.attractor_section``) changes one
factor at a time around its default and finds that only the speed of the dynamics matters: the
self-weight gamma and the size of the couplings (set by the weight decay). This script crosses the
two to test that reading: if the transient is only slowed down, the lifetime grows with the step of
the lowest error and their ratio stays roughly constant across the grid.

Usage: OMP_NUM_THREADS=1 python benchmarks/bench_attractor_lifetimes.py [--quick] [--out FILE.md]
(``--quick``: 2 x 2 grid, 300 stored images, 100 test images; about a minute of CPU.)
"""

from __future__ import annotations

import sys
import time

from replica_mlm._base.io import atomic_write_text
from replica_mlm.validation.attractor_section import _table, lifetime_scan


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    out = argv[argv.index("--out") + 1] if "--out" in argv else None
    gammas = (0.5, 0.9) if quick else (0.0, 0.5, 0.8, 0.9, 0.95)
    decays = (1e-3, 0.1) if quick else (1e-3, 1e-2, 0.1, 0.3)
    sizes = ({"n_train": 300, "n_test": 100, "n_eval": 100} if quick
             else {"n_train": 600, "n_test": 200, "n_eval": 200})
    scan = [(f"gamma {g:g}, weight decay {wd:g}", {"gamma": g, "weight_decay": wd})
            for wd in decays for g in gammas]
    t0 = time.perf_counter()
    rows = lifetime_scan(sizes=sizes, scan=scan, rng=0)
    table = _table(rows)
    lines = [table, "", "| configuration | task | lifetime / mean step of the lowest error |",
             "|---|---|---|"]
    for r in rows:
        for task in ("masked", "noise"):
            lf, tm = r[task]["lifetime"]["mean"], r[task]["t_min"]["mean"]
            lines.append(f"| {r['config']} | {task} | {lf / tm:.2f} |")
    lines.append(f"\n{len(rows)} configurations in {time.perf_counter() - t0:.0f} s")
    text = "\n".join(lines)
    print(text)
    if out:
        atomic_write_text(out, text + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
