"""``replica-mlm curve``: learning curves eg(alpha) for one or several lam."""

from __future__ import annotations

import functools
import time

import click

from replica_mlm.cli._common import (
    CONVENTIONS,
    alpha_grid,
    alpha_range_options,
    check_erm,
    erm_options,
    lam_option,
    limit_option,
    make_task,
    out_option,
    output_set,
    task_options,
    task_title,
    write_metadata,
)


@click.command(epilog=CONVENTIONS)
@task_options
@limit_option
@functools.partial(alpha_range_options, alpha_max=12.0, points=300)
@lam_option((1e-4, 1e-2, 1e-1, 1.0))
@erm_options
@out_option("curve")
@click.option("--bayes-optimal", "bayes_optimal", is_flag=True,
              help="Also draw the Bayes-optimal error (docs/bayes_optimal.md; Gaussian prior matched to "
                   "the task's rho) and write it to bayes_optimal.csv.")
@click.option("--progress/--no-progress", "progress", default=None,
              help="Progress bar on stderr over the alphas of the general engine [default: when stderr "
                   "is a terminal].")
def curve(*, L, shift, seed, site, limit, alpha_min, alpha_max, points, lams, loss, channel, out,
          bayes_optimal=False, progress=None):
    """Replica learning curves eg(alpha) of ridge MLM on a Gaussian Potts model.

    Solves the replica-symmetric saddle point (sympy-derived, docs/theory.md, section 3) on the
    spectrum of one masked site of a GOE instance, P = shift I - J (or, with --limit, in the
    thermodynamic limit L -> infinity), for every alpha and lam.
    eg is the mean squared error on a fresh sample (no factor 1/2), alpha = n/p, p = L - 1.
    With --loss/--channel the general engine solves any convex loss and label channel; eg is
    then the channel's natural error (classification error for sign and logit).
    Writes curve.csv, curve.json (metadata), curve.png and curve.pdf into --out, all or none (a
    failure, e.g. a full disk, leaves the folder's previous files; curve.json is written last).
    With --bayes-optimal the Bayes-optimal curve of the same channel is drawn beside them and
    written to bayes_optimal.csv. The last lines say whether every point converged (also in
    curve.json, and in the figure's title when one did not).
    """
    import sys

    from replica_mlm.cli._convergence import of_curves
    from replica_mlm.plotting import plot_learning_curves
    from replica_mlm.theory.studies.curve import curves_to_csv, learning_curve

    started = time.time()
    check_erm(loss, channel, lams)
    task = make_task(L=L, shift=shift, seed=seed, site=site, limit=limit)
    alphas = alpha_grid(alpha_min, alpha_max, points)
    click.echo(f"solving {len(set(lams))} lam x {points} alpha ({loss} loss, {channel} channel) ...",
               err=True)
    show = sys.stderr.isatty() if progress is None else progress
    curves = [learning_curve(task, alpha=alphas, lam=lam, loss=loss, channel=channel, progress=show)
              for lam in sorted(set(lams))]
    convergence = of_curves(curves)
    bo = None
    if bayes_optimal:
        from replica_mlm.theory.studies.bayes_optimal import bayes_optimal_curve
        bo = bayes_optimal_curve(task, alpha=alphas, channel=channel)
    csv_path = out / "curve.csv"
    files = [csv_path, out / "curve.png", out / "curve.pdf"]
    if bo is not None:
        files.append(out / "bayes_optimal.csv")
    rows = {csv_path.name: sum(len(c) for c in curves)}
    if bo is not None:
        rows["bayes_optimal.csv"] = len(bo)
    with output_set(out, "curve"):  # all four files or none; curve.json last
        curves_to_csv(curves, csv_path)
        if bo is not None:
            bo.to_csv(out / "bayes_optimal.csv")
        title = "\n".join(t for t in (_title(task, curves, L=L, shift=shift, site=site, limit=limit),
                                     convergence.note()) if t)
        # a classification error spans less than a decade (below 1/2): a linear axis, not two log ticks
        fig = plot_learning_curves(curves, path=out / "curve", bayes_optimal=bo, title=title,
                                   logy=channel == "gaussian")
        import matplotlib.pyplot as plt

        plt.close(fig)
        write_metadata(out, "curve", dict(L=None if limit else L, limit=limit, shift=shift, seed=seed,
                                          site=site, alpha_min=alpha_min,
                                          alpha_max=alpha_max, points=points, lam=sorted(set(lams)),
                                          loss=loss, channel=channel, bayes_optimal=bayes_optimal),
                       started=started, files=files, rows=rows,
                       extra={"rho": task.rho, "noise": task.noise, "c_ii": task.c_ii,
                              "convergence": convergence.as_dict()})
    convergence.echo()
    click.echo(f"wrote {', '.join(str(f) for f in files)} and {out / 'curve.json'}")


def _title(task, curves, **where) -> str:
    """The task, and from which alpha the smallest lam beats no learning (the caption of
    curve.png): e_g < C_ii for the gaussian channel, e_g < 1/2 (chance) for a binary one, whose
    e_g is a classification error."""
    import numpy as np

    from replica_mlm.plotting import beats_no_learning, latex_number

    first = min(curves, key=lambda c: c.lam)
    lam = rf"$\lambda = {latex_number(first.lam)}$"
    what = task_title(task, **where)  # and the loss and channel, where they are not the default
    pair = (getattr(first, "loss", "square"), getattr(first, "channel", "gaussian"))
    what += "" if pair == ("square", "gaussian") else f", {pair[0]} loss, {pair[1]} channel"
    if getattr(first, "channel", "gaussian") != "gaussian":
        below = np.asarray(first.eg) < 0.5
        above = np.nonzero(~below)[0]
        if not above.size:
            note = rf"At {lam}, $e_g < 1/2$ (chance) at every $\alpha$ of the grid"
        elif above[-1] + 1 < below.size:
            note = rf"At {lam}, $e_g < 1/2$ (chance) for $\alpha > {first.alpha[above[-1]]:.3g}$"
        else:
            note = rf"At {lam}, $e_g$ does not get below 1/2 (chance) up to $\alpha = {first.alpha[-1]:g}$"
        return f"{note}\n{what}"
    beat = beats_no_learning(first)
    if beat == beat:  # not nan
        note = rf"At {lam}, learning beats no learning ($e_g < C_{{ii}}$) only for $\alpha > {beat:.3g}$"
    else:
        note = (rf"At {lam}, learning never beats no learning ($e_g < C_{{ii}}$) up to "
                rf"$\alpha = {first.alpha[-1]:g}$")
    return f"{note}\n{what}"
