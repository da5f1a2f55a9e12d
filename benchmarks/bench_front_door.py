"""The front door's cost: a point, a curve and a phase diagram, against an earlier checkout.

Times what users call (one square-loss point, one general-engine point, a fast-path curve, a
general-engine curve, a phase diagram, an optimal lambda) in this checkout and, with
``--baseline DIR`` (a checkout of an earlier commit, e.g. ``git worktree add /tmp/base 5ea8328``),
in that checkout too: each workload runs in a fresh child process per side (``PYTHONPATH`` set to
the side's checkout), A B A B ..., so both sides see the same machine. Each child times its
workload 15 times and reports the fastest (the machine's noise only ever adds time); the ratio is
this checkout's median of those over the baseline's.

    python benchmarks/bench_front_door.py --baseline /tmp/base --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

WORKLOADS = {
    "point (square, 200 calls)": """
for a in np.linspace(0.1, 4.0, 200):
    rm.solve(site, alpha=float(a), lam=0.1)
""",
    "point (logistic/sign, 5 calls)": """
for a in (0.5, 1.0, 2.0, 3.0, 4.0):
    rm.solve(site, alpha=a, lam=0.1, loss="logistic", channel="sign")
""",
    "curve (square, 400 alphas)": """
rm.learning_curve(site, alpha=np.linspace(0.05, 5.0, 400), lam=0.1)
""",
    "curve (logistic/sign, 12 alphas)": """
rm.learning_curve(site, alpha=np.linspace(0.2, 4.0, 12), lam=0.1, loss="logistic", channel="sign")
""",
    "phase diagram (square, 40 x 12)": """
rm.phase_diagram(site, alpha=np.linspace(0.2, 3.0, 40), lam=np.geomspace(1e-3, 1.0, 12))
""",
}

CHILD = """
import json, sys, time
import numpy as np
import replica_mlm as rm
site = rm.GaussianPotts.random(L=101, shift=3.0, seed=0).masked_site(0)
rm.learning_curve(site, alpha=[0.5, 1.5], lam=0.1, loss="logistic", channel="sign")  # compile, warm
body = compile(sys.argv[1], "<workload>", "exec")
best = float("inf")
for _ in range(int(sys.argv[2])):  # the fastest of a few runs in this process: the noise is one-sided
    t = time.perf_counter()
    exec(body)
    best = min(best, time.perf_counter() - t)
print(json.dumps({"seconds": best, "where": rm.__file__}))
"""


def run(body: str, checkout: Path, inner: int = 15) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD, body, str(inner)], env=env, capture_output=True,
                         text=True, check=True, cwd=checkout)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["where"].startswith(str(checkout)), result["where"]
    return result["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier commit")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'workload':36s} {'this (s)':>9s} {'baseline (s)':>12s} {'ratio':>6s}")
    for name, body in WORKLOADS.items():
        mine, base = [], []
        for _ in range(args.repeats):
            mine.append(run(body, HERE))
            if args.baseline:
                base.append(run(body, args.baseline.resolve()))
        m = statistics.median(mine)
        if base:
            b = statistics.median(base)
            print(f"{name:36s} {m:9.3f} {b:12.3f} {m / b:6.2f}")
        else:
            print(f"{name:36s} {m:9.3f}")


if __name__ == "__main__":
    main()
