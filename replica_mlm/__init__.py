"""replica_mlm: replica theory of masked language modelling with factored self-attention.

See ``docs/theory.md`` for the models, the conventions (alpha = n / p, the ridge penalty
(lam p / 2) |w|^2, eg without a factor 1/2) and the equations implemented here.
"""

__version__ = "0.1.0"

import importlib as _importlib

# Public names and the modules that define them, imported on first use (PEP 562), so that
# ``import replica_mlm`` and ``replica-mlm --help`` load neither sympy nor scipy.optimize; the
# first ``rm.solve`` pays for them.
_EXPORTS = {
    # --- Gaussian (mean-field) Potts model and its replica theory (core) ---
    "GaussianPotts": "replica_mlm.gaussian.gaussian_potts",
    "GaussianPottsLimit": "replica_mlm.gaussian.limit",
    "MaskedSite": "replica_mlm.gaussian.masked_site",
    "Spectrum": "replica_mlm.gaussian.spectrum",
    "load": "replica_mlm.results",
    "Simulation": "replica_mlm.gaussian.simulate",
    "simulate": "replica_mlm.gaussian.simulate",
    "LearningCurve": "replica_mlm.theory.curve",
    "learning_curve": "replica_mlm.theory.curve",
    "equations": "replica_mlm.theory.display",
    "Asymptotics": "replica_mlm.theory.limits",
    "asymptotics": "replica_mlm.theory.limits",
    "expansions": "replica_mlm.theory.limits",
    "OptimalLambda": "replica_mlm.theory.phase",
    "PhaseDiagram": "replica_mlm.theory.phase",
    "optimal_lambda": "replica_mlm.theory.phase",
    "phase_diagram": "replica_mlm.theory.phase",
    "shift_phase_diagram": "replica_mlm.theory.phase",
    "ConvergenceError": "replica_mlm.theory.saddle",
    "SaddlePoint": "replica_mlm.theory.saddle",
    "solve": "replica_mlm.theory.saddle",
    "separability_threshold": "replica_mlm.theory.separability",
    # --- discrete generalised Potts model and factored self-attention ---
    "FactoredAttention": "replica_mlm.discrete.attention",
    "PottsModel": "replica_mlm.discrete.potts",
    "PottsSite": "replica_mlm.discrete.potts_site",
    "MulticlassSaddlePoint": "replica_mlm.theory.multiclass",
    # --- self-attention as an attractor network ---
    "AttractorNetwork": "replica_mlm.attractor.network",
}
#: submodules exported as such (``rm.losses``; ``rm.plotting`` imports matplotlib)
_MODULES = ("losses", "plotting")


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _MODULES:
        return _importlib.import_module(f"replica_mlm.{name}")
    # PyTorch (the optional extra [transformer]) only when the vanilla transformer is asked for
    if name == "TransformerMLM":
        try:
            return _importlib.import_module("replica_mlm.discrete.transformer").TransformerMLM
        except ImportError as exc:
            raise ImportError(
                f'rm.TransformerMLM needs PyTorch: pip install "replica-mlm[transformer]" ({exc})'
            ) from exc
    raise AttributeError(f"module 'replica_mlm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


#: every public name: the lazily imported ones, the submodules, the transformer and the version
__all__ = sorted([*_EXPORTS, *_MODULES, "TransformerMLM", "__version__"])
