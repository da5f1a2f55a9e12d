"""Contact prediction on three real protein families: replica_mlm's plm beside pydca, and every method.

Two tables (docs/proteins.md, issue 39):

* **plm beside pydca** (the default, ``--quick``; ``--full``): replica_mlm's plm at the package's
  default settings (``rm.fit_potts(msa, method="plm")``: single precision, lambda_h = lambda_J =
  0.01, 80 % identity weights, the contact-grade tol 2e-3 (``potts_fit.PLM_TOL``; docs/proteins.md,
  "A contact-grade tolerance"), at most 500 iterations; ``--quick``: rhomboid only and at
  most ``--quick-iter`` = 30 iterations) in a fresh interpreter with one BLAS thread, doing what
  pydca's child does: read the kept columns from the same FASTA file, weight, fit, score (the
  structure is mapped and the scores are scored in the parent); the row gives
  the fit's CPU seconds, the whole process's CPU seconds (of which in the kernel), its peak
  resident memory (``ru_maxrss`` of the child from ``os.wait4``), minor page faults, iterations,
  max|grad| and the precisions. Beside it pydca 1.23's plmDCA: run live when a Python 3.7
  interpreter with pydca is found (``--pydca-python``, else ``python3.7`` on the PATH) on the same
  kept columns (written as FASTA), scored by the same mapping, with its own APC Frobenius scores;
  otherwise the figures it measured live on 2026-12-07 (``PYDCA_STORED``) are printed with
  their date. The ratios are replica_mlm's process CPU and peak memory over pydca's.
* **every method** (``--table``), for each family (``rm.datasets.protein_family``: columns with at
  most 20 % gaps, the structure mapped onto them) prints L, N, N_eff (80 % identity), the identity
  of the reference-to-chain mapping, then one row per method: CPU seconds, the ratio to mean-field's
  CPU time, the extra peak memory of the fit (each method runs in a forked child process; its peak
  resident memory minus that at the fork, from resource.getrusage) and the top-L/5, L/2, L contact
  precisions (C-beta < 8 A, j - i >= 6; Frobenius norm over the amino acids in the zero-sum gauge,
  APC).

  The methods other than mean-field come from ``rm.fit_potts(msa, method=..., heads=...,
  reweight=0.8, precision=..., max_iter=...)``; their rows add the L-BFGS iterations (of which in
  the double-precision finish), whether the gradient tolerance was met, the final max|grad| (in
  double precision), the objective F and, for plm, the proven bound on the distance to the exact
  optimum (``fit.distance_bound``). With ``--factored-from-plm`` the factored rows start from the
  best rank-H factorisation of the plm row's couplings (``init=``; their CPU time is their own, the
  plm row's comes on top) and run at most ``--factored-iter`` iterations. With ``--select-penalty``
  lambda_J of each fitted method is chosen on held-out pseudo-likelihood, never on the contacts:
  15 % of the sequences (seeded) are held out, the method is fitted on the rest at each lambda_J of
  ``--lambdas``, the lowest weighted held-out MLM loss (``fit.mlm_loss(held_out, weights=...)``,
  80 % identity weights of the held-out part) wins, and the method is refitted on all sequences at
  that lambda_J (the choice is printed); a factored row started from plm (``--factored-from-plm``)
  is selected from a plm fit of the training part only. The row "mean_field+gap" scores the same
  couplings with the Frobenius norm over all q colours (the gap included): the convention under
  which the issue's reference precisions (0.81, 0.89, 0.59 at top-L/5) are reproduced most closely.

    python benchmarks/bench_contacts.py                 # plm beside pydca, rhomboid, 30 iterations
    python benchmarks/bench_contacts.py --full          # the three families, converged
    OMP_NUM_THREADS=1 python benchmarks/bench_contacts.py --table
    python benchmarks/bench_contacts.py --table --families S1A --methods mean_field,plm --heads 1,4

pydca lives in its own environment (it pins numpy <= 1.15.4, which has no wheel past Python 3.7;
its C++ backend is compiled with the system's g++ on install)::

    python3.7 -m venv ~/.pydca && ~/.pydca/bin/pip install --upgrade "pip<24"
    ~/.pydca/bin/pip install pydca==1.23
    python benchmarks/bench_contacts.py --full --pydca-python ~/.pydca/bin/python

(it pulls numpy 1.15.4, scipy 1.3.1, numba 0.46, biopython 1.74 and matplotlib 3.0.0; seen working
on 2026-12-06).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import replica_mlm as rm
from replica_mlm.proteins.contacts import coupling_scores
from replica_mlm.proteins.mean_field import mean_field_couplings
from replica_mlm.proteins.penalty_selection import select_penalty

TOPS = ("L/5", "L/2", "L")


def _couplings(result) -> np.ndarray:
    """The (L, L, q, q) couplings of a fit: the array itself or its ``couplings`` / ``J``."""
    if isinstance(result, np.ndarray):
        return result
    for attr in ("couplings", "J"):
        if hasattr(result, attr):
            return np.asarray(getattr(result, attr))
    raise TypeError(f"cannot find couplings in {type(result).__name__}")


def _fit(method: str, heads: int | None, msa, opts: dict):
    """(couplings, info string, fit or None) of one method."""
    if method in ("mean_field", "mean_field+gap"):
        return mean_field_couplings(msa, reweight=0.8, pseudocount=0.5), "", None
    kwargs = dict(opts["fit"], **({"heads": heads} if heads is not None else {}))
    if method == "factored" and opts.get("init") is not None:
        kwargs["init"] = opts["init"]
        kwargs["max_iter"] = opts["factored_iter"]
    info = ""
    if opts["lambdas"]:
        kwargs["lambda_J"], info = _select_penalty(method, msa, kwargs, opts["lambdas"])
    fit = rm.fit_potts(msa, method=method, reweight=0.8, **kwargs)
    info += (f"lambda_J={fit.penalties['lambda_J']:g} it={fit.iterations}"
             f"{f'({fit.iterations_double} double)' if fit.iterations_double else ''} "
             f"conv={fit.converged} |g|={fit.gradient_norm:.1e} F={fit.objective:.6f}")
    if fit.distance_bound is not None:
        info += f" dist<={fit.distance_bound:.1e}"
    if "init" in kwargs:
        info += " from plm"
    return _couplings(fit), info, fit


def _select_penalty(method: str, msa, kwargs: dict, lambdas) -> tuple[float, str]:
    """lambda_J with the lowest weighted held-out MLM loss (15 % of the sequences, seed 0).

    ``replica_mlm.proteins.penalty_selection.select_penalty``: a factored row started from plm is
    selected from a plm fit of the *training* part (at the plm row's lambda_J), so no held-out
    sequence enters a fit used for the choice; the final refit on all sequences starts from the
    plm row.
    """
    fit_kwargs = {k: v for k, v in kwargs.items() if k not in ("init", "lambda_J")}
    start = "plm" if "init" in kwargs else "random"
    plm_lam = kwargs["init"].penalties["lambda_J"] if start == "plm" else 0.01
    sel = select_penalty(msa, method, lambdas, start=start, plm_lambda_J=plm_lam, **fit_kwargs)
    return sel.best, ("held-out " + " ".join(f"{lam:g}:{v:.3f}" for lam, v in
                                             zip(sel.lambdas, sel.held_out_loss, strict=True))
                      + f" ({start} start) -> {sel.best:g}; ")


def _child(conn, method, heads, msa, structure, opts) -> None:
    try:
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.process_time()
        couplings, info, fit = _fit(method, heads, msa, opts)
        scores = coupling_scores(couplings, include_gap=method.endswith("+gap"))
        cpu = time.process_time() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0  # KiB on Linux
        prec = [rm.contact_precision(scores, structure, top=t) for t in TOPS]
        conn.send(("ok", cpu, peak / 1024, prec, info,
                   fit if method == "plm" and opts.get("init_from_plm") else None))
    except AttributeError as exc:
        conn.send(("not available", str(exc)))
    except Exception as exc:  # report and go on with the other rows
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
    conn.close()


def run(method: str, heads: int | None, msa, structure, opts: dict):
    """(status, cpu, peak MB, precisions) of one method, fitted in a forked child process."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, method, heads, msa, structure, opts))
    proc.start()
    child.close()
    out = parent.recv() if parent.poll(None) else ("failed", "no answer")
    proc.join()
    return out


# ------------------------------------------------------------------------------ plm beside pydca
#: pydca 1.23 plmDCA measured live by this script (``--full --pydca-python``: one thread, its own
#: Python 3.7 environment, the same kept columns and scoring): CPU s, peak MB, iterations (not
#: reported by pydca: ""), precision at L/5, L/2, L. (Issue 39's first table, 2026-11, on S1A's
#: columns of then: 238 CPU-s, 628 MB, 0.878 / 0.716 / 0.624; rhomboid 202 CPU-s, 328 MB.)
PYDCA_STORED = {"date": "2026-12-07", "rhomboid": (116.6, 327.0, "", (0.741, 0.582, 0.378)),
                "S1A": (134.0, 696.0, "", (0.884, 0.706, 0.601)),
                "DHFR": (269.8, 339.0, "", (0.963, 0.739, 0.659))}
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

_PLM_CHILD = """
import json, sys
import replica_mlm as rm
fasta, max_iter = sys.argv[1], int(sys.argv[2])
fit = rm.fit_potts(rm.MSA.read(fasta), method="plm", **({} if max_iter <= 0 else {"max_iter": max_iter}))
print(json.dumps({"fit_cpu": fit.cpu_seconds, "iterations": fit.iterations, "converged": fit.converged,
                  "tol": fit.tol, "gradient": fit.gradient_norm, "bound": fit.distance_bound,
                  "scores": fit.contact_scores().tolist()}))
"""

_PYDCA_CHILD = """
import json, sys
from pydca.plmdca import plmdca
dca = plmdca.PlmDCA(sys.argv[1], "protein", num_threads=1)
print(json.dumps([[int(i), int(j), float(s)] for (i, j), s in dca.compute_sorted_FN_APC()]))
"""


def measured_child(argv: list[str]) -> tuple[str, dict]:
    """``(stdout, usage)`` of a child process: its CPU seconds (user + kernel), kernel seconds,
    peak resident MB (``ru_maxrss``) and minor page faults, from ``os.wait4``."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=dict(os.environ, **ONE_THREAD))
    out = proc.stdout.read().decode()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited with status {proc.returncode}")
    return out, {"cpu": ru.ru_utime + ru.ru_stime, "sys": ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024,
                 "faults": ru.ru_minflt}


def pydca_python(given: str | None) -> str | None:
    """A Python interpreter that imports pydca (``given``, else ``python3.7`` on the PATH), or None."""
    exe = given or shutil.which("python3.7")
    if exe is None:
        return None
    ok = subprocess.run([exe, "-c", "import pydca"], capture_output=True).returncode == 0
    return exe if ok else None


def kept_columns_fasta(msa, folder: str) -> Path:
    """The alignment's kept columns as a FASTA file: what both plm children read."""
    from replica_mlm.proteins.msa import ALPHABET

    fasta = Path(folder) / "kept_columns.fasta"
    fasta.write_text("".join(f">{k}\n{''.join(ALPHABET[c] for c in row)}\n"
                             for k, row in enumerate(msa.sequences)))
    return fasta


def plm_child(fasta: Path, max_iter: int, structure) -> tuple[dict, dict]:
    """replica_mlm's plm at its defaults in a fresh interpreter on ``fasta`` (reading, weights, fit,
    scores: the same job as pydca's child), scored here by ``structure``'s mapping."""
    out, usage = measured_child([sys.executable, "-c", _PLM_CHILD, str(fasta), str(max_iter)])
    res = json.loads(out)
    scores = np.array(res.pop("scores"))
    res["precision"] = [rm.contact_precision(scores, structure, top=t) for t in TOPS]
    return res, usage


def pydca_live(exe: str, fasta: Path, structure) -> dict:
    """pydca's plmDCA on ``fasta`` (the kept columns), scored like replica_mlm's."""
    out, usage = measured_child([exe, "-c", _PYDCA_CHILD, str(fasta)])
    L = structure.distances.shape[0]
    scores = np.zeros((L, L))
    for i, j, s in json.loads(out):
        scores[i, j] = scores[j, i] = s
    usage["precision"] = [rm.contact_precision(scores, structure, top=t) for t in TOPS]
    return usage


def peer_table(families: list[str], max_iter: int, pydca_exe: str | None) -> None:
    """replica_mlm's plm at its defaults beside pydca's plmDCA (module docstring)."""
    what = "default settings" + (f", at most {max_iter} iterations" if max_iter > 0 else "")
    print(f"plm beside pydca plmDCA ({what}; one BLAS thread; peak = ru_maxrss of the child)")
    print(f"{'family':<10}{'code':<22}{'fit CPU s':>10}{'CPU s':>8}{'(sys)':>8}{'peak MB':>9}"
          f"{'faults':>9}{'it':>5}" + "".join(f"{'P@' + t:>7}" for t in TOPS) + "  notes")
    for family in families:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            msa, structure = rm.datasets.protein_family(family)
        with tempfile.TemporaryDirectory() as folder:
            fasta = kept_columns_fasta(msa, folder)
            res, use = plm_child(fasta, max_iter, structure)
            peer = pydca_live(pydca_exe, fasta, structure) if pydca_exe is not None else None
        bound = "" if res["bound"] is None else f" dist<={res['bound']:.1e}"
        print(f"{family:<10}{'replica_mlm plm':<22}{res['fit_cpu']:10.1f}{use['cpu']:8.1f}{use['sys']:8.1f}"
              f"{use['peak_mb']:9.0f}{use['faults']:9d}{res['iterations']:5d}"
              + "".join(f"{p:7.3f}" for p in res["precision"])
              + f"  conv={res['converged']} (tol {res['tol']:g}) |g|={res['gradient']:.1e}{bound}",
              flush=True)
        if peer is not None:
            label, it, note = "pydca plmDCA (live)", "", f"{pydca_exe}"
        elif family in PYDCA_STORED:
            cpu, peak, it, prec = PYDCA_STORED[family]
            peer = {"cpu": cpu, "sys": float("nan"), "peak_mb": peak, "faults": 0, "precision": prec}
            label, note = f"pydca ({PYDCA_STORED['date']}, stored)", "measured live then, not rerun"
        else:
            print(f"{family:<10}{'pydca':<22}  no stored figure and no Python 3.7 with pydca")
            continue
        print(f"{family:<10}{label:<22}{'':>10}{peer['cpu']:8.1f}{'':>8}{peer['peak_mb']:9.0f}{'':>9}"
              f"{it:>5}" + "".join(f"{p:7.3f}" for p in peer["precision"]) + f"  {note}")
        caveat = "" if res["converged"] else "  (replica_mlm not converged: not a like-for-like CPU ratio)"
        print(f"{family:<10}{'ratio replica / pydca':<22}{'':>10}{use['cpu'] / peer['cpu']:8.2f}{'':>8}"
              f"{use['peak_mb'] / peer['peak_mb']:9.2f}{caveat}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true",
                      help="plm beside pydca on rhomboid, at most --quick-iter iterations (the default)")
    mode.add_argument("--full", action="store_true",
                      help="plm beside pydca on --families at the package's default settings")
    mode.add_argument("--table", action="store_true", help="every method on --families")
    ap.add_argument("--quick-iter", type=int, default=30, help="iterations of the --quick plm fit")
    ap.add_argument("--pydca-python", default=None,
                    help="a Python 3.7 interpreter with pydca (default: python3.7 on the PATH)")
    ap.add_argument("--families", default="S1A,DHFR,rhomboid")
    ap.add_argument("--methods", default="mean_field+gap,plm,factored",
                    help="mean_field (always run), mean_field+gap, any method of rm.fit_potts")
    ap.add_argument("--heads", default="1,4,32,128", help="heads of the factored rows")
    ap.add_argument("--max-iter", type=int, default=500, help="L-BFGS iterations at most")
    ap.add_argument("--precision", default="single", help="fit_potts precision (single, double)")
    ap.add_argument("--select-penalty", action="store_true",
                    help="choose lambda_J on held-out pseudo-likelihood (module docstring)")
    ap.add_argument("--factored-from-plm", action="store_true",
                    help="start the factored rows from the plm row's couplings (rank-H SVD)")
    ap.add_argument("--factored-iter", type=int, default=150,
                    help="iterations of the factored rows started from plm")
    ap.add_argument("--lambdas", default="0.003,0.01,0.03", help="lambda_J values to choose from")
    args = ap.parse_args()
    if not args.table:
        families = ["rhomboid"] if not args.full else args.families.split(",")
        peer_table(families, 0 if args.full else args.quick_iter, pydca_python(args.pydca_python))
        return
    opts = {"fit": {"max_iter": args.max_iter, "precision": args.precision},
            "lambdas": [float(v) for v in args.lambdas.split(",")] if args.select_penalty else [],
            "init_from_plm": args.factored_from_plm, "factored_iter": args.factored_iter}
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    heads = [int(h) for h in args.heads.split(",") if h.strip()]
    rows = [("mean_field", None)] + [
        (m, h) for m in methods if m != "mean_field"
        for h in (heads if m == "factored" else [None])]
    for family in args.families.split(","):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the letters read as gaps: counted in the MSA
            msa, structure = rm.datasets.protein_family(family)
        print(f"\n{family}: L = {msa.L}, N = {msa.N}, N_eff = {msa.effective_size:.0f}, "
              f"mapping {structure.reference!r} identity {structure.identity:.3f} "
              f"({structure.aligned} residues), unknown letters {msa.unknown_letters}")
        print(f"{'method':<16}{'CPU s':>9}{'x mf':>8}{'peak MB':>9}"
              + "".join(f"{'P@' + t:>9}" for t in TOPS))
        mf_cpu = None
        opts["init"] = None
        for method, h in rows:
            name = method + (f" H={h}" if h is not None else "")
            out = run(method, h, msa, structure, opts)
            if out[0] != "ok":
                print(f"{name:<16}{out[0]} ({out[1][:70]})")
                continue
            _, cpu, peak, prec, info, fit = out
            if fit is not None:
                opts["init"] = fit
            mf_cpu = cpu if method == "mean_field" else mf_cpu
            ratio = f"{cpu / mf_cpu:8.1f}" if mf_cpu else f"{'-':>8}"
            print(f"{name:<16}{cpu:9.1f}{ratio}{peak:9.0f}" + "".join(f"{p:9.3f}" for p in prec)
                  + f"  {info}", flush=True)


if __name__ == "__main__":
    main()
