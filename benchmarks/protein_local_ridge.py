"""A real site's ridge curve with the local theory's clusters beside the Gaussian reduction.

docs/proteins.md, "The pool as the population" (the local theory: docs/discrete.md, "Sparse
couplings"). With the alignment's rows as the population (``pool_learning_curve``: 20 training sets
per M drawn with replacement, the exact population loss), the same ridge is predicted from a
Gaussian mixture whose clusters are the site's colour and the bin of the field that the site's
most strongly coupled columns make (the columns ranked by the norm of their block of the
population least-squares teacher; bins by k-means on that 20-dimensional field, scikit-learn,
seed 0), with exact cluster weights, means and the pooled within-cluster covariance of the
population (:mod:`replica_mlm.theory.solvers.mixture_ridge`, the targets the colour's Helmert
components); beside it the label-only mixture and the Gaussian reduction. z = (real rows -
prediction) / SE.

    python benchmarks/protein_local_ridge.py rhomboid 89
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.cluster import KMeans

import replica_mlm as rm
from replica_mlm.learners.multinomial_pl import reduced_inputs
from replica_mlm.proteins.pool_curve import NULL, pool_learning_curve
from replica_mlm.tasks.potts_site import simplex_basis
from replica_mlm.theory.solvers.mixture_ridge import MixtureRidgeTheory, mixture_ridge_curve

LAM = 0.1


def window(L: int, site: int) -> np.ndarray:
    """21 columns around the site (the last 21 near the end), as docs/proteins.md."""
    return np.arange(max(0, site - 10), min(L, site + 11)) if site + 11 <= L else np.arange(L - 21, L)


def main(family: str, site: int) -> None:
    msa, _ = rm.datasets.protein_family(family)
    cols = window(msa.L, site)
    Ms = [25, 100, 400, msa.N // 4]
    curve = pool_learning_curve(msa, site, M=Ms, lam=LAM, subsamples=20, rng=0, columns=cols)
    real = curve.losses.mean(axis=1)
    se = curve.losses.std(axis=1, ddof=1) / np.sqrt(curve.losses.shape[1])
    pool = msa.sequences[:, cols].astype(np.intp)
    local = int(np.flatnonzero(cols == site)[0])
    P, p, N = simplex_basis(msa.q), cols.size - 1, pool.shape[0]
    mean = P[pool].mean(axis=0)
    x0 = reduced_inputs(pool, local, P, mean)  # (N, 20 (columns - 1)): one block of 20 per column
    y = P[pool[:, local]] - mean[local]
    eig, vec = np.linalg.eigh(x0.T @ x0 / N)
    keep = eig > NULL * eig[-1]
    x = x0 @ vec[:, keep]
    d = x.shape[1]
    block_teacher = vec[:, keep] @ ((x.T @ y / N) / eig[keep][:, None])
    others = [j for j in range(cols.size) if j != local]
    norms = np.array([np.linalg.norm(block_teacher[20 * k:20 * (k + 1)]) for k in range(len(others))])

    def predict(labels: np.ndarray) -> tuple[np.ndarray, int, int]:
        """The mixture-ridge test loss at every M, clusters ``labels``: (losses, C, smallest)."""
        classes, inv, counts = np.unique(labels, return_inverse=True, return_counts=True)
        mu = np.zeros((classes.size, d))
        np.add.at(mu, inv, x)
        mu /= counts[:, None]
        r = x - mu[inv]
        S = r.T @ r / N
        S += 1e-10 * np.trace(S) / d * np.eye(d)
        first = np.array([np.flatnonzero(inv == c)[0] for c in range(classes.size)])
        th = MixtureRidgeTheory(weights=counts / N, means=mu, covariance=S, targets=y[first])
        points = mixture_ridge_curve(th, alpha=np.array(Ms) / d, lam=LAM * p / d)
        return np.array([pt.test_loss for pt in points]), classes.size, int(counts.min())

    def show(name: str, pred: np.ndarray) -> None:
        print(f"  {name}: {np.round(pred, 4)}; z {np.round((real - pred) / se, 1)}")

    print(f"{family} site {site}: d = {d}, N = {N}, M = {Ms}; real rows {np.round(real, 4)} "
          f"+- {np.round(se, 4)}")
    show("Gaussian reduction", curve.theory)
    pred, C, smallest = predict(pool[:, local])
    show(f"label-only mixture (C = {C}, smallest {smallest} rows)", pred)
    for k in (1, 2, 4):
        nb = np.argsort(norms)[::-1][:k]
        blocks = np.concatenate([np.arange(20 * j, 20 * (j + 1)) for j in nb])
        field = x0[:, blocks] @ block_teacher[blocks]
        for bins in (4, 16):
            labels = KMeans(n_clusters=bins, n_init=4, random_state=0).fit(field).labels_
            pred, C, smallest = predict(pool[:, local] * 1000 + labels)
            show(f"local, columns {[int(cols[others[j]]) for j in nb]}, {bins} field bins (C = {C}, "
                 f"smallest {smallest} rows)", pred)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("family", choices=["rhomboid", "S1A", "DHFR"])
    parser.add_argument("site", type=int)
    args = parser.parse_args()
    main(args.family, args.site)
