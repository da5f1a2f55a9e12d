"""``replica-mlm attractor``: the attractor-network experiments (docs/attractor.md)."""

from replica_mlm.cli._common import section_command

attractor = section_command(
    "attractor",
    doc="Transient memories of self-attention as an attractor network (digits, Potts sequences).",
    quick_help="CI-sized data sets (well under a minute) or the full digits set.",
    seed_help="Seed of the data split, corruptions, Potts model and training.",
)
