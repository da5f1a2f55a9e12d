"""Import + first ``rm.solve`` in a new process, with a cold and with a warm compiled-equation cache.

Each measurement is a fresh Python process (``python -c "import replica_mlm as rm; rm.solve(...)"``)
with ``REPLICA_MLM_CACHE_DIR`` pointing to a new temporary folder: the first run derives the
equations with sympy and writes the cache (cold), the next ones read it (warm). Printed: wall
time and CPU time (user + system, of the child) of the whole process, of ``import replica_mlm``
alone, and of the first ``rm.solve`` (and ``precision=30``) after the import. CPU time is the
figure to compare on a shared machine; wall time includes waiting for the CPU.

Run:  python benchmarks/bench_import.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = """
import json, time
t0 = time.perf_counter(); c0 = time.process_time()
import replica_mlm as rm
t1 = time.perf_counter(); c1 = time.process_time()
task = rm.GaussianPotts.limit(shift=3.0)
rm.solve(task, alpha=0.5, lam=0.1)
t2 = time.perf_counter(); c2 = time.process_time()
rm.solve(task, alpha=0.5, lam=0.1, precision=30)
t3 = time.perf_counter(); c3 = time.process_time()
print(json.dumps(dict(import_wall=t1 - t0, import_cpu=c1 - c0, solve_wall=t2 - t1, solve_cpu=c2 - c1,
                      precise_wall=t3 - t2, precise_cpu=c3 - c2)))
"""


def run(cache: str) -> dict:
    env = {**os.environ, "REPLICA_MLM_CACHE_DIR": cache}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"process_wall": wall, "process_cpu": cpu, **json.loads(out.stdout.strip().splitlines()[-1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="warm runs (median)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        cold = run(cache)
        warm = [run(cache) for _ in range(args.repeat)]
    med = {k: statistics.median(w[k] for w in warm) for k in cold}
    print(f"{'seconds':34s} {'cold cache':>11s} {'warm cache':>11s}  (warm: median of {args.repeat})")
    for key, label in [("process", "whole process"), ("import", "import replica_mlm"),
                       ("solve", "first rm.solve (float64)"), ("precise", "first rm.solve(precision=30)")]:
        for kind in ("wall", "cpu"):
            name = f"{key}_{kind}"
            print(f"  {label + ' (' + kind + ')':32s} {cold[name]:11.2f} {med[name]:11.2f}")


if __name__ == "__main__":
    main()
