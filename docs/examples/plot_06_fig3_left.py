"""
Rende et al., fig. 3 (left): test loss against :math:`\\alpha`
================================================================

The paper's headline figure at small size: the replica test loss of factored attention at one
masked site of a Gaussian Potts instance against :math:`\\alpha = n/p` for four ridge strengths,
with simulation means and standard errors on the same instance. At small :math:`\\lambda` the loss
grows from :math:`C_{ii}` (no learning) up to the interpolation peak at :math:`\\alpha = 1`, which
diverges at :math:`\\lambda = 0`: for a Potts site the signal-to-noise ratio is small, so there is no
initial decay. ``replica-mlm validate --section mlm`` draws it at :math:`L = 400` or :math:`1600`
(see :doc:`/figures`).
"""

import numpy as np

import replica_mlm as rm

site = rm.GaussianPotts.random(L=201, shift=3.0, rng=0).masked_site(0)
lams = [0.0, 1e-3, 1e-1, 1.0]
alpha = np.linspace(0.02, 3.0, 300)
curves = [rm.learning_curve(site, alpha=alpha, lam=lam) for lam in lams]

points = []
for k, a in enumerate([0.25, 0.5, 0.75, 1.5, 2.0, 3.0]):
    sim = rm.simulate(site, alpha=a, lam=lams, seeds=40, rng=k)  # every lam from one SVD
    points += [(sim.alpha, lam, sim.eg_mean[j], sim.eg_stderr[j]) for j, lam in enumerate(lams)]

fig = rm.plotting.plot_learning_curves(curves, simulations=points,
                                       title=r"Gaussian Potts, $L = 201$, $s = 3$")
