"""``replica-mlm validate``: the validation suite (also ``python -m validation``)."""

from __future__ import annotations

import click

from replica_mlm.cli._common import (
    CONVENTIONS,
    check_scheduler,
    claim_out,
    out_option,
    resume_labels,
    scale_options,
)


def _section_names():
    from replica_mlm.validation.suite import SECTIONS

    return list(SECTIONS)


@click.command("validate", epilog=CONVENTIONS)
@click.option("--quick/--full", default=True, show_default=True,
              help="CI-sized sweeps (all sections under 3 minutes on 2 cores) or the version a paper "
                   "would quote (L up to 1600, more instances and seeds; about 56 CPU-minutes in "
                   "all: 30 minutes of wall time with --workers 2 on 2 cores).")
@click.option("--section", "sections", multiple=True, type=click.Choice(_section_names()),
              help="Run only these sections (repeatable) [default: all that are installed].")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Root seed; every section derives its instances and samples from it.")
@scale_options
@out_option("validate")
def validate(*, quick, sections, seed, workers, threads, scheduler, resume, progress, out):
    """Hold the replica theory against simulations; write report.json, report.md and figures.

    Sections: mlm (replica prediction vs closed-form ridge simulations on the same Gaussian Potts
    instances: z-scores, the growth of the test loss below alpha = 1, the c / alpha decay;
    fig. 3 left of Rende et al.), limit (the thermodynamic limit: finite-size convergence, the
    peak, the phase diagram), attractor (transient memories of self-attention as an attractor
    network), potts (the discrete Potts model and factored attention), erm (losses and channels of
    the general engine against simulations), discrete (Ising and Potts sites: the discrete theory
    and the Gaussian mixture), bayes (the Bayes-optimal error, AMP and posterior sampling),
    dynamics (one-pass SGD and gradient flow against their simulations) and
    figure2 (fig. 2 of Rende et al.: vanilla transformers against factored attention; needs the
    [transformer] extra) when installed. Every check
    is a claim with a number and a threshold; the exit status is 1 if any check fails, except the
    known deviations: claims of the papers measured and not reproduced, listed in the report with
    their numbers, which fail the run only if they unexpectedly pass.
    """
    from replica_mlm._base.sweep import ResumeRefused
    from replica_mlm._base.threads import blas_threads
    from replica_mlm.validation.suite import run_suite

    check_scheduler(scheduler)
    resume_labels(seed="--seed", function="the point function", version="the package version",
                  L="--quick/--full", seeds="--quick/--full", alpha="--quick/--full", lams="--quick/--full",
                  instance_seed="--seed")
    claim_out()
    try:
        # sweeps inside inherit the limit for their workers; the rest runs under it in this process
        with blas_threads(threads):
            report = run_suite(out, quick=quick, seed=seed, sections=list(sections) or None,
                               workers=workers, scheduler=scheduler, resume=resume, progress=progress,
                               echo=click.echo)
    except ResumeRefused:
        raise  # one line, exit status 2: replica_mlm.cli's error handler
    except ValueError as exc:  # e.g. a malformed --scheduler address
        raise click.UsageError(str(exc)) from None
    click.echo(f"{'PASSED' if report['passed'] else 'FAILED'}: {report['summary']}; "
               f"report in {out / 'report.md'} and {out / 'report.json'}")
    if not report["passed"]:
        raise SystemExit(1)
