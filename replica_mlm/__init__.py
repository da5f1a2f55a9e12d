"""replica_mlm: replica theory of masked language modelling with factored self-attention.

See ``docs/theory.md`` for the models, the conventions (alpha = n / p, the ridge penalty
(lam p / 2) |w|^2, eg without a factor 1/2) and the equations implemented here.
"""

__version__ = "0.1.0"

# --- Gaussian (mean-field) Potts model and its replica theory (core) ---

# --- discrete generalised Potts model and factored self-attention ---

# --- self-attention as an attractor network ---

__all__ = [
    "__version__",
]
