"""Factored attention's coupling penalty chosen on held-out pseudo-likelihood, then its contacts.

For one family (``rm.datasets.protein_family``, columns with <= 20 % gaps):

1. mean-field DCA (80 % identity, pseudocount 0.5) is timed, for the CPU ratio;
2. ``select_penalty`` (replica_mlm.proteins.penalty_selection): 15 % of the sequences held out
   (seed 0), factored attention with ``--select-heads`` heads fitted on the rest at each lambda_J
   of ``--lambdas`` (``--refine``: plus the geometric midpoints around the best), from ``--start``
   (``mean-field``, the default, from the mean-field couplings of the training part;
   ``random``, seed 0; ``plm``, from a plm fit of the training part only); one line per lambda_J:
   weighted held-out MLM loss, iterations, max|grad|, F;
3. ``--checkpoints 150,300,600``: one H = ``--select-heads`` run on all sequences at the chosen
   lambda_J, the contacts read at those iterations of a single L-BFGS run (float32 products);
4. one factored fit (``--attention`` linear or softmax) on all sequences per ``--heads`` at the
   chosen lambda_J (``--start``, ``plm`` read as mean-field here; ``--max-iter`` iterations,
   ``precision="single"`` with the double finish): CPU seconds (the mean-field start included),
   ratio to mean-field, top-L/5, L/2, L precision (C-beta < 8 A, j - i >= 6, Frobenius + APC).

The contacts are printed, never used for the choice.

    OMP_NUM_THREADS=1 python benchmarks/bench_factored_penalty.py --family rhomboid \
        --lambdas 0.001,0.003,0.01,0.03
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import replica_mlm as rm
from replica_mlm.learners import quasi_newton
from replica_mlm.learners.plm_objective import PseudoLikelihood
from replica_mlm.learners.quasi_newton import MAXCOR
from replica_mlm.proteins.contacts import coupling_scores
from replica_mlm.proteins.factored_fit import FactoredProblem
from replica_mlm.proteins.mean_field import mean_field_couplings
from replica_mlm.proteins.penalty_selection import select_penalty
from replica_mlm.proteins.potts_fit import symmetric_zero_sum

TOPS = ("L/5", "L/2", "L")


def _prec(couplings, structure) -> str:
    scores = coupling_scores(couplings)
    return " ".join(f"{rm.contact_precision(scores, structure, top=t):.3f}" for t in TOPS)


def checkpoints(msa, structure, heads: int, lam: float, stops: list[int], start: str) -> None:
    """Contacts at several iterations of one factored L-BFGS run (fit_potts' driver and settings,
    float32 products, no double finish)."""
    data = PseudoLikelihood(msa.sequences, msa.weights(identity=0.8), msa.q)
    prob = FactoredProblem(data, heads, 0.01, lam, dtype=np.float32)
    if start == "random":
        x0 = prob.init(np.random.default_rng(0), 0.01)
    else:
        x0 = prob.from_couplings(mean_field_couplings(msa, reweight=0.8, pseudocount=0.5),
                                 np.zeros((msa.L, msa.q)))
    it = [0]
    t0 = time.process_time()

    def cb(xk):
        it[0] += 1
        if it[0] in stops:
            h, A, V = prob.unpack(xk)
            J, _ = symmetric_zero_sum(prob.couplings(A, V), h)
            f, g = prob.loss_grad(xk)
            print(f"  it={it[0]:4d} cpu={time.process_time() - t0:7.1f} F={f:.6f} |g|={np.max(np.abs(g)):.1e}"
                  f"  P@L/5,L/2,L {_prec(J, structure)}", flush=True)

    _, _, _, nit, stop = quasi_newton.minimize(prob.loss_grad, x0, max_iter=max(stops),
                                               memory=MAXCOR, callback=lambda x, f, g: cb(x))
    if nit < max(stops):
        print(f"  stopped at it={nit}: {stop} (no acceptable step)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="rhomboid")
    ap.add_argument("--lambdas", default="0.001,0.003,0.01,0.03")
    ap.add_argument("--refine", action="store_true")
    ap.add_argument("--lambda-J", type=float, default=None, help="skip the selection, use this")
    ap.add_argument("--select-heads", type=int, default=32)
    ap.add_argument("--select-iter", type=int, default=150, help="iterations of the selection fits")
    ap.add_argument("--start", default="mean-field", choices=("mean-field", "random", "plm"))
    ap.add_argument("--heads", default="32", help="heads of the final fits on all sequences ('' none)")
    ap.add_argument("--attention", default="linear", choices=("linear", "softmax"),
                    help="attention of the selection and final fits (not of --checkpoints)")
    ap.add_argument("--max-iter", type=int, default=150)
    ap.add_argument("--checkpoints", default="", help="e.g. 150,300,600")
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        msa, structure = rm.datasets.protein_family(args.family)
    print(f"{args.family}: L = {msa.L}, N = {msa.N}, N_eff = {msa.effective_size:.0f}", flush=True)
    t0 = time.process_time()
    mf = mean_field_couplings(msa, reweight=0.8, pseudocount=0.5)
    mf_cpu = time.process_time() - t0
    print(f"mean_field cpu {mf_cpu:.1f} s  P@L/5,L/2,L {_prec(mf, structure)}", flush=True)
    opts = {"max_iter": args.select_iter, "precision": "single", "attention": args.attention}
    if args.lambda_J is None:
        lambdas = [float(v) for v in args.lambdas.split(",")]
        print(f"selection: H = {args.select_heads}, start {args.start}, {args.select_iter} iterations,"
              " 15 % held out (seed 0)", flush=True)

        def report(lam, loss, fit):
            print(f"  lambda_J={lam:<8g} held-out {loss:.5f}  it={fit.iterations} conv={fit.converged} "
                  f"|g|={fit.gradient_norm:.1e} F={fit.objective:.5f} cpu={fit.cpu_seconds:.1f}  "
                  f"[train-fit contacts, not used: {_prec(fit.couplings, structure)}]",
                  flush=True)

        sel = select_penalty(msa, "factored", lambdas, heads=args.select_heads, start=args.start,
                             refine=args.refine, callback=report, **opts)
        lam = sel.best
        print(f"chosen lambda_J = {lam:g} (bracketed: {sel.bracketed})", flush=True)
    else:
        lam = args.lambda_J
    if args.checkpoints:
        print(f"checkpoints H={args.select_heads} lambda_J={lam:g}, all sequences, start {args.start}",
              flush=True)
        checkpoints(msa, structure, args.select_heads, lam, [int(v) for v in args.checkpoints.split(",")],
                    args.start)
    for h in [int(v) for v in args.heads.split(",") if v.strip()]:
        init = "mean-field" if args.start == "plm" else args.start
        fit = rm.fit_potts(msa, method="factored", heads=h, lambda_J=lam, max_iter=args.max_iter,
                           precision="single", init=init, attention=args.attention)
        print(f"factored {args.attention} H={h:<4d} start {init} lambda_J={lam:g} "
              f"cpu {fit.cpu_seconds:7.1f} s  x mf "
              f"{fit.cpu_seconds / mf_cpu:6.1f}  P@L/5,L/2,L {_prec(fit.couplings, structure)}  "
              f"it={fit.iterations} conv={fit.converged} |g|={fit.gradient_norm:.1e} "
              f"F={fit.objective:.5f}", flush=True)


if __name__ == "__main__":
    main()
