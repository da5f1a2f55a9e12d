"""tune_beta(target_hamming=0.3) with parallel tempering on PottsModel.random(L=20, q=20, seed=s).

For every seed: tune beta (scan, then verification pilot run with the mixing check), then draw
``--n-samples`` sequences at that beta with the pilot's ladder and thinning, and measure their mean
Hamming distance again. The samples continue the chains of the tuner's final pilot run
(``sample(..., resume=diagnostics)``), which passed its equilibration checks, at most 50 of them.
Prints one row per seed: beta; the Hamming distance of the tuner's pilot run (cross-replica pairs,
jackknife standard error) and of the drawn samples (pairs from different chains, jackknife error
over chains); the mixing verdict of the sampler's own diagnostics;
tau_int at the coldest rung; rungs; the range of swap acceptances; CPU / wall seconds of tuning
and of sampling (on a shared machine the CPU time is the meaningful one). ``--json`` writes every
number.

    OMP_NUM_THREADS=1 python benchmarks/bench_tempering.py [--seeds 0 1 ... 9] [--n-samples 1000] \
        [--cpu-cap 480] [--max-sweeps N]
"""

from __future__ import annotations

import argparse
import logging
import signal
import time

import numpy as np

from replica_mlm import PottsModel
from replica_mlm._base.io import write_json
from replica_mlm._base.stats import mean_stderr


def grouped_hamming(pm: PottsModel, seqs: np.ndarray, groups: int = 10) -> tuple[float, float]:
    """Mean Hamming distance of all pairs, and a standard error from disjoint groups of samples.

    Rows of ``PottsModel.sample`` are interleaved by chain, so each group holds one time slice of
    every chain: groups share chains, and this error misses slow chain-to-chain differences.
    """
    h = pm.mean_hamming(seqs)
    parts = np.array_split(np.arange(seqs.shape[0]), groups)
    hs = np.array([pm.mean_hamming(seqs[p]) for p in parts])
    return h, mean_stderr(hs).stderr


def chain_hamming(seqs: np.ndarray, n_chains: int, q: int) -> tuple[float, float]:
    """Cross-chain Hamming distance of samples from ``n_chains`` chains (row r from chain r % C).

    Pairs from different chains only, jackknife error over chains (slow modes included).
    """
    from replica_mlm.potts.diagnostics import _colour_counts, cross_chain_hamming

    n = seqs.shape[0] - seqs.shape[0] % n_chains
    states = seqs[:n].reshape(n // n_chains, n_chains, seqs.shape[1])
    return cross_chain_hamming(_colour_counts(states, q))


class OverBudget(Exception):
    """Raised by the CPU-time alarm (``--cpu-cap``)."""


class _Progress(logging.Handler):
    """Keeps the tuner's progress messages (scans, pilot doublings, trials) with their CPU time."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = f"[cpu {time.process_time():7.1f} s] {record.getMessage()}"
        self.lines.append(line)
        print("   ", line, flush=True)


def _over_budget(signum, frame):
    raise OverBudget


def run_seed(seed: int, target: float, n_samples: int, cpu_cap: float = 0.0,
             max_sweeps: int | None = None) -> dict:
    """Tune and sample one seed; with ``cpu_cap`` > 0 stop after that many CPU seconds.

    A seed stopped by the cap is recorded as over budget (``ok=None``) with the tuner's progress
    messages so far (``progress``: scans, pilot doublings with tau and window, trials).
    """
    pm = PottsModel.random(L=20, q=20, seed=seed)
    progress = _Progress()
    logger = logging.getLogger("replica_mlm.potts.tempering")
    logger.setLevel(logging.INFO)
    logger.addHandler(progress)
    t0, c0 = time.perf_counter(), time.process_time()
    row: dict = {"seed": seed, "progress": progress.lines}
    if cpu_cap > 0:
        signal.signal(signal.SIGPROF, _over_budget)
        signal.setitimer(signal.ITIMER_PROF, cpu_cap)
    try:
        return _tune_and_sample(pm, seed, target, n_samples, row, t0, c0, max_sweeps)
    except OverBudget:
        row.update(ok=None, error=f"over budget: stopped after {cpu_cap:.0f} CPU s",
                   t_tune=time.perf_counter() - t0, cpu_tune=time.process_time() - c0)
        return row
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        logger.removeHandler(progress)


def _tune_and_sample(pm, seed, target, n_samples, row, t0, c0, max_sweeps) -> dict:
    extra = {} if max_sweeps is None else {"max_sweeps": max_sweeps}
    row.update(extra)
    try:
        res = pm.tune_beta(target_hamming=target, rng=seed, return_result=True, **extra)
    except ValueError as exc:
        row.update(ok=False, error=str(exc), t_tune=time.perf_counter() - t0,
                   cpu_tune=time.process_time() - c0)
        return row
    t_tune, cpu_tune = time.perf_counter() - t0, time.process_time() - c0
    d = res.diagnostics
    m = pm.with_beta(res.beta)
    t1, c1 = time.perf_counter(), time.process_time()
    # continue the verified pilot's chains (no new burn-in from random sequences)
    n_chains = min(50, d.n_chains)
    seqs = m.sample(n_samples, rng=seed + 1000, resume=d, n_chains=n_chains)
    t_sample, cpu_sample = time.perf_counter() - t1, time.process_time() - c1
    h_s, se_s = chain_hamming(seqs, n_chains, m.q)
    h_g, se_g = grouped_hamming(m, seqs)
    acc = d.swap_acceptance
    row.update(
        ok=True, beta=res.beta, hamming=res.hamming, hamming_se=res.hamming_se,
        hamming_samples=h_s, hamming_samples_se=se_s, hamming_samples_all_pairs=h_g,
        hamming_samples_grouped_se=se_g, mixing=d.mixing,
        window_found=d.window_found, equilibrated=d.equilibrated, tau=d.tau_int,
        hamming_drift=d.hamming_drift, hamming_drift_se=d.hamming_drift_se,
        tau_spin=d.tau_spin, tau_energy=d.tau_energy, sweeps_between=d.sweeps_between,
        pilot_steps=d.n_sweeps, replicas=d.n_chains, rungs=int(d.ladder.size),
        ladder=d.ladder.tolist(), acceptance=acc.tolist(),
        acc_min=float(acc.min()) if acc.size else None,
        acc_max=float(acc.max()) if acc.size else None, swap_rounds=d.swap_rounds,
        trials=[list(t) for t in res.trials], n_scans=len(res.scans), sample_chains=n_chains,
        t_tune=t_tune, t_sample=t_sample, cpu_tune=cpu_tune, cpu_sample=cpu_sample,
        n_samples=n_samples,
    )
    return row


def survey_seed(seed: int, target: float, n_replicas: int) -> dict:
    """Cheaper check: the tuner's scans locate beta, then ONE pilot run there (mixing, tau, h).

    No precision loop and no sampling: what the tuner's first verification run sees.
    """
    from replica_mlm.potts import tempering as ps
    from replica_mlm.potts.tuning import _crossing
    pm = PottsModel.random(L=20, q=20, seed=seed)
    t0, c0 = time.perf_counter(), time.process_time()
    gen = np.random.default_rng(seed)
    b_lo, b_top, scans = 1.0, 2.0, []
    while True:
        lad = (ps.equal_acceptance_ladder(scans[-1].ladder, scans[-1].swap_acceptance,
                                          beta_lo=b_lo, beta_hi=b_top, target=0.5)
               if scans else ps.geometric_ladder(b_top, None, b_lo, pm.L))
        scans.append(ps.tempering_scan(pm, lad, gen, n_replicas=16, n_steps=400))
        if scans[-1].hamming[-1] <= target:
            break
        b_top *= 2.0
    beta, _ = _crossing(scans[-1], target)
    lad = ps.equal_acceptance_ladder(scans[-1].ladder, scans[-1].swap_acceptance, beta_lo=b_lo,
                                     beta_hi=beta, target=0.5)
    d = ps.pilot_tempering(pm.with_beta(beta), gen, n_replicas, lad, 200, 3200)
    acc = d.swap_acceptance
    return dict(seed=seed, ok=True, beta=beta, hamming=d.hamming, hamming_se=d.hamming_se,
                mixing=d.mixing, window_found=d.window_found, equilibrated=d.equilibrated,
                tau=d.tau_int, pilot_steps=d.n_sweeps, rungs=int(lad.size),
                acc_min=float(acc.min()), acc_max=float(acc.max()),
                t=time.perf_counter() - t0, cpu=time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    ap.add_argument("--target", type=float, default=0.3)
    ap.add_argument("--n-samples", type=int, default=1000)
    ap.add_argument("--json", default=None)
    ap.add_argument("--cpu-cap", type=float, default=0.0,
                    help="CPU seconds per seed (tuning and sampling); 0: no cap")
    ap.add_argument("--max-sweeps", type=int, default=None,
                    help="tune_beta(max_sweeps=...): longest recorded pilot run (default: tune_beta's)")
    ap.add_argument("--survey", action="store_true",
                    help="only the scans and one 16-replica pilot run at the located beta")
    args = ap.parse_args()
    if args.survey:
        rows = []
        for seed in args.seeds:
            r = survey_seed(seed, args.target, 16)
            rows.append(r)
            print(f"{seed:>4} beta {r['beta']:6.3f} h {r['hamming']:.4f}+-{r['hamming_se']:.4f} "
                  f"mixing {r['mixing']} (window {r['window_found']}, halves "
                  f"{r['equilibrated']}) tau {r['tau']:.1f} steps {r['pilot_steps']} rungs "
                  f"{r['rungs']} acc {r['acc_min']:.2f}-{r['acc_max']:.2f} "
                  f"cpu {r['cpu']:.0f} s wall {r['t']:.0f} s", flush=True)
            if args.json:
                write_json(args.json, rows, indent=1)
        return
    print(f"{'seed':>4} {'beta':>7} {'h pilot':>15} {'h samples':>15} {'mix':>4} {'tau':>6} "
          f"{'rungs':>5} {'acceptance':>11} {'tune s':>13} {'sample s':>13}", flush=True)
    rows = []
    for seed in args.seeds:
        r = run_seed(seed, args.target, args.n_samples, args.cpu_cap, args.max_sweeps)
        rows.append(r)
        if r["ok"] is None:
            print(f"{seed:>4} OVER BUDGET after {r['t_tune']:.0f} s wall, {r['cpu_tune']:.0f} s "
                  "CPU (progress above)", flush=True)
        elif not r["ok"]:
            print(f"{seed:>4} FAILED after {r['t_tune']:.0f} s wall, {r['cpu_tune']:.0f} s CPU: "
                  f"{r['error']}", flush=True)
        else:
            print(f"{seed:>4} {r['beta']:7.3f} {r['hamming']:.4f}+-{r['hamming_se']:.4f} "
                  f"{r['hamming_samples']:.4f}+-{r['hamming_samples_se']:.4f} "
                  f"{'yes' if r['mixing'] else 'NO':>4} {r['tau']:6.1f} {r['rungs']:>5} "
                  f"{r['acc_min']:.2f}-{r['acc_max']:.2f} {r['cpu_tune']:5.0f}/{r['t_tune']:<7.0f} "
                  f"{r['cpu_sample']:5.0f}/{r['t_sample']:<7.0f}",
                  flush=True)
        if args.json:
            write_json(args.json, rows, indent=1)


if __name__ == "__main__":
    main()
