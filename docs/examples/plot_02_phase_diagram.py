"""
A phase diagram
===============

The test loss over the plane of sample ratio :math:`\\alpha` and ridge strength :math:`\\lambda`
(log scale), with the region where more data *hurts* (:math:`\\partial e_g/\\partial\\alpha > 0`,
from implicit differentiation of the scalar saddle-point equation), the optimal
:math:`\\lambda^*(\\alpha)` and the location of the peak of :math:`e_g` in :math:`\\alpha` for every
:math:`\\lambda` (see :doc:`/limit`, section "Optimal regularisation and phase diagrams").
Here in the thermodynamic limit :math:`L \\to \\infty` at shift :math:`s = 3`.
"""

import numpy as np

import replica_mlm as rm

site = rm.GaussianPotts.limit(shift=3.0)
pd = rm.phase_diagram(site, alpha=np.linspace(0.05, 4.0, 32), lam=np.geomspace(1e-4, 10.0, 40))

# %%
# The optimal ridge is finite everywhere; at small :math:`\lambda` more data hurts from
# :math:`\alpha = 0` up to the interpolation peak, because the signal-to-noise ratio
# :math:`\rho/\sigma^2` of a Potts site is small.
print(f"rho / sigma^2 = {site.rho / site.noise:.3f}")
print("fraction of the plane where more data hurts:", float(np.mean(pd.deg_dalpha > 0)))

fig = rm.plotting.plot_phase_diagram(pd, title=r"$L \to \infty$, $s = 3$")
