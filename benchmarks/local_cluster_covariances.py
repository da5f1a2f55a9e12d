"""Is the local theory's pooled covariance what it misses (issue 36)?

A site of docs/discrete.md's "Sparse couplings" tables -- ``band``: the band at L = 200 (beta 0.5,
site 100); ``lattice16``: the 16 x 16 square-lattice ferromagnet at beta 0.44 (the transition, site
0); ``potts4``: the q = 4 Potts glass on the random 3-regular graph (L = 100, beta 1.5, site 0) --
and its local clusters (label, the neighbourhood's configuration and, where the rest is split
into ordered states, the state) measured on the task's 20 000 sampled sequences: ERM (lam p = 0.1 p,
no intercept) on Gaussian data with each cluster's own mean and either each cluster's own
covariance or the pooled one (the local theory's data model), the same cluster draws and noise for
both, at the site's own p and alpha = 1, 4. Two colours: the package's logistic fit, the error
rate exact given the fit (Gaussian logits per cluster); more colours: scikit-learn's multinomial
fit, error rate and test cross-entropy on 20 000 fresh draws of the same Gaussian data. Prints
mean +- SE over the training sets.

    python benchmarks/local_cluster_covariances.py band|lattice16|potts4 [TRAINING_SETS]
"""
import sys
import warnings

import numpy as np
from scipy.special import log_softmax, ndtr
from sklearn.linear_model import LogisticRegression

import replica_mlm as rm
from replica_mlm._base.stats import mean_stderr
from replica_mlm.learners import logistic
from replica_mlm.potts import graphs

INSTANCES = {"band": (lambda: rm.PottsModel.ising(couplings=graphs.banded(200, rng=3), beta=0.5), 100),
             "lattice16": (lambda: rm.PottsModel.ising(couplings=graphs.square_lattice(16), beta=0.44), 0),
             "potts4": (lambda: rm.PottsModel(couplings=graphs.random_regular(100, signs="glass", rng=1),
                                              colours=np.eye(4), beta=1.5), 0)}
build, SITE = INSTANCES[sys.argv[1]]
SETS = int(sys.argv[2]) if len(sys.argv) > 2 else 40
LAM = 0.1
model = build()
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
T = teacher.reshape(d, -1)
print(f"{sys.argv[1]}: {C} clusters, d = {d}; weight of clusters with fewer sampled sequences than d: "
      f"{weights[counts < d].sum():.3f}; teacher variance within clusters {np.trace(T.T @ pooled @ T):.1e}")
gen = np.random.default_rng(5)
p = L - 1
labels = configs[:, 0]


def draw(c, z, own: bool) -> np.ndarray:
    return means[c] + (np.einsum("nij,nj->ni", roots[c], z) if own else z @ pooled_root.T)


def measures(X, c, own: bool) -> tuple[float, ...]:
    """The fit's error rate (exact, two colours) or error rate and test cross-entropy (fresh draws)."""
    if model.q == 2:
        W, _ = logistic.fit(X, labels[c], logistic.BINARY_BASIS, LAM * p)
        w = W[:, 0]
        sd = np.sqrt(np.einsum("i,cij,j->c", w, covs if own else pooled[None], w))
        with np.errstate(divide="ignore"):  # a cluster sampled once has no spread: its logit is fixed
            return (float(weights @ ndtr(-y * (means @ w) / sd)),)
    fit = LogisticRegression(C=1.0 / (LAM * p), fit_intercept=False, tol=1e-10, max_iter=5000)
    fit.fit(X, labels[c])
    ct, zt = gen.choice(C, size=20_000, p=weights), gen.standard_normal((20_000, d))
    logits = draw(ct, zt, own) @ fit.coef_.T
    return (float(np.mean(np.argmax(logits, axis=1) != labels[ct])),
            float(-np.mean(log_softmax(logits, axis=1)[np.arange(ct.size), labels[ct]])))


for alpha in (1.0, 4.0):
    n = round(alpha * p)
    values = {"own covariances": [], "pooled covariance": []}
    for _ in range(SETS):
        c, z = gen.choice(C, size=n, p=weights), gen.standard_normal((n, d))
        for name in values:
            own = name == "own covariances"
            values[name].append(measures(draw(c, z, own), c, own))
    cells = []
    for k, v in values.items():
        m, se = mean_stderr(np.array(v), axis=0)
        ce = f", test CE {m[1]:.4f} +- {se[1]:.4f}" if m.size > 1 else ""
        cells.append(f"{k} error {m[0]:.4f} +- {se[0]:.4f}{ce}")
    print(f"alpha {alpha:g}: " + "; ".join(cells), flush=True)
