"""Self-attention as an attractor network.

``network`` (local energies, dynamics, the local training rule), ``experiments`` (encoding,
corruptions, measurements, the digits experiment), ``gaussian_potts`` (the Gaussian Potts
experiment and its masked-site comparison) and ``transients`` (the transient-memory measurements). See
docs/attractor.md.
"""
