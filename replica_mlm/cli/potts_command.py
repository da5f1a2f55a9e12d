"""``replica-mlm potts``: MLM with factored attention is pseudo-likelihood (docs/potts.md)."""

from replica_mlm.cli._common import section_command

potts = section_command(
    "potts",
    doc="Discrete Potts model: sampler, MLM = pseudo-likelihood, consistency, small-lam curve.",
    quick_help="Small model (L = 6, q = 4; well under a minute) or the paper's L = q = 20.",
    seed_help="Seed of the model, the sampler and the initialisations.",
)
