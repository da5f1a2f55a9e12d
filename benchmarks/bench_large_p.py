"""Large p: time to the first point with ``Spectrum.from_site(site, method="lanczos")`` against one
``numpy.linalg.eigh`` of the site's covariance, in the same process.

For each p: a masked site of a Gaussian Potts instance (L = p + 1, shift 3, seed 0), or with
``--toeplitz`` a site with the AR(1) covariance ``Sigma_ij = r^|i - j|`` (r = 0.5, built in
O(p^2), no O(p^3) set-up) and a random teacher (seed 0), for sizes where building a Potts
instance would itself cost minutes. Timed, one after the other:

* ``eigh``: ``numpy.linalg.eigh(site.covariance)`` (the baseline; skipped with ``--no-eigh``);
* ``eigvalsh``: the eigenvalues alone (skipped with ``--no-eigh``);
* ``first point, lanczos``: ``Spectrum.from_site(site, method="lanczos")`` then ``rm.solve`` at
  alpha = 2, lam = 0.1 (the whole cost of the first point once the site exists);
* ``first point, eigh``: ``Spectrum.from_site(site, method="eigh")`` (the site's eigendecomposition)
  then the same solve (skipped with ``--no-eigh``).

Printed: CPU seconds of each, the ratios to ``eigh``, the peak memory of the lanczos step
(tracemalloc: the numpy arrays it allocates, e.g. the Krylov basis; the copy of the matrix that
LAPACK makes inside ``eigvalsh`` is not seen), the process's peak resident memory at the end
(``ru_maxrss``, covariance included), Lanczos steps, and the largest relative difference in eg
and in the estimation error between the two spectra over a 60-point curve at lam = 1e-4, 1e-2,
1 (alpha in [0.05, 4]).

Run:  OMP_NUM_THREADS=1 python benchmarks/bench_large_p.py [--p 3000] [--toeplitz] [--no-eigh]
"""

from __future__ import annotations

import argparse
import math
import resource
import time
import tracemalloc
from types import SimpleNamespace

import numpy as np

import replica_mlm as rm


def cpu(fn):
    c0 = time.process_time()
    out = fn()
    return time.process_time() - c0, out


def first_point(site, method: str):
    spec = rm.Spectrum.from_site(site, method=method)
    return spec, rm.solve(spec, alpha=2.0, lam=0.1)


def toeplitz_site(p: int, r: float = 0.5):
    from scipy.linalg import toeplitz
    cov = toeplitz(r ** np.arange(p))
    teacher = np.random.default_rng(0).normal(size=p) / np.sqrt(p)
    return SimpleNamespace(covariance=cov, teacher=teacher, noise=0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, nargs="+", default=[3000])
    ap.add_argument("--toeplitz", action="store_true")
    ap.add_argument("--no-eigh", action="store_true")
    args = ap.parse_args()
    rm.solve(rm.GaussianPotts.limit(3.0), alpha=2.0, lam=0.1)  # compiled equations loaded, not timed
    for p in args.p:
        if args.toeplitz:
            t_site, site = cpu(lambda p=p: toeplitz_site(p))
            kind = "AR(1) Toeplitz r = 0.5"
        else:
            t_site, site = cpu(lambda p=p: rm.GaussianPotts.random(L=p + 1, shift=3.0, seed=0).masked_site(0))
            kind = "Gaussian Potts masked site"
        print(f"p = {p} ({kind}; set-up {t_site:.2f} CPU-s)")
        cov = site.covariance
        # with --no-eigh the only decomposition is the one inside from_site (large p: minutes each)
        t_vals, _ = (math.nan, None) if args.no_eigh else cpu(lambda cov=cov: np.linalg.eigvalsh(cov))
        tracemalloc.start()
        t_lan, (lan, first) = cpu(lambda site=site: first_point(site, "lanczos"))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # KiB on Linux
        steps = lan.omega.size - p
        print(f"  eigvalsh                        {t_vals:8.2f} CPU-s")
        print(f"  first point, lanczos            {t_lan:8.2f} CPU-s  ({steps} Lanczos steps; peak "
              f"memory {peak / 2**20:.0f} MiB beside the {site.covariance.nbytes / 2**20:.0f} MiB "
              f"covariance; process peak RSS so far {rss:.0f} MiB)  eg = {first.eg:.15g}")
        if args.no_eigh:
            continue
        t_eigh, _ = cpu(lambda cov=cov: np.linalg.eigh(cov))
        t_full, (full, first_full) = cpu(lambda site=site: first_point(site, "eigh"))
        print(f"  eigh (baseline)                 {t_eigh:8.2f} CPU-s")
        print(f"  first point, eigh               {t_full:8.2f} CPU-s  eg = {first_full.eg:.15g}")
        print(f"  ratio first point lanczos / eigh: {t_lan / t_eigh:.2f}   eigh path / eigh: "
              f"{t_full / t_eigh:.2f}   eigvalsh / eigh: {t_vals / t_eigh:.2f}")
        alphas = np.linspace(0.05, 4.0, 60)
        worst_eg = worst_ee = 0.0
        for lam in (1e-4, 1e-2, 1.0):
            a = rm.learning_curve(lan, alpha=alphas, lam=lam)
            b = rm.learning_curve(full, alpha=alphas, lam=lam)
            worst_eg = max(worst_eg, float(np.max(np.abs(a.eg - b.eg) / b.eg)))
            worst_ee = max(worst_ee, float(np.max(np.abs(a.estimation_error - b.estimation_error)
                                                  / b.estimation_error)))
        print(f"  lanczos vs eigh over 3 x 60 points: max rel. difference eg {worst_eg:.1e}, "
              f"estimation error {worst_ee:.1e}")


if __name__ == "__main__":
    main()
