"""How the sampling of the local theory's clusters moves its prediction on the band at L = 200 (issue 36).

The contact-map-like band of docs/discrete.md ("Sparse couplings"), ``graphs.banded(L, rng=3)`` at
beta = 0.5, site ``L // 2`` (the tables' instance): the local theory's error rate, test loss and
estimation error at alpha = 1 and 4 (lam = 0.1, the logistic loss) from ``masked_site(...,
samples=N, rng=seed)`` for each sampler seed given, one row each, with its CPU seconds. Several
seeds at one ``N`` give the prediction's own sampling spread; two sizes its bias (the noise of the
cluster means, of order 1/N, lowers the predicted error).

    python benchmarks/band_sampling_noise.py 200 20000 0,1,2,3,4,5
    python benchmarks/band_sampling_noise.py 200 80000 10,11
"""
import sys
import time
import warnings

import replica_mlm as rm
from replica_mlm.potts import graphs

L, samples = int(sys.argv[1]), int(sys.argv[2])
seeds = [int(s) for s in sys.argv[3].split(",")]
model = rm.PottsModel.ising(couplings=graphs.banded(L, rng=3), beta=0.5)
print("L samples seed | alpha 1: error test_loss estimation_error | alpha 4: the same | CPU s")
for rng in seeds:
    start = time.process_time()
    task = model.masked_site(L // 2, rng=rng, samples=samples)
    row = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the validity warning (not the point here)
        for alpha in (1.0, 4.0):
            sp = rm.solve(task, alpha=alpha, lam=0.1, loss=model.default_loss, theory="local")
            row += [sp.eg, sp.test_loss, sp.estimation_error]
    cpu = time.process_time() - start
    print(L, samples, rng, " ".join(f"{x:.4f}" for x in row), f"{cpu:.0f}", flush=True)
