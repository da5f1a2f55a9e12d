"""``replica-mlm equations``: the saddle-point equations as derived by sympy."""

from __future__ import annotations

import re

import click

from replica_mlm.cli._common import CONVENTIONS


@click.command("equations", epilog=CONVENTIONS)
@click.option("--latex", is_flag=True, default=False, help="Print one LaTeX aligned block.")
def equations(latex):
    """Print the replica-symmetric saddle-point equations (THEORY.md section 4).

    They are derived by sympy from the entropic and energetic potentials, per spectral mode
    omega_k of Sigma with teacher weight t_k = p theta_k^2, and are the equations the solver uses.
    """
    import sympy as sp

    from replica_mlm import equations as derive

    out = derive(latex=latex)
    if latex:
        click.echo(out)
        return
    for name, eq in out.items():
        click.echo(f"{name}:  {_plain(sp.sstr(eq.lhs))} = {_plain(sp.sstr(eq.rhs))}")


def _plain(text: str) -> str:
    """Symbol names written for LaTeX (``\\hat{V}``, ``\\omega``) as plain text (``V_hat``, ``omega``)."""
    return re.sub(r"\\([A-Za-z]+)", r"\1", re.sub(r"\\hat\{(\w+)\}", r"\1_hat", text))
