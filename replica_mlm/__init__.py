"""replica_mlm: replica theory of masked language modelling with factored self-attention.

See ``docs/theory.md`` for the models, the conventions (alpha = n / p, the ridge penalty
(lam p / 2) |w|^2, eg without a factor 1/2) and the equations implemented here.
"""

__version__ = "0.1.0"

# --- Gaussian (mean-field) Potts model and its replica theory (core) ---
from replica_mlm.models.gaussian_potts import GaussianPotts
from replica_mlm.models.limit import GaussianPottsLimit
from replica_mlm.models.masked_site import MaskedSite
from replica_mlm.models.spectrum import Spectrum
from replica_mlm.simulate import Simulation, simulate
from replica_mlm.theory.curve import LearningCurve, learning_curve
from replica_mlm.theory.display import equations
from replica_mlm.theory.limits import Asymptotics, asymptotics, expansions
from replica_mlm.theory.phase import PhaseDiagram, optimal_lambda, phase_diagram, shift_phase_diagram
from replica_mlm.theory.saddle import ConvergenceError, SaddlePoint, solve
from replica_mlm.theory.separability import separability_threshold

# isort: split
from replica_mlm import losses

# --- discrete generalised Potts model and factored self-attention ---
# isort: split
from replica_mlm.attention import FactoredAttention
from replica_mlm.models.potts import PottsModel
from replica_mlm.models.potts_site import PottsSite
from replica_mlm.theory.multiclass import MulticlassSaddlePoint

# --- self-attention as an attractor network ---
# isort: split
from replica_mlm.attractor import AttractorNetwork


def __getattr__(name: str):
    import importlib

    # matplotlib is imported only when figures are asked for
    if name == "plotting":
        return importlib.import_module("replica_mlm.plotting")
    # PyTorch (the optional extra [transformer]) only when the vanilla transformer is asked for
    if name == "TransformerMLM":
        try:
            return importlib.import_module("replica_mlm.transformer").TransformerMLM
        except ImportError as exc:
            raise ImportError(
                f'rm.TransformerMLM needs PyTorch: pip install "replica-mlm[transformer]" ({exc})'
            ) from exc
    raise AttributeError(f"module 'replica_mlm' has no attribute {name!r}")


__all__ = [
    "Asymptotics",
    "AttractorNetwork",
    "ConvergenceError",
    "FactoredAttention",
    "GaussianPotts",
    "GaussianPottsLimit",
    "LearningCurve",
    "MaskedSite",
    "MulticlassSaddlePoint",
    "PhaseDiagram",
    "PottsModel",
    "PottsSite",
    "SaddlePoint",
    "Simulation",
    "Spectrum",
    "TransformerMLM",
    "__version__",
    "asymptotics",
    "equations",
    "expansions",
    "learning_curve",
    "losses",
    "optimal_lambda",
    "phase_diagram",
    "plotting",
    "separability_threshold",
    "shift_phase_diagram",
    "simulate",
    "solve",
]
