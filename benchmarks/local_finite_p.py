"""Is the local theory's gap to ERM on its own data model at small p the finite size (issue 36)?

docs/discrete.md, "Sparse couplings": on the 10 x 10 lattice (p = 99) the local theory's test loss
sits 1-4 % below ERM on data drawn from its own data model. The theory is the p -> infinity limit of
that experiment, so a finite-size gap must shrink as p grows at fixed alpha. This script grows p
without changing the theory: every input of the site's local mixture is copied k times, each copy's
mean divided by sqrt(k) and the covariance block-diagonal (k copies), the teacher likewise; then the
spectrum is the same k times over, p = 99 k, and the means' and teacher's norms are unchanged, so
every order parameter, and every number of the theory, is the same at every k (printed: its
largest relative change). ERM (the package's logistic fit, lam p |w|^2 / 2, n = alpha p) on data
drawn from the copied mixture, measured exactly under it (``sparse_tables.own_model_point``), at
k = 1, 2, 4, 8: mean +- SE over the training sets and z against the theory.

    python benchmarks/local_finite_p.py BETA [SETS]      # the 10 x 10 lattice's site 0 at BETA
"""
import sys
import time
import types
import warnings
from dataclasses import replace

import numpy as np

import replica_mlm as rm
from replica_mlm.potts import graphs
from replica_mlm.theory.sides import losses
from replica_mlm.theory.solvers import local_engine
from replica_mlm.validation.sparse_tables import MEASURES, own_model_point

beta = float(sys.argv[1])
SETS = int(sys.argv[2]) if len(sys.argv) > 2 else 100
LAM = 0.1
model = rm.PottsModel.ising(couplings=graphs.square_lattice(10), beta=beta)
task = model.masked_site(0, rng=0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    mix = task.local_mixture


def copied(k: int):
    """The local mixture with every input copied k times (means and teacher / sqrt(k))."""
    d = mix.d
    return replace(mix, means=np.tile(mix.means, k) / np.sqrt(k),
                   covariance=np.kron(np.eye(k), mix.covariance),
                   fixed=np.concatenate([mix.fixed + j * d for j in range(k)]),
                   teacher=np.tile(mix.teacher, k) / np.sqrt(k), counts=None)


logistic = losses.resolve("logistic")
print(f"10 x 10 lattice, beta {beta:g}, site 0: {mix.C} clusters, p = {task.p}; {SETS} training sets a point")
for alpha in (1.0, 4.0):
    base = None
    for k in (1, 2, 4, 8):
        start = time.process_time()
        site = types.SimpleNamespace(local_mixture=copied(k), p=k * task.p)
        th = local_engine.solve(site, alpha=alpha, lam=LAM, loss=logistic)
        if base is None:
            base = th
        change = max(abs(getattr(th, m) / getattr(base, m) - 1) for m in MEASURES)
        erm = own_model_point(site, alpha=alpha, lam=LAM, seeds=SETS, rng=2)
        cells = "; ".join(f"{m} {erm[m][0]:.4f} +- {erm[m][1]:.4f} (theory {getattr(th, m):.4f}, "
                          f"z {(erm[m][0] - getattr(th, m)) / erm[m][1]:+.1f})" for m in MEASURES)
        print(f"alpha {alpha:g}, k = {k} (p = {k * task.p}): {cells}; theory's change from k = 1: "
              f"{change:.1e}; {time.process_time() - start:.0f} CPU s", flush=True)
