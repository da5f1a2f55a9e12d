"""``replica-mlm phase``: phase diagrams of eg over (alpha, lam) or, in the limit, (alpha, shift)."""

from __future__ import annotations

import time
from pathlib import Path

import click
import numpy as np

from replica_mlm.cli._common import (
    CONVENTIONS,
    GRID_POINTS,
    FiniteFloat,
    alpha_grid,
    alpha_range_options,
    check_erm,
    claim_out,
    erm_options,
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
@alpha_range_options
@click.option("--axis", type=click.Choice(["lam", "shift"]), default="lam", show_default=True,
              help="What the rows vary: lam (log axis) or the shift s (in the limit, at one --lam).")
@click.option("--lam-min", type=FiniteFloat(min=0, min_open=True), default=1e-4, show_default=True,
              help="Smallest lam > 0 of the rows (--axis lam).")
@click.option("--lam-max", type=FiniteFloat(min=0, min_open=True), default=10.0, show_default=True,
              help="Largest lam of the rows (--axis lam).")
@click.option("--lam-points", type=GRID_POINTS, default=100, show_default=True,
              help="Number of lam rows, log-spaced from --lam-min to --lam-max (--axis lam).")
@click.option("--lam", "lam", type=FiniteFloat(min=0), default=1e-2, show_default=True,
              help="Ridge strength of --axis shift diagrams.")
@click.option("--shift-min", type=FiniteFloat(min=2, min_open=True), default=2.05, show_default=True,
              help="Smallest shift s > 2 of the rows (--axis shift).")
@click.option("--shift-max", type=FiniteFloat(min=2, min_open=True), default=6.0, show_default=True,
              help="Largest shift s of the rows (--axis shift).")
@click.option("--shift-points", type=GRID_POINTS, default=60, show_default=True,
              help="Number of shift rows, evenly spaced from --shift-min to --shift-max (--axis shift).")
@click.option("--optimal/--no-optimal", default=True, show_default=True,
              help="Compute the optimal-lam line (lam diagrams).")
@click.option("--progress/--no-progress", "progress", default=None,
              help="Progress bar on stderr [default: when stderr is a terminal].")
@erm_options
@out_option("phase")
def phase(*, L, shift, seed, site, limit, alpha_min, alpha_max, points, axis, lam_min, lam_max, lam_points,
          lam, shift_min, shift_max, shift_points, optimal, progress, loss, channel, out):
    """Phase diagram of the replica eg: colour map, contours, the region where more data hurts
    (d eg / d alpha > 0), the optimal-lam line, the peak of eg in alpha and the interpolation
    threshold alpha = 1 (square loss).

    Writes phase.csv (one row per grid point), phase_lines.csv (optimal lam and peak lines),
    phase.json (metadata, written last) and phase.png / phase.pdf into --out, all or none. The
    last lines say whether every point converged (also in phase.json, and in the figure's title
    when one did not).
    """
    import sys

    import matplotlib.pyplot as plt

    from replica_mlm._base.io import write_csv
    from replica_mlm.cli._convergence import of_phase
    from replica_mlm.plotting import plot_phase_diagram
    from replica_mlm.theory.studies.phase import phase_diagram, shift_phase_diagram

    started = time.time()
    check_erm(loss, channel, [lam] if axis == "shift" else [])
    if axis == "shift" and (loss, channel) != ("square", "gaussian"):
        raise click.UsageError("--axis shift supports --loss square --channel gaussian only")
    show = sys.stderr.isatty() if progress is None else progress
    alphas = alpha_grid(alpha_min, alpha_max, points)
    if axis == "shift":
        if not shift_min < shift_max:
            raise click.UsageError(f"need --shift-min < --shift-max, got {shift_min}, {shift_max}")
        claim_out()  # before the computation: a folder with another run's files is refused now
        pd = shift_phase_diagram(alpha=alphas, shift=np.linspace(shift_min, shift_max, shift_points),
                                 lam=lam, progress=show)
        title = rf"Gaussian Potts, $L \to \infty$, $\lambda = {lam:g}$"
    else:
        if not lam_min < lam_max:
            raise click.UsageError(f"need --lam-min < --lam-max, got {lam_min}, {lam_max}")
        task = make_task(L=L, shift=shift, seed=seed, site=site, limit=limit)
        title = task_title(task, L=L, shift=shift, site=site, limit=limit)
        title += "" if (loss, channel) == ("square", "gaussian") else f"\n{loss} loss, {channel} channel"
        claim_out()
        click.echo(f"solving {lam_points} lam x {points} alpha"
                   + (", then the optimal lam at each alpha" if optimal else "") + " ...", err=True)
        pd = phase_diagram(task, alpha=alphas, lam=np.geomspace(lam_min, lam_max, lam_points),
                           optimal=optimal, progress=show, loss=loss, channel=channel)

    convergence = of_phase(pd)
    title = "\n".join(t for t in (title, convergence.note()) if t)
    grid_rows = [[y, a, pd.eg[i, j], pd.train_loss[i, j], pd.deg_dalpha[i, j]]
                 for i, y in enumerate(pd.y) for j, a in enumerate(pd.alpha)]
    lines = [] if pd.optimal_lam is None else [["optimal_lam", a, lm] for a, lm in
                                               zip(pd.alpha, pd.optimal_lam, strict=True)]
    lines += [["peak_alpha", a, y] for y, a in zip(pd.y, pd.peak_alpha, strict=True) if np.isfinite(a)]
    files = [out / n for n in ("phase.csv", "phase_lines.csv", "phase.png", "phase.pdf")]
    params = dict(axis=axis, limit=limit or axis == "shift", L=None if limit else L, shift=shift, seed=seed,
                  site=site, alpha_min=alpha_min, alpha_max=alpha_max, points=points, loss=loss,
                  channel=channel)
    if axis == "lam":
        params.update(lam_min=lam_min, lam_max=lam_max, lam_points=lam_points, optimal=optimal)
    else:
        params.update(lam=lam, shift_min=shift_min, shift_max=shift_max, shift_points=shift_points)
    with output_set(out, "phase"):  # all five files or none; phase.json last
        write_csv(out / "phase.csv", grid_rows, columns=[pd.axis, "alpha", "eg", "train_loss", "deg_dalpha"])
        write_csv(out / "phase_lines.csv", lines, columns=["line", "alpha", pd.axis])
        fig = plot_phase_diagram(pd, path=out / "phase", title=title)
        plt.close(fig)
        write_metadata(out, "phase", params, started=started, files=files,
                       rows={"phase.csv": len(grid_rows), "phase_lines.csv": len(lines)},
                       extra={"convergence": convergence.as_dict()})
    convergence.echo()
    click.echo(f"wrote {', '.join(str(Path(f)) for f in files)} and {out / 'phase.json'}")
