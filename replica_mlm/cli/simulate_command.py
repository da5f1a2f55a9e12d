"""``replica-mlm simulate``: closed-form ridge simulations against the replica prediction."""

from __future__ import annotations

import time

import click
import numpy as np

from replica_mlm.cli._common import (
    CONVENTIONS,
    FiniteFloat,
    check_erm,
    check_scheduler,
    claim_out,
    erm_options,
    lam_option,
    make_task,
    out_option,
    output_set,
    resume_labels,
    scale_options,
    task_options,
    write_metadata,
)

COLUMNS = ("alpha_target", "alpha", "n", "p", "lam", "seeds", "eg_mean", "eg_stderr", "eg_theory", "z",
           "train_loss_mean", "train_loss_stderr", "train_loss_theory")


@click.command("simulate", epilog=CONVENTIONS)
@task_options
@click.option("--alpha", "alphas", type=FiniteFloat(min=0, min_open=True), multiple=True,
              default=(0.3, 0.6, 0.8, 0.9, 1.1, 1.25, 1.5, 2.0, 3.0), show_default=True,
              help="Sample ratio(s) alpha = n/p; repeat for several. n = round(alpha p). The default "
                   "samples both sides of the interpolation peak at alpha = 1.")
@lam_option((0.0, 1e-3, 1e-1, 1.0))
@click.option("--seeds", type=click.IntRange(min=2), default=20, show_default=True,
              help="Independent training sets per alpha (for the mean and its standard error).")
@click.option("--sample-seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Root seed of the training sets: alpha number k uses SeedSequence(sample_seed, "
                   "spawn_key=(k,)), so results do not depend on --workers.")
@erm_options
@scale_options
@out_option("simulate")
def simulate(*, L, shift, seed, site, alphas, lams, seeds, sample_seed, loss, channel, workers, threads,
             scheduler, resume, progress, out):
    """Ridge / Moore-Penrose simulations of one masked site, with the replica prediction.

    For every alpha, trains ridge for every lam on --seeds independent training sets of
    n = round(alpha p) samples (one Gram matrix per set serves all lam), and solves the replica saddle
    point on the same instance at the realised n/p. z = (mean - replica) / standard error; the
    replica value is the p -> infinity limit, so expect an O(1/p) bias, larger near alpha = 1 at
    small lam. --loss/--channel train any convex loss on labels from any channel (exact convex
    solvers, see replica_mlm.learners.erm) against the general engine; eg is then the channel's natural
    error. Writes simulate.csv, simulate.json (metadata, written last), simulate.png and simulate.pdf
    (all four or none), and one file per finished alpha in OUT/simulate_points/ (used by --resume,
    with fingerprint.json: a resume with other options or seeds is refused).
    """
    import matplotlib.pyplot as plt

    from replica_mlm import learning_curve
    from replica_mlm._base.io import write_csv
    from replica_mlm._base.stats import zscore
    from replica_mlm._base.sweep import ResumeRefused, run_sweep
    from replica_mlm.cli._convergence import of_curves
    from replica_mlm.plotting import plot_learning_curves
    from replica_mlm.validation.mlm_section import simulate_point

    started = time.time()
    check_scheduler(scheduler)
    check_erm(loss, channel, lams)
    task = make_task(L=L, shift=shift, seed=seed, site=site)
    lam_list = sorted(set(lams))
    alpha_list = list(dict.fromkeys(float(a) for a in alphas))
    points = [{"L": L, "instance": 0, "instance_seed": seed, "shift": shift, "site": site, "alpha": a,
               "lams": lam_list, "seeds": seeds} for a in alpha_list]
    if (loss, channel) != ("square", "gaussian"):  # only when not the default: old --resume folders match
        for pt in points:
            pt.update(loss=loss, channel=channel)
    # the replica curves first: this compiles the equations once here, before the worker processes
    # are forked, so they inherit them instead of each deriving them again with sympy
    grid = np.linspace(0.02, 1.1 * max(max(alpha_list), 1.2), 300)
    curves = [learning_curve(task, alpha=grid, lam=lam, loss=loss, channel=channel) for lam in lam_list]
    convergence = of_curves(curves)
    resume_labels(seed="--sample-seed", function="the point function", version="the package version",
                  L="--L", instance_seed="--seed", shift="--shift", site="--site", alpha="--alpha",
                  lams="--lam", seeds="--seeds", loss="--loss",
                  channel="--channel")
    claim_out(subfolders=("simulate_points",))
    try:
        sweep = run_sweep(simulate_point, points, seed=sample_seed, workers=workers, scheduler=scheduler,
                          out=out / "simulate_points", resume=resume, progress=progress, desc="simulate",
                          threads=threads)
    except ResumeRefused:
        raise  # one line, exit status 2: replica_mlm.cli's error handler
    except ValueError as exc:  # e.g. a malformed --scheduler address
        raise click.UsageError(str(exc)) from None

    rows = []
    for pt, res in zip(sweep.points, sweep.results, strict=True):
        for j, lam in enumerate(lam_list):
            rows.append({"alpha_target": pt["alpha"], "alpha": res["alpha"], "n": res["n"], "p": res["p"],
                         "lam": lam, "seeds": seeds, "eg_mean": res["eg_mean"][j],
                         "eg_stderr": res["eg_stderr"][j], "eg_theory": res["eg_theory"][j],
                         "z": zscore(res["eg_mean"][j], res["eg_theory"][j], res["eg_stderr"][j]),
                         "train_loss_mean": res["train_loss_mean"][j],
                         "train_loss_stderr": res["train_loss_stderr"][j],
                         "train_loss_theory": res["train_loss_theory"][j]})
    csv_path = out / "simulate.csv"
    files = [csv_path, out / "simulate.png", out / "simulate.pdf"]
    zs = np.array([r["z"] for r in rows])
    # the fits' certified distance to their exact minimisers (points of older --resume folders lack it)
    kkt = [res["kkt_residual_max"] for res in sweep.results if "kkt_residual_max" in res]
    kkt_max = max(kkt) if len(kkt) == len(sweep.results) else None
    with output_set(out, "simulate"):  # all four files or none; simulate.json last
        write_csv(csv_path, rows, columns=COLUMNS)
        fig = plot_learning_curves(
            curves, path=out / "simulate",
            simulations=[(r["alpha"], r["lam"], r["eg_mean"], r["eg_stderr"]) for r in rows],
            title="\n".join(t for t in (rf"$L = {L}$, $s = {shift:g}$, site {site}: replica (lines), "
                                         rf"{seeds} training sets (markers)", convergence.note()) if t))
        plt.close(fig)
        write_metadata(out, "simulate",
                       dict(L=L, shift=shift, seed=seed, site=site, alpha=alpha_list, lam=lam_list,
                            seeds=seeds, sample_seed=sample_seed, loss=loss, channel=channel, workers=workers,
                            threads=threads, scheduler=scheduler, resume=resume),
                       started=started, files=files, rows={csv_path.name: len(rows)},
                       extra={"rho": task.rho, "noise": task.noise, "c_ii": task.c_ii,
                              "convergence": convergence.as_dict(), "fits_kkt_residual_max": kkt_max,
                              "seeds_rule": "alpha number k: SeedSequence(sample_seed, spawn_key=(k,)); "
                                            "training set j: its j-th spawned child",
                              "sweep": {"backend": sweep.backend, "computed": sweep.computed,
                                        "resumed": sweep.resumed, "seconds": sweep.elapsed},
                              "max_abs_z": float(np.max(np.abs(zs)))})
    fits = ("" if kkt_max is None else "; fits exact (closed form)" if kkt_max == 0
            else f"; fits within {kkt_max:.2g} of their minimisers (certified)")
    click.echo(convergence.line("replica lines") + fits, err=not convergence.converged)
    click.echo(f"{len(rows)} (alpha, lam) points, max |z| = {np.max(np.abs(zs)):.2f}; wrote "
               f"{', '.join(str(f) for f in files)} and {out / 'simulate.json'}")
