"""Self-attention as an attractor network.

``network`` (local energies, dynamics, the local training rule), ``experiments`` (digits and
Gaussian Potts experiments) and ``transients`` (the transient-memory measurements). See
docs/attractor.md.
"""
