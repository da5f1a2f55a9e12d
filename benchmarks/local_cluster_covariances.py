"""Is the local theory's pooled covariance what it misses (issue 36)?

A site of docs/discrete.md's "Sparse couplings" tables -- ``band``: the band at L = 200 (beta 0.5,
site 100); ``lattice16``: the 16 x 16 square-lattice ferromagnet at beta 0.44 (the transition, site
0) -- and its local clusters (label, the neighbourhood's configuration and, where the rest is split
into ordered states, the state) measured on the task's 20 000 sampled sequences: ERM (the package's
logistic fit, lam p = 0.1 p, no intercept) on Gaussian data with each cluster's own mean and either
each cluster's own covariance or the pooled one (the local theory's data model), the same cluster
draws and noise for both, at the site's own p = L - 1 and alpha = 1, 4; the error rate exact given
the fit (Gaussian logits per cluster). Prints mean +- SE over the training sets.

    python benchmarks/local_cluster_covariances.py band [TRAINING_SETS]
    python benchmarks/local_cluster_covariances.py lattice16 [TRAINING_SETS]
"""
import sys
import warnings

import numpy as np
from scipy.special import ndtr

import replica_mlm as rm
from replica_mlm._base.stats import mean_stderr
from replica_mlm.learners import logistic
from replica_mlm.potts import graphs

INSTANCES = {"band": (lambda: graphs.banded(200, rng=3), 0.5, 100),
             "lattice16": (lambda: graphs.square_lattice(16), 0.44, 0)}
graph, beta, SITE = INSTANCES[sys.argv[1]]
SETS = int(sys.argv[2]) if len(sys.argv) > 2 else 40
LAM = 0.1
model = rm.PottsModel.ising(couplings=graph(), beta=beta)
L = model.L
task = model.masked_site(SITE, rng=0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    teacher = task.local_mixture.teacher
    split = task.rest_states
seqs, _ = task._sequences()
x = task._inputs(seqs, None)
key = np.c_[seqs[:, SITE], seqs[:, list(task.neighbourhood)]]
if split is not None and split.split:  # the ordered state of the rest splits each cluster
    key = np.c_[key, split.states]
configs, cluster = np.unique(key, axis=0, return_inverse=True)
cluster = cluster.ravel()
C, d = configs.shape[0], x.shape[1]
counts = np.bincount(cluster, minlength=C)
weights = counts / counts.sum()
y = np.where(configs[:, 0] == 0, 1.0, -1.0)  # label 0 <-> logit +w.x (logistic.BINARY_BASIS)
means = np.array([x[cluster == c].mean(axis=0) for c in range(C)])
covs = np.array([np.cov(x[cluster == c].T) if counts[c] > 1 else np.zeros((d, d)) for c in range(C)])
pooled = np.einsum("c,cij->ij", weights, covs)


def root(S):
    e, V = np.linalg.eigh(S)
    return V * np.sqrt(np.clip(e, 0.0, None))


roots, pooled_root = np.array([root(S) for S in covs]), root(pooled)
print(f"{sys.argv[1]}: {C} clusters, d = {d}; weight of clusters with fewer sampled sequences than d: "
      f"{weights[counts < d].sum():.3f}; teacher variance within clusters {teacher @ pooled @ teacher:.1e}")
gen = np.random.default_rng(5)
p = L - 1
for alpha in (1.0, 4.0):
    n = round(alpha * p)
    errors = {"own covariances": [], "pooled covariance": []}
    for _ in range(SETS):
        c, z = gen.choice(C, size=n, p=weights), gen.standard_normal((n, d))
        for name, X, S in (("own covariances", means[c] + np.einsum("nij,nj->ni", roots[c], z), covs),
                           ("pooled covariance", means[c] + z @ pooled_root.T, pooled[None])):
            W, _ = logistic.fit(X, (y[c] < 0).astype(np.int64), logistic.BINARY_BASIS, LAM * p)
            w = W[:, 0]
            sd = np.sqrt(np.einsum("i,cij,j->c", w, S, w))
            with np.errstate(divide="ignore"):  # a cluster sampled once has no spread: its logit is fixed
                errors[name].append(float(weights @ ndtr(-y * (means @ w) / sd)))
    cells = [(k, *mean_stderr(np.array(v))) for k, v in errors.items()]
    print(f"alpha {alpha:g}: " + "; ".join(f"{k} {m:.4f} +- {se:.4f}" for k, m, se in cells))
