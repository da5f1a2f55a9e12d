"""
Rende et al., fig. 2: vanilla transformers against factored attention
=====================================================================

The paper's fig. 2 at a tiny size (:math:`L = 6` sites, :math:`q = 4` colours, 800 training
sequences; the paper: :math:`L = q = 20`, 3000 sequences): sequences sampled from a generalised
Potts model, learnt by masked language modelling with a vanilla transformer (one and three layers)
and with one layer of factored attention (see :doc:`/potts`). (a) test MLM loss during training
against the conditional entropy, the floor set by the true model; (b) the attention maps beside
:math:`|\\beta J|`; (c) the coupling error of factored attention against the number of training
sequences; (d) one layer of self-attention on tokens :math:`E e_{s_j} + \\gamma p_j` for several
:math:`\\gamma`, against factored attention. Needs PyTorch (``pip install "replica-mlm[transformer]"``);
without it only the factored-attention panels are drawn. ``replica-mlm paper-fig2 --full``
runs the paper's setting (see :doc:`/figures`).
"""

import importlib.util

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter, ScalarFormatter

import replica_mlm as rm
from replica_mlm.learners.attention import reconstruction_error

have_torch = importlib.util.find_spec("torch") is not None

pm = rm.PottsModel.random(L=6, q=4, rng=2, beta=2.0)  # beta: mean Hamming distance about 0.45
data = pm.sample(1100, rng=1)  # Gibbs, thinned by the sampler's measured autocorrelation
train, test = data[:800], data[800:]
H = pm.neg_pseudo_loglikelihood(test)  # conditional entropy on the test set
print(f"mean Hamming distance {pm.mean_hamming(test):.3f}; conditional entropy {H:.3f} nats per sequence")

epochs, lr = 10, 0.05
fa_sgd = rm.FactoredAttention.fit(train, q=pm.q, lam=1e-3, rng=0, method="sgd", epochs=epochs,
                                  batch_size=100, lr=0.1, monitor=test)
fa = rm.FactoredAttention.fit(train, q=pm.q, lam=1e-3, rng=0)  # the same objective, by L-BFGS
curves, maps = {"factored attention (SGD)": (np.arange(1, epochs + 1), fa_sgd.fit_info.monitor_history)}, {}
maps["factored $|A|$"] = np.abs(fa.attention)
gamma_loss = {}
if have_torch:
    for layers in (1, 3):
        tf = rm.TransformerMLM(L=pm.L, q=pm.q, layers=layers, d_model=16, rng=0)
        hist = tf.fit(train, epochs=epochs, batch_size=100, lr=lr, test=test, momentum=0.9, warmup=16,
                      eval_every=2)
        curves[f"transformer, {layers} layer{'s' * (layers > 1)}"] = (hist.test_epochs, hist.test_loss)
        maps[f"transformer, {layers} layer{'s' * (layers > 1)}"] = tf.attention_maps(test)[-1]
        if layers == 1:
            gamma_loss[1.0] = tf.mlm_loss(test)
    for gamma in (0.1, 10.0):
        tf = rm.TransformerMLM(L=pm.L, q=pm.q, layers=1, d_model=16, gamma=gamma, rng=0)
        tf.fit(train, epochs=epochs, batch_size=100, lr=lr, momentum=0.9, warmup=16)
        gamma_loss[gamma] = tf.mlm_loss(test)
else:
    print("PyTorch is not installed: the transformer panels are left out")

# %%
# (a) and (b)
fig, axes = plt.subplots(1, 2 + len(maps), figsize=(3.0 * (2 + len(maps)), 3.0))
ax = axes[0]
for k, (label, (ep, loss)) in enumerate(curves.items()):
    ax.plot(ep, loss, "k", ls=["-", "--", ":"][k], label=label)
ax.axhline(H, color="0.6", lw=0.8, label="conditional entropy")
ax.set_xlabel("epoch")
ax.set_ylabel("test MLM loss")
ax.legend(fontsize=7)
ax.set_title("(a)", fontsize=10)
maps[r"$|\beta J|$"] = np.abs(pm.beta * pm.couplings)
for ax, (label, A) in zip(axes[1:], maps.items(), strict=True):
    ax.imshow(A, cmap="Greys")
    ax.set_title(f"(b) {label}", fontsize=9)
    ax.set_xlabel("$j$")
    ax.set_ylabel("$i$")
fig.tight_layout()

# %%
# (c) and (d)
Ms = [100, 300, 800]
rec = [reconstruction_error(rm.FactoredAttention.fit(train[:m], q=pm.q, lam=1e-3, rng=0).couplings(),
                            pm.coupling_tensor()) for m in Ms]
fig, axes = plt.subplots(1, 2 if gamma_loss else 1, figsize=(6.4 if gamma_loss else 3.2, 3.0), squeeze=False)
ax = axes[0, 0]
ax.loglog(Ms, rec, "ko-", mfc="white")
for axis in (ax.xaxis, ax.yaxis):
    axis.set_major_formatter(ScalarFormatter())
    axis.set_minor_formatter(NullFormatter())
ax.set_xticks(Ms)
ax.set_yticks([0.2, 0.3, 0.5, 1.0])
ax.set_xlabel("training sequences $M$")
ax.set_ylabel("relative coupling error")
ax.set_title("(c) factored attention", fontsize=10)
if gamma_loss:
    ax = axes[0, 1]
    g = sorted(gamma_loss)
    ax.semilogx(g, [gamma_loss[k] for k in g], "ko-", mfc="white", label=r"one layer, $E e_s + \gamma p$")
    ax.axhline(fa.mlm_loss(test), color="k", ls="--", label="factored attention")
    ax.axhline(H, color="0.6", lw=0.8, label="conditional entropy")
    ax.set_xlabel(r"$\gamma$")
    ax.set_ylabel("test MLM loss")
    ax.legend(fontsize=7)
    ax.set_title("(d)", fontsize=10)
fig.tight_layout()
