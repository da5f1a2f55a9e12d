"""The discrete (generalised) Potts model and the attention layers trained on it.

``potts`` (the model), ``sampling`` (Gibbs, diagnostics), ``tempering`` (parallel tempering,
beta tuning), ``attention`` (factored attention = pseudo-likelihood), ``transformer`` (the vanilla
baseline, PyTorch), and the inputs of the discrete replica theory: ``ising`` and
``pseudo_likelihood`` (q = 2), ``potts_site`` and ``multinomial_pl`` (q > 2).
See docs/potts.md, docs/discrete.md and docs/multiclass.md.
"""
