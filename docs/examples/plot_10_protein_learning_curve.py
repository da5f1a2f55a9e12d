"""
A real protein family: learning curves of three sites
=====================================================

For three sites of the rhomboid protease alignment (a conserved one, one of median variability and
the most variable one), the test loss of the site's ridge regression on a window of 21 columns
(d = 20 x 20 = 400 reduced one-hot inputs) against the number M of training sequences, by
subsampling the alignment (5 random training sets per M, 20 % of the rows held out), beside the
replica prediction built from the family's own covariance and its pool-fitted teacher (see
:doc:`/proteins`). The dotted lines are the teacher's own loss on the held-out rows. The thin
lines with crosses are the same ridge predicted from the class-conditional moments of the
alignment (the site's colours as classes; :doc:`/proteins`, "The class-conditional moments beside
the Gaussian reduction"): higher at small M, the same at large M.
"""

import numpy as np

import replica_mlm as rm
from replica_mlm.figures.protein_families import plot_site_learning_curves
from replica_mlm.proteins.learning_curve import site_learning_curve

msa, _ = rm.datasets.protein_family("rhomboid")
curves = []
for site in (38, 14, 89):  # entropies 0.60, 2.01, 2.86 nats (see the docs page for the choice)
    window = np.arange(max(0, site - 10), min(msa.L, site + 11))
    curves.append(site_learning_curve(msa, site, M=[25, 50, 100, 200, 400, 800, 1600], lam=0.1,
                                      subsamples=5, columns=window))

# %%
# Measured mean, its standard error, the two predictions and their z-scores per M:
for c in curves:
    print(c.to_frame()[["M", "measured", "se", "theory", "z", "mixture", "z_mixture",
                        "teacher_floor"]].round(4).to_string())

fig = plot_site_learning_curves(curves, title=r"rhomboid, $\lambda = 0.1$")
