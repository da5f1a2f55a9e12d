"""
A learning curve
================

The replica prediction of the test loss :math:`e_g(\\alpha)` of ridge regression at one masked site
of a Gaussian Potts instance, for several ridge strengths :math:`\\lambda` (see :doc:`/theory`).
At small :math:`\\lambda` the loss *grows* with :math:`\\alpha = n/p` up to the interpolation peak
at :math:`\\alpha = 1` (divergent at :math:`\\lambda = 0`) and then decays towards the noise floor
:math:`\\sigma^2` as :math:`\\sigma^2/\\alpha`.
"""

import numpy as np

import replica_mlm as rm

site = rm.GaussianPotts.random(L=300, shift=3.0, rng=0).masked_site(0)  # predict x_0 from the rest
alpha = np.linspace(0.05, 6.0, 240)
curves = [rm.learning_curve(site, alpha=alpha, lam=lam) for lam in (0.0, 1e-3, 1e-1, 1.0)]

# %%
# Every point is a converged saddle point (``converged`` is checked by the solver's residual).
# The noise floor and the no-learning level are properties of the task:
print(f"sigma^2 = {site.noise:.4f}, C_ii = rho + sigma^2 = {site.rho + site.noise:.4f}")
print("largest residual:", max(float(np.max(c.residual)) for c in curves))

fig = rm.plotting.plot_learning_curves(curves, title="masked site 0, $L = 300$, $s = 3$")
