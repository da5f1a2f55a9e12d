"""``replica-mlm equations``: the saddle-point equations as derived by sympy."""

from __future__ import annotations

import re

import click

from replica_mlm.cli._common import CHANNEL, CONVENTIONS, LOSS


@click.command("equations", epilog=CONVENTIONS)
@click.option("--latex", is_flag=True, default=False, help="Print one LaTeX aligned block.")
@click.option("--loss", "loss", default=None, type=LOSS,
              help="Show the general engine's equations for this loss (docs/theory.md, section 6).")
@click.option("--channel", "channel", default=None, type=CHANNEL,
              help="Label channel of the general engine's equations.")
def equations(latex, loss, channel):
    """Print the replica-symmetric saddle-point equations (docs/theory.md, sections 3 and 6).

    They are derived by sympy from the entropic and energetic potentials, per spectral mode
    omega_k of Sigma with teacher weight t_k = p theta_k^2, and are the equations the solver uses.
    With --loss and/or --channel: the equations of the general engine (proximal point, channel
    partition function, hat integrals; docs/theory.md, section 6).
    """
    import sympy as sp

    from replica_mlm import equations as derive

    out = derive(latex=latex, loss=loss, channel=channel)
    if latex:
        click.echo(out)
        return
    for name, eq in out.items():
        click.echo(f"{name}:  {_plain(sp.sstr(eq.lhs))} = {_plain(sp.sstr(eq.rhs))}")


def _plain(text: str) -> str:
    """Symbol names written for LaTeX (``\\hat{V}``, ``\\omega``) as plain text (``V_hat``, ``omega``)."""
    return re.sub(r"\\([A-Za-z]+)", r"\1", re.sub(r"\\hat\{(\w+)\}", r"\1_hat", text))
