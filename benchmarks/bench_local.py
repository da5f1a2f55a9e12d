"""The local theory's cost against the label-only mixture's, on the same site, in one process.

Item 5 of the sparse-coupling work (docs/discrete.md, section "Sparse couplings"): a local solve
of an Ising site with four neighbours within 3x of its mixture solve, and of a q = 4 Potts site
with three neighbours within 10x. The two solves alternate (mixture, local, mixture, local, ...)
on one site whose moments are measured once beforehand, so both see the same machine; the ratio is
of the medians. Also printed: the map evaluations of each solve (the multi-class driver's cost is
about one evaluation of the channel side per step, each ``C x n_nodes`` proximal solves for ``C``
clusters). On the Ising site also the local theory with each cluster's own covariance
(``covariance="cluster"``, its data model measured beforehand too; it starts from the pooled local
theory's point, whose solve it includes): its ratio to the pooled local theory, without a target.

    python benchmarks/bench_local.py --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

import replica_mlm as rm
from replica_mlm.potts.model import PottsModel


def lattice(n: int) -> np.ndarray:
    """Ferromagnetic couplings of an n x n periodic square lattice."""
    J = np.zeros((n * n, n * n))
    for r in range(n):
        for c in range(n):
            i = r * n + c
            for j in (((r + 1) % n) * n + c, r * n + (c + 1) % n):
                J[i, j] = J[j, i] = 1.0
    return J


def regular(L: int, degree: int, rng: np.random.Generator) -> np.ndarray:
    """A random ``degree``-regular graph on L sites (configuration model, redrawn until simple)."""
    while True:
        stubs = rng.permutation(np.repeat(np.arange(L), degree)).reshape(-1, 2)
        edges = {tuple(sorted(e)) for e in stubs.tolist()}
        if np.all(stubs[:, 0] != stubs[:, 1]) and len(edges) == len(stubs):
            J = np.zeros((L, L))
            for a, b in edges:
                J[a, b] = J[b, a] = 1.0
            return J


def cases():
    rng = np.random.default_rng(7)
    U = rng.normal(size=(4, 4))
    yield ("Ising 4x4 lattice, beta 0.4, 4 neighbours", "logistic", 3.0,
           PottsModel.ising(couplings=lattice(4), beta=0.4).masked_site(0, rng=0))
    yield ("Potts q = 4, 3-regular L = 10, beta 0.8, 3 neighbours", None, 10.0,
           PottsModel(couplings=regular(10, 3, rng), colours=(U + U.T) / 2, beta=0.8).masked_site(0, rng=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)  # validity warnings: not what is timed
    for name, loss, target, site in cases():
        site.mixture, site.local_mixture, site.validity("local")  # moments measured once, not timed
        runs = {"mixture": {"theory": "mixture"}, "local": {"theory": "local"}}
        if loss is not None:  # two colours: also each cluster's own covariance
            _ = site.local_mixture_own_covariances  # measured once, not timed
            runs["local, own covariances"] = {"theory": "local", "covariance": "cluster"}
        times = {name: [] for name in runs}
        evals = {}
        for _ in range(args.repeats):
            for theory, options in runs.items():
                t = time.perf_counter()
                sp = rm.solve(site, alpha=2.0, lam=0.1, loss=loss, **options)
                times[theory].append(time.perf_counter() - t)
                evals[theory] = sp.iterations
        ratio = statistics.median(times["local"]) / statistics.median(times["mixture"])
        print(f"{name}: neighbourhood {site.neighbourhood}, {site.local_mixture.C} clusters")
        for theory in times:
            median = statistics.median(times[theory])
            print(f"  {theory:22s} median {median:8.3f} s, {evals[theory]} evaluations")
        verdict = "met" if ratio <= target else "NOT met"
        print(f"  ratio local / mixture {ratio:.2f} (target <= {target:g}): {verdict}")
        if "local, own covariances" in times:
            own = statistics.median(times["local, own covariances"]) / statistics.median(times["local"])
            print(f"  ratio local with own covariances / local {own:.2f}")


if __name__ == "__main__":
    main()
