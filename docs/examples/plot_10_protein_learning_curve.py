"""
A real protein family: learning curves of three sites, two designs
==================================================================

For three sites of the rhomboid protease alignment (a conserved one, one of median variability and
the most variable one), the test loss of the site's ridge regression on a window of 21 columns
(about d = 400 reduced one-hot inputs) against the number M of training sequences, beside the
replica prediction built from the family's own statistics (see :doc:`/proteins`), in two designs:

* **top row, the pool as the population**: training sets of M rows drawn from the alignment, the
  test loss the exact loss over the whole alignment, teacher, noise and covariance exact for it
  (20 training sets per M, up to a quarter of the rows). Circles: the real rows; squares: a
  Gaussian surrogate with the same moments, where the theory (line) has no approximation left.
* **bottom row, held-out rows**: 20 % of the rows held out, the teacher and its noise fitted on the
  rest (5 training sets per M). The theory alone (dashed) takes the teacher's residual on the pool
  for the noise; the teacher's loss on the held-out rows (dotted) is higher by the named
  *misspecification* term, which the dash-dot line adds; the solid line also adds the cross term
  between the teacher's held-out residual and the fit, predicted from the theory's mean fit.
"""

import numpy as np

import replica_mlm as rm
from replica_mlm.figures.protein_families import plot_site_learning_curves
from replica_mlm.proteins.learning_curve import site_learning_curve
from replica_mlm.proteins.pool_curve import pool_learning_curve

msa, _ = rm.datasets.protein_family("rhomboid")
curves, pool = [], []
for site in (38, 14, 89):  # entropies 0.60, 2.01, 2.86 nats (see the docs page for the choice)
    window = np.arange(max(0, site - 10), min(msa.L, site + 11))
    curves.append(site_learning_curve(msa, site, M=[25, 50, 100, 200, 400, 800, 1600], lam=0.1,
                                      subsamples=5, columns=window))
    pool.append(pool_learning_curve(msa, site, M=[25, 100, 400, msa.N // 4], lam=0.1, subsamples=20,
                                    columns=window))

# %%
# The pool as the population: real rows and surrogate against the theory, per M.
for c in pool:
    print(f"site {c.site}, d = {c.d}, population {c.n_pool} rows")
    print(c.table())

# %%
# Held-out rows: the measured loss, the theory alone, with the misspecification term, and with the
# predicted cross term (z-scores in standard errors); the measured cross term beside its prediction.
for c in curves:
    print(f"site {c.site}: misspecification = teacher_floor - noise_floor = "
          f"{c.teacher_floor:.4f} - {c.noise_floor:.4f} = {c.misspecification:.4f}")
    print(c.table())

fig = plot_site_learning_curves(curves, pool=pool, title=r"rhomboid, $\lambda = 0.1$")
