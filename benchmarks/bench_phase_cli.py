"""``replica-mlm phase`` end to end: the 200 x 100 diagram in the limit, CPU time of the whole
command in a fresh process, of its figure alone and of the rest (import, diagram, CSV files).

A child process runs the command's entry point with ``plot_phase_diagram`` wrapped by a timer
(the figure: PNG and PDF), then reports its own CPU time; the parent prints both and the
difference. Also timed in the same parent process: ``rm.phase_diagram`` alone (warm, 3 repeats,
median CPU). The command must stay within 2 CPU-s plus the figure.

Run:  OMP_NUM_THREADS=1 python benchmarks/bench_phase_cli.py [--points 200] [--lam-points 100]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = """
import json, sys, time
c0 = time.process_time()
import replica_mlm.plotting as plotting
from replica_mlm.cli import main
spent = []
inner = plotting.plot_phase_diagram
def timed(*a, **k):
    c = time.process_time()
    try:
        return inner(*a, **k)
    finally:
        spent.append(time.process_time() - c)
plotting.plot_phase_diagram = timed
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    print(json.dumps(dict(total=time.process_time() - c0, figure=sum(spent))), file=sys.stderr)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--lam-points", type=int, default=100)
    args = ap.parse_args()
    import numpy as np

    import replica_mlm as rm
    lim = rm.GaussianPotts.limit(3.0)
    rm.solve(lim, alpha=1.0, lam=0.1)
    alphas = np.linspace(0.05, 4.0, args.points)
    lams = np.geomspace(1e-4, 10.0, args.lam_points)
    cpu = []
    for _ in range(3):
        c0 = time.process_time()
        rm.phase_diagram(lim, alpha=alphas, lam=lams)
        cpu.append(time.process_time() - c0)
    print(f"rm.phase_diagram, limit s = 3, {args.lam_points} x {args.points}: "
          f"{statistics.median(cpu):.2f} CPU-s (median of 3; all: {', '.join(f'{c:.2f}' for c in cpu)})")
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-c", CHILD, "phase", "--limit", "--points", str(args.points),
               "--lam-points", str(args.lam_points), "--no-progress", "--out", out]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t0
    got = json.loads(done.stderr.strip().splitlines()[-1])
    print(f"replica-mlm phase --limit --points {args.points} --lam-points {args.lam_points}: "
          f"{got['total']:.2f} CPU-s in all ({wall:.2f} s wall), figure {got['figure']:.2f} CPU-s, "
          f"the rest (imports, diagram, CSV) {got['total'] - got['figure']:.2f} CPU-s (target <= 2)")


if __name__ == "__main__":
    main()
