"""
D'Amico and Negri: transient memories of the attractor network
==============================================================

Self-attention read as an attractor network of vector spins, trained with the local
(backpropagation-free) rule on the :math:`8\\times 8` digits of scikit-learn (pixels as unit vectors
of :math:`\\mathbb R^2`, :math:`2\\times 2` patches as tokens), then run from corrupted held-out
digits (see :doc:`/attractor`). The reconstruction error dips within a few steps — the transient —
and then drifts to a blurred end state. The held-out test of the package declares a transient only
if the best step, chosen on one half of the inputs, beats the corrupted input, the mean training
image and the end state on the other half by 3 standard errors each. The settings are those of the
validation suite, at a smaller size (300 training images, 20 epochs, 60 steps);
``replica-mlm attractor`` runs the full experiments.
"""

import matplotlib.pyplot as plt
import numpy as np

from replica_mlm.attractor.experiments import digits_experiment
from replica_mlm.attractor.measurements import AttractorSettings

settings = AttractorSettings(weight_decay=0.1, gamma=0.8, epochs=20, steps=60, window=(1, 30))
ex = digits_experiment(n_train=300, n_test=100, n_eval=60, settings=settings, rng=0)

# %%
for task in ("masked", "noise"):
    m, life = ex.memory[task]["test"], ex.lifetimes[task]["test"]
    print(f"{task:6s}: best step {m.t_best}, gains over start / end / mean image "
          f"{m.gain_vs_t0[0] / m.gain_vs_t0[1]:.1f} / {m.gain_vs_last[0] / m.gain_vs_last[1]:.1f} / "
          f"{m.gain_vs_baseline[0] / m.gain_vs_baseline[1]:.1f} standard errors -> "
          f"{'transient' if m.passed else 'no transient'}; "
          f"median lifetime {np.median(life.half_depth):.0f} steps")

fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.2), sharey=True)
for ax, task in zip(axes, ("masked", "noise"), strict=True):
    err = ex.curves[task]["test"].error
    t = np.arange(err.shape[1])
    mean, se = err.mean(axis=0), err.std(axis=0, ddof=1) / np.sqrt(len(err))
    ax.fill_between(t, mean - se, mean + se, color="0.8")
    ax.plot(t, mean, "k-", label="dynamics (held-out digits)")
    ax.axhline(mean[0], color="0.4", ls=":", label="corrupted input ($t = 0$)")
    ax.axhline(ex.baseline["test"][0], color="0.4", ls="--", label="mean training image")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(0, t[-1])
    ax.set_xlabel("step $t$")
    ax.set_title(f"{task} tokens", fontsize=10)
axes[0].set_ylabel("mean squared error per pixel")
axes[0].legend(fontsize=7)
fig.tight_layout()

# %%
# Decoded states along the dynamics for one masked held-out digit
ex_states = ex.examples["masked"]["test"]
steps = [0, 1, 2, 4, 8, 16, 60]
fig, axes = plt.subplots(1, len(steps) + 1, figsize=(1.2 * (len(steps) + 1), 1.6))
axes[0].imshow(ex_states["clean"][0], cmap="gray_r", vmin=0, vmax=1)
axes[0].set_title("clean", fontsize=8)
for ax, s in zip(axes[1:], steps, strict=True):
    ax.imshow(ex_states["states"][s, 0], cmap="gray_r", vmin=0, vmax=1)
    ax.set_title(f"$t = {s}$", fontsize=8)
for ax in axes:
    ax.set_axis_off()
