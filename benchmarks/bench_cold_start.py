"""A fresh process with a warm compiled-equation cache: import + first solve, against a process
that only imports numpy and scipy.

Each measurement is a new Python process; CPU time (user + system of the child) of the whole
process is the figure to compare on a shared machine. Children, each ``--repeat`` times,
interleaved:

* ``numpy + scipy``: ``import numpy, scipy.optimize, scipy.special, scipy.linalg`` (what the
  solvers use);
* ``square``: ``import replica_mlm``, ``rm.solve(limit, alpha=2, lam=0.1)``;
* ``logistic/sign``: ``import replica_mlm``, ``rm.solve(limit, alpha=2, lam=0.1, loss="logistic",
  channel="sign")``.

Each child also reports whether sympy was imported. The cache is the user's (made warm by one
solve of each kind in this process before timing).

Run:  OMP_NUM_THREADS=1 python benchmarks/bench_cold_start.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys

CHILDREN = {
    "numpy + scipy": "import numpy, scipy.optimize, scipy.special, scipy.linalg; sympy = False",
    "square": ("import replica_mlm as rm; rm.solve(rm.GaussianPotts.limit(3.0), alpha=2.0, lam=0.1); "
               "import sys; sympy = 'sympy' in sys.modules"),
    "logistic/sign": ("import replica_mlm as rm; rm.solve(rm.GaussianPotts.limit(3.0), alpha=2.0, lam=0.1, "
                      "loss='logistic', channel='sign'); import sys; sympy = 'sympy' in sys.modules"),
}


def run(code: str) -> tuple[float, bool]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", code + "; print(sympy)"], capture_output=True, text=True,
                         check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, out.stdout.strip().endswith("True")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    for code in CHILDREN.values():  # warm the cache
        run(code)
    times = {name: [] for name in CHILDREN}
    sympy = {}
    for _ in range(args.repeat):
        for name, code in CHILDREN.items():
            cpu, sympy[name] = run(code)
            times[name].append(cpu)
    base = statistics.median(times["numpy + scipy"])
    print(json.dumps({"repeat": args.repeat}))
    for name, t in times.items():
        med = statistics.median(t)
        print(f"  {name:15s} {med:6.2f} CPU-s (median of {args.repeat})  ratio to numpy + scipy "
              f"{med / base:5.2f} (target <= 2)  sympy imported: {sympy[name]}")


if __name__ == "__main__":
    main()
