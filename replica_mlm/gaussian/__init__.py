"""The Gaussian (mean-field) MLM task.

``gaussian_potts`` (the model), ``masked_site`` (one site: covariance, teacher, noise),
``spectrum`` (the eigen-data the theory needs), ``limit`` (L -> infinity), ``simulate`` (ridge and
general-loss simulations, :func:`replica_mlm.simulate`) and ``erm`` (their estimators).
The replica theory itself is in :mod:`replica_mlm.theory`; see docs/theory.md.
"""
