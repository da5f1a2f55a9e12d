"""
Sparse couplings: three theories of a lattice site against simulation
=====================================================================

On a periodic square lattice a spin's conditional depends on its four neighbours only: the teacher
field :math:`2\\beta\\sum_{j\\in\\partial i} s_j` takes five values, whatever the size of the lattice,
and is nothing like the sum of many weak terms both dense theories assume. Gaussian equivalence
(``theory="gaussian"``) keeps only the spins' covariance; the label-conditioned Gaussian mixture
(``theory="mixture"``) keeps one Gaussian per label; the local theory (``theory="local"``) treats
the neighbourhood exactly, one cluster per label and neighbourhood configuration, and the other
spins as Gaussian given the cluster (see :doc:`/discrete`, section "Sparse couplings"). Each
result carries ``valid``: the Bayes error of the theory's data model against the site's own, the
check that tells which theory can hold (section "When a theory holds").

A 4 x 4 lattice keeps the example fast (the spins' law is enumerated exactly); at this size the
local theory still misses by about 10 % in error rate, part of it the finite size of the learning
problem (:math:`p = 15`), part the Gaussian treatment of the other 11 spins; on a 10 x 10 lattice
it agrees within the simulations' error (the tables of the docs page).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

import replica_mlm as rm
from replica_mlm.potts.graphs import square_lattice

model = rm.PottsModel.ising(couplings=square_lattice(4), beta=0.4)  # just below the ordering
task = model.masked_site(0, rng=0)  # neighbourhood: the four lattice neighbours
lam = 0.1
alpha = np.geomspace(0.5, 8.0, 15)
theories = ("gaussian", "mixture", "local")
with warnings.catch_warnings():
    # the dense theories are outside their validity here: read from each curve's .valid instead
    warnings.simplefilter("ignore", rm.ValidityWarning)
    curves = {t: rm.learning_curve(task, alpha=alpha, lam=lam, loss="logistic", theory=t, progress=False)
              for t in theories}
sim_alpha = [1.0, 4.0]
sims = rm.simulate(model, site=0, alpha=sim_alpha, lam=lam, seeds=12, rng=0, loss="logistic", n_test=200)

# %%
# The validity of each theory on this site, and the agreement with the simulations:
print("neighbourhood:", task.neighbourhood)
for t in theories:
    v = curves[t].valid
    print(f"{t:8s}: Bayes error of its data model {v.bayes_error_model:.4f}, the site's "
          f"{v.bayes_error_site:.4f}, ratio {v.ratio:.3f}, ok = {v.ok}")
for s in sims:
    mean, se = s.eg_mean[0], s.eg_stderr[0]
    z = {t: (mean - np.interp(s.alpha, alpha, curves[t].eg)) / se for t in theories}
    print(f"alpha = {s.alpha:4.2f}: simulation {mean:.4f} +- {se:.4f}; z " +
          ", ".join(f"{t} {z[t]:+.1f}" for t in theories))

fig, ax = plt.subplots(figsize=(5.4, 3.8))
styles = {"gaussian": ("tab:blue", "--"), "mixture": ("tab:orange", "-."), "local": ("tab:green", "-")}
for t in theories:
    colour, line = styles[t]
    ax.plot(alpha, curves[t].eg, color=colour, linestyle=line,
            label=f"{t} (Bayes-error ratio {curves[t].valid.ratio:.2f})")
ax.errorbar([s.alpha for s in sims], [s.eg_mean[0] for s in sims], yerr=[s.eg_stderr[0] for s in sims],
            fmt="o", color="k", mfc="white", capsize=2, label="pseudo-likelihood fits (12 seeds)")
ax.axhline(curves["local"].valid.bayes_error_site, color="0.5", linewidth=0.8, linestyle=":",
           label="the site's Bayes error")
ax.set(xscale="log", xlabel=r"$\alpha = n / p$", ylabel="error rate $e_g$",
       title=r"4 x 4 Ising lattice, $\beta = 0.4$, $\lambda = 0.1$")
ax.set_xticks([0.5, 1, 2, 4, 8], labels=["0.5", "1", "2", "4", "8"])
ax.xaxis.set_minor_formatter(plt.NullFormatter())
ax.legend(fontsize=7)
fig.tight_layout()
