"""``replica-mlm dynamics``: the test error along one-pass SGD (and gradient flow) beside ERM."""

from __future__ import annotations

import functools
import time

import click

from replica_mlm.cli._common import (
    CONVENTIONS,
    LOSS,
    FiniteFloat,
    RegistryName,
    check_erm,
    erm_options,
    limit_option,
    make_task,
    out_option,
    output_set,
    task_options,
    task_title,
    write_metadata,
)

#: the loss of a q-colour site (softmax cross-entropy), a value of the command's --loss beside the
#: registry's losses
CROSS_ENTROPY = "cross_entropy"


class _DynamicsLoss(RegistryName):
    """``--loss`` of ``dynamics``: a name of ``rm.losses``, or ``cross_entropy`` (with --colours)."""

    def get_metavar(self, param, ctx=None) -> str:
        return super().get_metavar(param, ctx)[:-1] + f"|{CROSS_ENTROPY}]"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == CROSS_ENTROPY:
            return CROSS_ENTROPY
        return super().convert(value, param, ctx)


DYNAMICS_LOSS = _DynamicsLoss(LOSS.registry)


def colours_options(f):
    """``--colours`` and ``--beta``: a site of a random Potts model with Q >= 3 colours."""
    f = click.option("--beta", type=FiniteFloat(min=0, min_open=True), default=1.0, show_default=True,
                     help="Inverse temperature of the Potts model of --colours.")(f)
    f = click.option("--colours", type=click.IntRange(min=3), default=None,
                     help="A q-colour site instead: site --site of rm.PottsModel.random(L, q=Q, seed, "
                          "beta) learnt with the softmax cross-entropy (--loss cross_entropy, the "
                          "default there); --shift is then unused.")(f)
    return f


def _potts_site(*, L: int, colours: int, seed: int, beta: float, site: int, limit: bool):
    """Site ``site`` of a random Potts model with ``colours`` colours, errors as usage errors."""
    from replica_mlm import PottsModel

    if limit:
        raise click.UsageError("--limit is the Gaussian Potts model's L -> infinity; --colours takes an "
                               "instance (--L, --seed, --beta)")
    try:
        return PottsModel.random(L=L, q=colours, seed=seed, beta=beta).masked_site(site, rng=seed)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


@click.command(epilog=CONVENTIONS)
@task_options
@limit_option
@click.option("--alpha-max", type=FiniteFloat(min=0, min_open=True), default=8.0, show_default=True,
              help="Last time alpha = k B / p (samples seen per dimension).")
@click.option("--points", type=click.IntRange(min=2), default=161, show_default=True,
              help="Times from 0 to --alpha-max (evenly spaced).")
@click.option("--lr", "lrs", type=FiniteFloat(min=0, min_open=True), multiple=True, default=(0.5,),
              show_default=True, help="Learning rate(s); repeat for several.")
@click.option("--lam", type=FiniteFloat(min=0), default=0.0, show_default=True,
              help="Weight decay (the ridge's lam).")
@click.option("--batch", type=click.IntRange(min=1), default=1, show_default=True, help="Samples per step.")
@click.option("--exact", is_flag=True, default=False,
              help="The exact expected error at the instance's p (square loss, gaussian channel).")
@click.option("--flow-alpha", "flow_alphas", type=FiniteFloat(min=0, min_open=True), multiple=True,
              help="Also gradient flow on n = alpha p samples (square loss); repeat for several.")
@functools.partial(erm_options, loss_type=DYNAMICS_LOSS)
@colours_options
@out_option("dynamics")
def dynamics(*, L, shift, seed, site, limit, alpha_max, points, lrs, lam, batch, exact, flow_alphas, loss,
             channel, colours, beta, out):
    """Learning dynamics: the test error along one-pass SGD, beside ERM (docs/dynamics.md).

    For each --lr, the expected eg of one-pass SGD at the times alpha = k B / p (p -> infinity, or
    with --exact at the instance's p), and the ERM learning curve at --lam beside it (where the
    theory solves it). With --flow-alpha, eg(t) of gradient flow on a fixed training set, with its
    ERM end point and its early-stopping optimum. With --colours Q, site --site of a random Potts
    model with Q colours (--L, --seed, --beta) learnt with the softmax cross-entropy (docs/dynamics.md,
    section "A q-colour site"). Writes dynamics.csv (and flow.csv), dynamics.png, dynamics.pdf and
    dynamics.json (metadata, last) into --out, all or none.
    """
    import numpy as np

    from replica_mlm._base import io
    from replica_mlm.cli._convergence import of_curves
    from replica_mlm.theory.studies.dynamics import gradient_flow, online_sgd

    started = time.time()
    ctx = click.get_current_context()
    given = {name: ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT
             for name in ("loss", "channel")}
    if colours is not None:  # the planner decides what a q-colour site learns with
        # the two long steps (about 10 s each at the default L = 500) say what they do first
        click.echo(f"sampling the Potts model ({colours} colours, L = {L}) for site {site}'s moments ...")
        task = _potts_site(L=L, colours=colours, seed=seed, beta=beta, site=site, limit=limit)
        click.echo(f"integrating one-pass SGD ({task.K} x {task.K} order parameters per eigenmode) at "
                   f"{points} times ...")
        loss, channel = (loss if given["loss"] else None), (channel if given["channel"] else None)
    else:
        if loss == CROSS_ENTROPY:
            raise click.UsageError("--loss cross_entropy learns a q-colour site: give --colours Q (Q >= 3)")
        check_erm(loss, channel)
        if flow_alphas and not (loss == "square" and channel == "gaussian"):
            raise click.UsageError("--flow-alpha solves the square loss with the gaussian channel only")
        task = make_task(L=L, shift=shift, seed=seed, site=site, limit=limit)
    alphas = np.linspace(0.0, alpha_max, points)
    times = np.logspace(-2, 3, 101)
    try:
        curves = [online_sgd(task, alpha=alphas, lr=lr, lam=lam, batch=batch, loss=loss, channel=channel,
                             exact=exact) for lr in sorted(set(lrs))]
        flows = [gradient_flow(task, alpha=a, time=times, lam=lam) for a in sorted(set(flow_alphas))]
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    erm = _erm_curve(task, alphas, lam, loss, channel)
    convergence = None if erm is None else of_curves([erm])
    files = [out / "dynamics.csv", out / "dynamics.png", out / "dynamics.pdf"]
    rows = {"dynamics.csv": sum(len(c) for c in curves)}
    if flows:
        files.append(out / "flow.csv")
        rows["flow.csv"] = sum(len(f) for f in flows)
    with output_set(out, "dynamics"):
        io.write_csv(out / "dynamics.csv", [r for c in curves for r in c.to_frame().to_dict("records")])
        if flows:
            io.write_csv(out / "flow.csv", [dict(r, best_time=f.best.time, best_eg=f.best.eg, end_eg=f.end.eg)
                                            for f in flows for r in f.to_frame().to_dict("records")])
        if colours is not None:
            title = rf"Potts, $L = {L}$, $q = {colours}$, $\beta = {beta:g}$, site {site}, cross-entropy"
        else:
            title = task_title(task, L=L, shift=shift, site=site, limit=limit)
            title += "" if (loss, channel) == ("square", "gaussian") else f", {loss} loss, {channel} channel"
        if convergence is not None and not convergence.converged:
            title += f"\nERM: {convergence.note()}"
        _figure(curves, erm, flows, out / "dynamics", title)
        params = dict(L=None if limit else L, limit=limit, shift=None if colours else shift, seed=seed,
                      site=site,
                      alpha_max=alpha_max, points=points, lr=sorted(set(lrs)), lam=lam, batch=batch,
                      exact=exact, flow_alpha=sorted(set(flow_alphas)), loss=curves[0].loss,
                      channel=curves[0].channel, colours=colours, beta=beta if colours is not None else None)
        task_facts = ({"rho": task.rho, "noise": task.noise, "c_ii": task.c_ii} if colours is None else
                      {"rho": curves[0].rho, "noise": task.noise, "K": task.K, "p": task.p, "d": task.d})
        write_metadata(out, "dynamics", params,
                       started=started, files=files, rows=rows,
                       extra={**task_facts, "lr_max": [c.lr_max for c in curves],
                              "erm_convergence": None if convergence is None else convergence.as_dict()})
    if convergence is not None:
        convergence.echo(what=f"ERM at lam = {lam:g}")
    click.echo(f"wrote {', '.join(str(f) for f in files)} and {out / 'dynamics.json'}")




def _erm_curve(task, alphas, lam: float, loss: str, channel: str):
    """ERM's learning curve at lam on the same axis, or None where the theory does not solve it."""
    from replica_mlm._base.errors import ConvergenceError
    from replica_mlm.theory.studies.curve import learning_curve

    grid = alphas[alphas > 0]
    try:
        return learning_curve(task, alpha=grid, lam=lam, loss=loss, channel=channel)
    except (ValueError, ConvergenceError):
        return None


def _figure(curves, erm, flows, path, title: str) -> None:
    """eg against alpha for each lr with ERM beside (and eg(t) of each flow), in the package's style."""
    import math

    import matplotlib.pyplot as plt

    from replica_mlm.figures.style import grey, save, style

    with style():
        fig, axes = plt.subplots(1, 2 if flows else 1, figsize=(9.0 if flows else 5.0, 3.6), squeeze=False)
        ax = axes[0, 0]
        for i, c in enumerate(curves):
            ax.plot(c.alpha, c.eg, color=grey(i, len(curves)), label=rf"SGD, $\eta = {c.lr:g}$")
        if erm is not None:
            ax.plot(erm.alpha, erm.eg, "k--", label=rf"ERM, $\lambda = {erm.lam:g}$")
        ax.set(xlabel=r"$\alpha$ (samples per dimension)", ylabel=r"$e_g$")
        ax.legend()
        if flows:
            from matplotlib.lines import Line2D

            ax = axes[0, 1]
            for i, f in enumerate(flows):
                colour = grey(i, len(flows))
                ax.plot(f.time, f.eg, color=colour, label=rf"$\alpha = {f.alpha:g}$")
                ax.axhline(f.end.eg, color=colour, ls=":", label="_end")
                if math.isfinite(f.best.time):
                    ax.plot([f.best.time], [f.best.eg], "o", color=colour, label="_best")
            ax.set(xscale="log", xlabel=r"$t$", ylabel=r"$e_g$ (gradient flow)")
            # the end points and the optima of every flow, in the flow's colour: one entry each
            handles, labels = ax.get_legend_handles_labels()
            handles.append(Line2D([], [], color=grey(0, len(flows)), ls=":"))
            labels.append(r"$t \to \infty$: ERM end point")
            stopped = [i for i, f in enumerate(flows) if math.isfinite(f.best.time)]
            if stopped:
                handles.append(Line2D([], [], color=grey(stopped[0], len(flows)), ls="none", marker="o"))
                labels.append("early-stopping optimum")
            ax.legend(handles, labels, loc="lower right")
        fig.suptitle(title)
        save(fig, path)
        plt.close(fig)
