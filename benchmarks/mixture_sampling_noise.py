"""How the sampling noise of a sampled mixture's class means moves the mixture theory (issue 27).

Site 0 of ``random_ising(L=161, beta=BETA, seed=0)`` (BETA = 0.3 unless given): the mixture
measured from 20000 sequences (two sampler seeds) and from 80000, with ``|mu|^2``, the summed
squared standard errors of the means (their noise ``|delta mu|^2``), and both theories' error and
test loss at alpha = 4, lam = 0.1.

    python benchmarks/mixture_sampling_noise.py [BETA]
"""
import sys
import time

import numpy as np

import replica_mlm as rm

beta = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
model = rm.PottsModel.random_ising(L=161, beta=beta, seed=0)
for samples, rng in ((20000, 0), (20000, 1), (80000, 2)):
    t = time.process_time()
    task = model.masked_site(0, rng=rng, samples=samples)
    mix = task.mixture
    mu = (mix.means[0] - mix.means[1]) / 2
    se2 = float(np.sum(mix.means_stderr[0] ** 2))
    g = rm.solve(task, alpha=4.0, lam=0.1, loss="logistic")
    m = rm.solve(task, alpha=4.0, lam=0.1, loss="logistic", theory="mixture")
    print(f"samples {samples} rng {rng}: |mu|^2 {mu @ mu:.4f}, sum of SE^2 {se2:.4f}; eg gaussian {g.eg:.4f} "
          f"mixture {m.eg:.4f}; test loss {g.test_loss:.4f} {m.test_loss:.4f}; "
          f"{time.process_time() - t:.0f} CPU s",
          flush=True)
