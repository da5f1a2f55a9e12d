"""The full mlm validation section on a Dask LocalCluster against one process.

``OMP_NUM_THREADS=1 python benchmarks/bench_dask.py --out DIR [--workers 2] [--quick]``

Runs ``validate --full --section mlm`` (:func:`replica_mlm.validation.suite.run_suite`) twice in
this process: first serially (one process, ``workers=1``) into ``DIR/serial``, then with every sweep
point sent to a ``dask.distributed.LocalCluster`` of ``--workers`` worker processes with one thread
each (``scheduler=client``) into ``DIR/dask``. Prints both wall times, the CPU seconds (of this
process, and of the Dask workers read on each worker with ``client.run``), the speed-up, the load
average before, between and after (the machine may be shared: the speed-up is only as steady as
the load), and checks that the two runs give the same results point by point (the sweep's seeds
depend only on the root seed and the point index) and the same verdicts. Needs the optional extra
``pip install "replica-mlm[dask]"``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from replica_mlm.validation import suite


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def process_cpu() -> float:
    """User + system CPU seconds of the calling process (run on each Dask worker by client.run)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="the quick mlm section instead (a smoke test)")
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    mode = "quick" if args.quick else "full"
    print(f"{os.cpu_count()} cores; mlm section, {mode} mode; load average (1/5/15 min) {load()}", flush=True)
    t0 = time.perf_counter()
    serial = suite.run_suite(args.out / "serial", quick=args.quick, sections=["mlm"], progress=False)
    t_serial = time.perf_counter() - t0
    print(f"one process: {t_serial:.1f} s (section {serial['sections'][0]['seconds']:.1f} s, CPU "
          f"{serial['sections'][0]['cpu_seconds']:.1f} s), passed {serial['passed']}; load average {load()}",
          flush=True)

    t0 = time.perf_counter()
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        t_start = time.perf_counter() - t0
        before = client.run(process_cpu)
        dask = suite.run_suite(args.out / "dask", quick=args.quick, sections=["mlm"], scheduler=client,
                               progress=False)
        after = client.run(process_cpu)
        worker_cpu = sum(after[w] - before[w] for w in after)
    t_dask = time.perf_counter() - t0
    print(f"LocalCluster({args.workers} workers x 1 thread): {t_dask:.1f} s including {t_start:.1f} s to "
          f"start the cluster (section {dask['sections'][0]['seconds']:.1f} s; CPU {worker_cpu:.1f} s in the "
          f"workers + {dask['sections'][0]['cpu_seconds']:.1f} s in this process), passed {dask['passed']}; "
          f"load average {load()}", flush=True)

    rows = [json.loads((args.out / d / "mlm.json").read_text())["rows"] for d in ("serial", "dask")]
    same = rows[0] == rows[1]
    verdicts = [[(c["name"], c["passed"]) for c in r["checks"]] for r in (serial, dask)]
    print(f"speed-up {t_serial / t_dask:.2f}x (section times: "
          f"{serial['sections'][0]['seconds'] / dask['sections'][0]['seconds']:.2f}x); "
          f"identical rows: {same}; identical verdicts: {verdicts[0] == verdicts[1]}")
    if not same or verdicts[0] != verdicts[1]:
        raise SystemExit("the Dask run differs from the serial run")


if __name__ == "__main__":
    main()
