"""
Theory against simulation
=========================

Ridge regression trained on samples of one masked site (closed form: one SVD per training set
gives every :math:`\\lambda`), against the replica prediction on the same instance. For every
:math:`(\\alpha, \\lambda)` the simulation mean over independent training sets is compared with the
replica value in units of its standard error, :math:`z = (\\text{mean} - e_g)/\\text{se}`. If the theory
is right the :math:`z` are standard normal. The replica value is exact as :math:`p \\to \\infty`; at
finite :math:`p` the mean differs by :math:`O(1/p)`, more near the interpolation peak (see
:doc:`/theory`, section 5), so the points here keep away from :math:`\\alpha = 1`.
"""

import numpy as np

import replica_mlm as rm

site = rm.GaussianPotts.random(L=151, shift=3.0, rng=1).masked_site(0)
lams = [1e-3, 1e-2, 1e-1, 1.0]
alphas = [0.25, 0.5, 0.7, 1.6, 2.2, 3.0]
z = []
for k, a in enumerate(alphas):
    for j, lam in enumerate(lams):  # independent training sets for every point
        sim = rm.simulate(site, alpha=a, lam=lam, seeds=20, rng=len(lams) * k + j)
        eg = rm.solve(site, alpha=sim.alpha, lam=lam).eg  # at the realised n / p
        z.append((sim.eg_mean[0] - eg) / sim.eg_stderr[0])
z = np.array(z)

# %%
# Under the theory the :math:`z` are independent standard normal variables, so their mean has
# standard error :math:`1/\sqrt N`:
print(f"{z.size} points: mean z = {z.mean():+.2f} (se {z.size ** -0.5:.2f}), sd z = {z.std(ddof=1):.2f}, "
      f"max |z| = {np.abs(z).max():.2f}")

fig = rm.plotting.plot_z_histogram(z, title=r"$p = 150$, 20 training sets per point")
