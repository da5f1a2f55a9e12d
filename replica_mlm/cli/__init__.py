"""The ``replica-mlm`` command line.

Each subcommand lives in a module of its own in this package and is registered on the
:func:`main` group below. Bad options exit with status 2 and a one-line error (click's
usage-error convention).
"""

from __future__ import annotations

import click

from replica_mlm import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="replica-mlm")
def main() -> None:
    """Replica theory of masked language modelling on (Gaussian) Potts models.

    Conventions (binding, see docs/theory.md): alpha = n / p with p = L - 1 the number of
    unmasked sites; ridge penalty (lam * p / 2) |w|^2; the generalisation error eg is the mean
    squared error on a fresh sample, without a factor 1/2.
    """


def _register() -> None:
    # one import and one add_command per subcommand module
    from replica_mlm.cli.attractor import attractor
    from replica_mlm.cli.curve import curve
    from replica_mlm.cli.equations import equations
    from replica_mlm.cli.paper_fig2 import paper_fig2
    from replica_mlm.cli.phase import phase
    from replica_mlm.cli.potts import potts
    from replica_mlm.cli.simulate import simulate
    from replica_mlm.cli.validate import validate

    main.add_command(curve)
    main.add_command(attractor)
    main.add_command(simulate)
    main.add_command(validate)
    main.add_command(equations)
    main.add_command(potts)
    main.add_command(phase)
    main.add_command(paper_fig2)


_register()
