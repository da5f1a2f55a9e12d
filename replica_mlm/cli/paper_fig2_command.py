"""``replica-mlm paper-fig2``: fig. 2 of Rende et al., vanilla transformers vs factored attention."""

from __future__ import annotations

import click

from replica_mlm.cli._common import claim_out, echo_section, out_option


@click.command("paper-fig2",
               short_help="Fig. 2 of Rende et al.: transformers vs factored attention vs the optimum.")
@click.option("--quick/--full", default=True, show_default=True,
              help="Small model for CI (L = 6, q = 4, about a minute on one core) or the paper's "
                   "setting (L = q = 20, mean Hamming distance 0.3, M = 3000; about 35 CPU minutes).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Root seed of the model, the samples and the training seeds.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes for the independent trainings and fits (same numbers for any value).")
@out_option("paper-fig2", help="Folder for fig2a-d (PNG, PDF) and fig2.json.")
def paper_fig2(quick: bool, out, seed: int, workers: int) -> None:
    """Fig. 2 a-d: test loss of 1- and 3-layer transformers and factored attention against the
    conditional entropy, attention maps beside J, coupling reconstruction, the gamma family.

    Needs PyTorch: pip install "replica-mlm[transformer]". Exits with status 1 if one of the
    paper's claims (numbered checks in fig2.json) is not reproduced.
    """
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise click.UsageError('paper-fig2 needs PyTorch: pip install "replica-mlm[transformer]"')
    from replica_mlm.validation.figure2_section import run

    claim_out()
    section = run(out, quick=quick, rng=seed, workers=workers)
    echo_section(section, f"fig2a-d (PNG, PDF) and fig2.json written to {out}")
