"""Newton's method against Anderson mixing on the local theory of every Ising site of the sparse tables.

docs/discrete.md, section "Cost of a local solve". For each of the 16 two-colour sites of
``replica_mlm.validation.sparse_tables`` (the lattice glass at beta = 1 aside: it is not sampled),
the logistic, hinge and square losses at alpha 0.5, 1, 4 and lam 0.01, 0.1, 1 (432 points) are
solved twice in one process: as the package does (Newton's method, Anderson mixing behind it), and
with Newton made to give up at once, which is the previous driver (Anderson mixing from the same
cold start, then hybr). Printed per point: both evaluation counts and the largest relative
difference of the error rate, the test and train loss and the estimation error; at the end the
totals, the failures and the CPU time of each. About 10 minutes on one thread.

    OMP_NUM_THREADS=1 python benchmarks/local_newton_sweep.py
"""

from __future__ import annotations

import math
import statistics
import time
import warnings

import replica_mlm as rm
from replica_mlm.theory.solvers import fixed_point
from replica_mlm.validation.sparse_tables import instances

MEASURES = ("eg", "test_loss", "estimation_error", "train_loss")


def _relative(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def _gives_up(jacobian, residual, x, **kw):
    raise fixed_point.FixedPointFailure("tolerance", last=x, best=x, residual=math.inf)


def main() -> None:
    warnings.simplefilter("ignore")  # validity warnings: not what is measured
    newton = fixed_point._newton
    drivers = {"newton": newton, "anderson": _gives_up}
    evaluations = {name: [] for name in drivers}
    seconds = dict.fromkeys(drivers, 0.0)
    failures, differences = [], []
    for inst in instances(quick=False):
        if inst.model.q != 2 or "beta = 1," in inst.label:
            continue
        site = inst.model.masked_site(inst.site, rng=0)
        _ = site.local_mixture  # measured once, not timed
        for loss in ("logistic", "hinge", "square"):
            for lam in (0.01, 0.1, 1.0):
                for alpha in (0.5, 1.0, 4.0):
                    found = {}
                    for name, driver in drivers.items():
                        fixed_point._newton = driver
                        start = time.process_time()
                        try:
                            found[name] = rm.solve(site, alpha=alpha, lam=lam, loss=loss, theory="local")
                        except rm.ConvergenceError as exc:
                            failures.append((inst.label, loss, lam, alpha, name, str(exc)[:80]))
                        seconds[name] += time.process_time() - start
                    fixed_point._newton = newton
                    if len(found) < 2:
                        continue
                    a, b = found["newton"], found["anderson"]
                    diff = max(_relative(getattr(a, k), getattr(b, k)) for k in MEASURES)
                    differences.append(diff)
                    for name in drivers:
                        evaluations[name].append(found[name].iterations)
                    print(f"{inst.label[:34]:34s} {loss:8s} lam {lam:4g} alpha {alpha:3g}: newton "
                          f"{a.iterations:4d}, anderson {b.iterations:4d}, largest relative difference "
                          f"{diff:.1e}", flush=True)
    for name in drivers:
        e = evaluations[name]
        print(f"{name}: {len(e)} points where both converged, evaluations {min(e)}-{max(e)} (median "
              f"{statistics.median(e):g}), {sum(e)} in all, {seconds[name]:.0f} CPU-s (every point)")
    print(f"largest relative difference {max(differences):.2g}, median {statistics.median(differences):.2g}")
    print(f"failures ({len(failures)}):")
    for f in failures:
        print("  ", f)


if __name__ == "__main__":
    main()
