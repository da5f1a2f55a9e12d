"""``replica-mlm potts``: MLM with factored attention is pseudo-likelihood (THEORY.md sections 1-2)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("potts")
@click.option("--quick/--full", default=True, show_default=True,
              help="Small model (L = 6, q = 4; well under a minute) or the paper's L = q = 20.")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("potts_out"), show_default=True,
              help="Folder for the figures (PNG, PDF) and potts.json.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the model, the sampler and the initialisations.")
def potts(quick: bool, out: Path, seed: int) -> None:
    """Discrete Potts model: sampler, MLM = pseudo-likelihood, consistency, small-lam curve."""
    from replica_mlm.validation.potts import run

    section = run(out, quick=quick, rng=seed)
    for c in section.checks:
        click.echo(f"[{'ok' if c.passed else 'FAIL'}] {c.name}: {c.detail}")
    click.echo(f"figures and potts.json written to {out}")
    if not section.passed:
        raise SystemExit(1)
