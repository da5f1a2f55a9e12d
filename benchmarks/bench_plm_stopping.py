"""How the plm fit's contacts settle as L-BFGS converges: the sweep behind the contact-grade tolerance.

docs/proteins.md, section "Convergence of the fits" ("A contact-grade tolerance").

One plm fit per family over all sites at once (``precision="single"``, the problem,
preconditioner and driver of :func:`replica_mlm.fit_potts` before it fitted site by site,
finished in double precision if float32 stalls) run down to the smallest threshold; at the
first iterate where the largest gradient component drops below each of
``--thresholds`` it records the iterations, the CPU seconds of the fit so far (the time spent
recording is not counted), the proven distance to the optimum
(:func:`replica_mlm.proteins.fit_convergence.plm_certificate`) and the contact precisions at top
L/5, L/2 and L, scored as ``benchmarks/bench_contacts.py`` scores the fit (symmetric couplings in
the zero-sum gauge, Frobenius norm without the gap, APC). A fit with ``tol`` equal to a threshold
stopped at that iterate, so each row is what that tolerance returned then. (Fitting site by site,
each site stops at the tolerance on its own: the default fit's tolerance, 2e-3, was chosen from
fits at each tolerance, docs/proteins.md, "A contact-grade tolerance".)

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_plm_stopping.py rhomboid
    python benchmarks/bench_plm_stopping.py S1A --thresholds 1e-3,1e-4 --json out.json
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

import replica_mlm as rm
from replica_mlm.learners.plm_objective import PseudoLikelihood
from replica_mlm.learners.quasi_newton import MAXCOR, lbfgs
from replica_mlm.proteins.contacts import coupling_scores
from replica_mlm.proteins.fit_convergence import plm_certificate
from replica_mlm.proteins.plm_fit import PLMProblem
from replica_mlm.proteins.potts_fit import symmetric_zero_sum

TOPS = ("L/5", "L/2", "L")
LAMBDA = 0.01  # lambda_h = lambda_J, fit_potts's defaults


def sweep(family: str, thresholds: list[float], *, max_iter: int = 500, memory: int = MAXCOR) -> list[dict]:
    """The rows of one family (module docstring), thresholds from the loosest to the tightest."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # letters read as gaps: counted in the MSA
        msa, structure = rm.datasets.protein_family(family)
    start = time.process_time()
    s = np.asarray(msa.sequences)
    data = PseudoLikelihood(s, msa.weights(identity=0.8), msa.q)
    problem = PLMProblem(data, LAMBDA, LAMBDA, dtype=np.float32)
    pending = sorted(thresholds, reverse=True)
    state = {"gmax": np.inf, "nit": 0, "spent": 0.0}
    rows: list[dict] = []

    def fun(x):
        f, g = problem.loss_grad(x)
        state["gmax"] = float(np.max(np.abs(g)))  # the accepted iterate is the last evaluation
        return f, g

    def record(x):
        state["nit"] += 1
        t0 = time.process_time()
        while pending and state["gmax"] <= pending[0]:
            h, W = problem.unpack(x)
            bound = plm_certificate(data, h, W, LAMBDA, LAMBDA)["distance_bound"]
            scores = coupling_scores(symmetric_zero_sum(W, h)[0])
            rows.append({"family": family, "tol": pending.pop(0), "iterations": state["nit"],
                         "max_grad": state["gmax"], "double": problem.dtype == np.float64,
                         "fit_cpu": t0 - start - state["spent"], "distance_bound": bound,
                         "precision": [rm.contact_precision(scores, structure, top=t) for t in TOPS]})
            print(json.dumps(rows[-1]), flush=True)
        state["spent"] += time.process_time() - t0

    x = np.zeros(problem.size)
    res = lbfgs(fun, x, max_iter=max_iter, tol=min(thresholds), scale=problem.scale, memory=memory,
                callback=record)
    if pending and res.nit < max_iter:  # float32 stalled: finish in double, as fit_potts does per site
        problem.set_dtype(np.float64)
        lbfgs(fun, res.x, max_iter=max_iter - res.nit, tol=min(thresholds), scale=problem.scale,
              memory=memory, callback=record)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", help="a name of rm.datasets.protein_family")
    ap.add_argument("--thresholds", default="3e-3,1e-3,3e-4,1e-4,3e-5,1e-5")
    ap.add_argument("--max-iter", type=int, default=500)
    ap.add_argument("--memory", type=int, default=MAXCOR, help="L-BFGS pairs")
    ap.add_argument("--json", default=None, help="write the rows to this file")
    args = ap.parse_args()
    rows = sweep(args.family, [float(t) for t in args.thresholds.split(",")], max_iter=args.max_iter,
                 memory=args.memory)
    print(f"{'family':<10}{'tol':>8}{'it':>5}{'fit CPU s':>10}{'dist<=':>9}"
          + "".join(f"{'P@' + t:>7}" for t in TOPS))
    for r in rows:
        print(f"{r['family']:<10}{r['tol']:8.0e}{r['iterations']:5d}{r['fit_cpu']:10.1f}"
              f"{r['distance_bound']:9.1e}" + "".join(f"{p:7.3f}" for p in r["precision"]))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
