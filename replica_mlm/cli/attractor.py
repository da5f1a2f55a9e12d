"""``replica-mlm attractor``: the attractor-network experiments (THEORY.md section 7)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("attractor")
@click.option("--quick/--full", default=True, show_default=True,
              help="CI-sized data sets (well under a minute) or the full digits set.")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("attractor_out"), show_default=True,
              help="Folder for the figures (PNG, PDF) and attractor.json.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the data split, corruptions, Potts model and training.")
def attractor(quick: bool, out: Path, seed: int) -> None:
    """Transient memories of self-attention as an attractor network (digits, Potts sequences)."""
    from replica_mlm.validation.attractor import run

    section = run(out, quick=quick, rng=seed)
    for c in section.checks:
        click.echo(f"[{'ok' if c.passed else 'FAIL'}] {c.name}: {c.detail}")
    click.echo(f"figures and attractor.json written to {out}")
    if not section.passed:
        raise SystemExit(1)
