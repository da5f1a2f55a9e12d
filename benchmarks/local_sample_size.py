"""How many sampled sequences the local theory's prediction needs, on the sites where it missed (issue 36).

For each site named, the local theory's error rate, test loss and estimation error (lam = 0.1, the
site's default loss; on Ising sites also with each cluster's own covariance) from
``masked_site(..., samples=N, rng=seed)`` at every size and sampler seed given, one row each, with
the sequences per cluster and Gaussian input (``local_site.samples_needed`` asks for 3) and the wall
seconds. Several sizes give what the sampling of the clusters does to the prediction (the means'
noise, which lowered the predicted error about as 1/N, is taken out by the theory: docs/discrete.md,
"Sampled cluster means"); several seeds at one size the prediction's own spread.

    python benchmarks/local_sample_size.py potts4 20000,80000,240000 0
    python benchmarks/local_sample_size.py lattice16 20000,80000,240000 0
    python benchmarks/local_sample_size.py band200 320000 0
    python benchmarks/local_sample_size.py regular4 25000,100000,250000 11
    python benchmarks/local_sample_size.py glass3 20000,100000 0,1 parts

``parts`` (two sizes, two seeds): which part of the small sample's data model moves the
prediction. The large sample's mixture (second seed) is solved as it is, with the small sample's
(first seed) cluster means, pooled covariance or weights put in, one at a time (the clusters
matched by label and configuration); the pooled local theory, its means' noise taken out as always
(docs/discrete.md, "Sampled cluster means").

Sites (docs/discrete.md, "Sparse couplings"): ``potts4``, the q = 4 Potts glass on the random
3-regular graph (L = 100, beta = 1.5, site 0, alpha 1 and 4); ``lattice16``, the 16 x 16 ferromagnet
at beta = 0.44 (site 0, alpha 1 and 4); ``band200``, the band at L = 200 (beta 0.5, site 100, alpha
1 and 4); ``regular4``, the held-out 4-regular ferromagnet (L = 120, beta = 0.4, site 5, alpha 1.5);
``glass3``, the +-1 Ising glass on the random 3-regular graph (L = 100, beta = 0.7, site 0, alpha 1
and 4).
"""
import dataclasses
import sys
import time
import warnings

import numpy as np

import replica_mlm as rm
from replica_mlm.potts import graphs
from replica_mlm.tasks.local_site import SAMPLES_PER_CLUSTER_INPUT, samples_needed

SITES = {
    "potts4": (lambda: rm.PottsModel(couplings=graphs.random_regular(100, signs="glass", rng=1),
                                     colours=np.eye(4), beta=1.5), 0, (1.0, 4.0)),
    "lattice16": (lambda: rm.PottsModel.ising(couplings=graphs.square_lattice(16), beta=0.44), 0, (1.0, 4.0)),
    "band200": (lambda: rm.PottsModel.ising(couplings=graphs.banded(200, rng=3), beta=0.5), 100, (1.0, 4.0)),
    "regular4": (lambda: rm.PottsModel.ising(couplings=graphs.random_regular(120, degree=4, rng=7), beta=0.4),
                 5, (1.5,)),
    "glass3": (lambda: rm.PottsModel.ising(couplings=graphs.random_regular(100, signs="glass", rng=1),
                                           beta=0.7), 0, (1.0, 4.0)),
}



def parts(model, site: int, alphas, sizes: list[int], seeds: list[int]) -> None:
    """The large sample's prediction with one part of the small sample's mixture put in."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        small = model.masked_site(site, rng=seeds[0], samples=sizes[0]).local_mixture
        task = model.masked_site(site, rng=seeds[1], samples=sizes[1])
        big = task.local_mixture
        def keys(m):  # a cluster: label, configuration and (where split) the rest's ordered state
            states = m.states if m.states is not None else np.zeros(m.C, dtype=np.int64)
            return [(int(m.labels[c]), tuple(np.ravel(m.configurations[c])), int(states[c]))
                    for c in range(m.C)]

        index = {k: c for c, k in enumerate(keys(small))}
        order = np.array([index[k] for k in keys(big)])
        put_in = {"means": {"means": small.means[order], "counts": small.counts[order]},
                  "covariance": {"covariance": small.covariance},
                  "weights": {"weights": small.weights[order]}}
        variants = {f"{sizes[1]}": big}
        for part, new in put_in.items():
            variants[f"{sizes[1]}, {part} of {sizes[0]}"] = dataclasses.replace(big, **new)
        for label, mixture in variants.items():
            task.__dict__["local_mixture"] = mixture  # the site's cached data model, replaced
            for alpha in alphas:
                sp = rm.solve(task, alpha=alpha, lam=0.1, loss=model.default_loss, theory="local")
                print(f"{name} {label} alpha {alpha:g}: error {sp.eg:.4f} test loss {sp.test_loss:.4f} "
                      f"estimation error {sp.estimation_error:.4f}", flush=True)


name, sizes, seeds = sys.argv[1], sys.argv[2], sys.argv[3]
build, site, alphas = SITES[name]
model = build()
if sys.argv[4:] == ["parts"]:
    parts(model, site, alphas, [int(s) for s in sizes.split(",")], [int(s) for s in seeds.split(",")])
    sys.exit()
for n in (int(s) for s in sizes.split(",")):
    for seed in (int(s) for s in seeds.split(",")):
        start = time.time()
        task = model.masked_site(site, rng=seed, samples=n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the few-samples warning: the point here
            mixture = task.local_mixture
            per = SAMPLES_PER_CLUSTER_INPUT * n / samples_needed(mixture)
            for covariance in ("pooled", "cluster") if model.q == 2 else ("pooled",):
                for alpha in alphas:
                    own = {"covariance": "cluster"} if covariance == "cluster" else {}
                    sp = rm.solve(task, alpha=alpha, lam=0.1, loss=model.default_loss, theory="local", **own)
                    print(f"{name} N {n} seed {seed} ({per:.2f} per cluster and input) {covariance} "
                          f"alpha {alpha:g}: error {sp.eg:.4f} test loss {sp.test_loss:.4f} "
                          f"estimation error {sp.estimation_error:.4f} ratio {sp.valid.ratio:.3f} "
                          f"({time.time() - start:.0f} s)", flush=True)
