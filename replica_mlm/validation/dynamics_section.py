"""Validation section ``dynamics``: one-pass SGD and gradient flow (docs/dynamics.md).

Checks (each with its number and threshold):

* ``dynamics.exact_vs_simulation``: the exact finite-p recursion of the square loss against
  simulated one-pass SGD on a Gaussian Potts site (p = 50; 1500 runs quick, 4000 full; 20 times,
  lr = 1): the largest |z| below 3;
* ``dynamics.one_over_p``: the exact recursion minus its p -> infinity limit on the same spectrum
  falls as 1/p: p |difference| at p = 100, 400 (and 1600 in full mode) equal within 15 %;
* ``dynamics.hebb``: online Hebbian learning of the isotropic noiseless perceptron (the linear loss
  -y z through the ODEs of any convex loss) against arccos(sqrt(2 alpha / (2 alpha + pi))) / pi,
  relative error below 1e-6;
* ``dynamics.flow_end_point``: gradient flow of the square loss at t = 1e4 against ``rm.solve`` at
  alpha in {0.5, 2, 4} and lam in {0, 0.1}: relative difference below 1e-8;
* ``dynamics.flow_vs_simulation``: gradient flow against its exact integration on fixed training
  sets (p = 300, alpha = 2, lam = 0; 24 sets quick, 60 full; 6 times): the largest |z| below 3;
* ``dynamics.q_colour_vs_simulation``: the ODEs of one-pass SGD with the softmax cross-entropy on a
  q = 3 site (K = 2, a general site: covariance ``4 Sigma (x) I_K``, teacher ``2 w* (x) T``, a bias)
  against SGD simulated on its Gaussian inputs (quick: p = 60, 200 runs, lr = 0.5, lam = 0.1,
  alpha in {0.5, 2}, measured 1.37; full: p = 200, 400 runs, lr = 0.5, lam = 0, 10 times to
  alpha = 10, the table of docs/dynamics.md, measured 1.91, 37 CPU-s): the largest |z| of eg, test
  loss, tr M, tr Q and |W - W*|^2 below 3;
* ``dynamics.sgd_vs_ridge``: one-pass SGD at its best learning rate (envelope of 12 rates below
  ``lr_max``) against ERM at its best ridge on the same number of samples, on a p = 100 site at
  alpha in (0, 8]: the largest relative excess below 1 % (measured 0.13 %).

The figure ``dynamics_sgd_ridge`` draws the last comparison with the Bayes-optimal error and
gradient flow at two alpha.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from replica_mlm._base.io import write_json
from replica_mlm.validation.report import Check, Section


def _site(p: int, seed: int):
    import replica_mlm as rm

    return rm.GaussianPotts.random(L=p + 1, shift=3.0, seed=seed).masked_site(0)


def _sgd(quick: bool, rng: int) -> dict:
    import replica_mlm as rm

    sim = rm.simulate_sgd(_site(50, 2), alpha=np.linspace(0.2, 4.0, 20), lr=1.0,
                          seeds=1500 if quick else 4000, rng=rng + 3)
    sizes = [100, 400] if quick else [100, 400, 1600]
    grid = np.linspace(0.0, 3.0, 7)
    scaled = []
    for p in sizes:
        site = _site(p, 1)
        exact = rm.online_sgd(site, alpha=grid, lr=0.5, exact=True).eg
        scaled.append(float(p * np.max(np.abs(exact - rm.online_sgd(site, alpha=grid, lr=0.5).eg))))
    return dict(alpha=sim.alpha.tolist(), theory=sim.eg_theory.tolist(), mean=sim.eg_mean.tolist(),
                stderr=sim.eg_stderr.tolist(), z=sim.z.tolist(), runs=sim.seeds, p_sizes=sizes,
                p_times_difference=scaled)


def _q_colour(quick: bool, rng: int) -> dict:
    """The q = 3 site's ODEs against simulated SGD (the site of docs/dynamics.md, "Agreement")."""
    import replica_mlm as rm

    p, K = (60, 2) if quick else (200, 2)
    base = _site(p, 0)
    gen = np.random.default_rng(100)
    mix = np.eye(K) + 0.3 * gen.standard_normal((K, K))
    site = rm.PottsSite(covariance=4.0 * np.kron(base.covariance, np.eye(K)),
                        teacher=2.0 * np.kron(np.asarray(base.teacher)[:, None], mix), p=p,
                        bias=0.3 * gen.standard_normal(K))
    if quick:  # each run is scored at each time by a Sobol' rule (6 ms): 200 runs at 2 times
        alpha, lam, seeds, seed = [0.5, 2.0], 0.1, 200, rng + 3
    else:
        alpha, lam, seeds, seed = [0.5, 1, 2, 3, 4, 5, 6, 7, 8, 10], 0.0, 400, rng + 1
    sim = rm.simulate_sgd(site, alpha=alpha, lr=0.5, lam=lam, seeds=seeds, rng=seed)
    z = {name: ((getattr(sim, f"{name}_mean") - getattr(sim.theory, name))
                / getattr(sim, f"{name}_stderr")).tolist()
         for name in ("eg", "test_loss", "m", "q", "estimation_error")}
    return dict(p=p, q=K + 1, lr=0.5, lam=lam, runs=sim.seeds, alpha=list(alpha),
                theory=sim.eg_theory.tolist(), mean=sim.eg_mean.tolist(), stderr=sim.eg_stderr.tolist(), z=z,
                zmax=float(max(np.max(np.abs(v)) for v in z.values())))


def _hebb() -> dict:
    import sympy as sp

    import replica_mlm as rm

    y, z = sp.symbols("y z", real=True)
    hebb = rm.losses.Loss.from_sympy(-y * z, y, z, name="hebb")
    spec = rm.Spectrum(omega=np.ones(1), bulk=np.ones(1), teacher=np.ones(1), noise=0.0)
    grid = np.array([0.5, 1.0, 2.0, 5.0, 10.0])
    dyn = rm.online_sgd(spec, alpha=grid, lr=1.0, loss=hebb, channel="sign")
    expect = np.arccos(np.sqrt(2 * grid / (2 * grid + np.pi))) / np.pi
    return dict(alpha=grid.tolist(), odes=dyn.eg.tolist(), closed_form=expect.tolist(),
                rel_error=float(np.max(np.abs(dyn.eg / expect - 1))))


def _flow(quick: bool, rng: int) -> dict:
    import replica_mlm as rm

    site = _site(300, 1)
    ends = []
    for alpha in (0.5, 2.0, 4.0):
        for lam in (0.0, 0.1):
            flow = rm.gradient_flow(site, alpha=alpha, time=[1e4], lam=lam)
            ends.append(float(abs(flow.eg[0] / flow.end.eg - 1)))
    sim = rm.simulate_gradient_flow(site, alpha=2.0, time=np.logspace(-1, 3, 6), seeds=24 if quick else 60,
                                    rng=rng)
    return dict(end_rel_difference=ends, time=sim.time.tolist(), theory=sim.eg_theory.tolist(),
                mean=sim.eg_mean.tolist(), stderr=sim.eg_stderr.tolist(), z=sim.z.tolist())


def _versus_ridge() -> dict:
    import replica_mlm as rm

    site = _site(100, 0)
    alpha = np.linspace(0.0, 8.0, 41)
    edge = rm.online_sgd(site, alpha=[0.0], lr=0.1).lr_max
    rates = np.geomspace(1e-2, 0.9 * edge, 12)
    best = np.array([rm.online_sgd(site, alpha=alpha, lr=lr).eg for lr in rates]).min(axis=0)
    ridge = rm.optimal_lambda(site, alpha=alpha[1:])
    bayes = rm.bayes_optimal_curve(site, alpha=alpha[1:])
    return dict(alpha=alpha.tolist(), sgd_best=best.tolist(), ridge=ridge.eg_opt.tolist(),
                bayes=bayes.eg.tolist(), lr_max=edge, c_ii=site.c_ii,
                excess=float(np.max(best[1:] / ridge.eg_opt - 1)))


def _figure(vs: dict, out: Path) -> list[str]:
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    import replica_mlm as rm
    from replica_mlm.plotting import STYLE, save

    site = _site(100, 0)
    flows = [rm.gradient_flow(site, alpha=a, time=np.logspace(-2, 3, 41)) for a in (0.5, 4.0)]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
        ax = axes[0]
        ax.axhline(vs["c_ii"], color="0.6", lw=0.8, label=r"no learning, $C_{ii}$")
        ax.plot(vs["alpha"], vs["sgd_best"], "k-", label=r"one-pass SGD, best $\eta$")
        ax.plot(vs["alpha"][1:], vs["ridge"], "k--", label=r"ERM, best $\lambda$")
        ax.plot(vs["alpha"][1:], vs["bayes"], color="#009E73", lw=3, alpha=0.5, label="Bayes-optimal")
        ax.set(xlabel=r"$\alpha$ (samples per dimension)", ylabel=r"$e_g$")
        ax.legend(fontsize=7.5)
        ax = axes[1]
        for flow, ls in zip(flows, ["-", "--"], strict=True):
            ax.plot(flow.time, flow.eg, "k", ls=ls, label=rf"$\alpha = {flow.alpha:g}$")
            ax.axhline(flow.end.eg, color="k", ls=":", lw=0.8)
            if np.isfinite(flow.best.time):
                ax.plot([flow.best.time], [flow.best.eg], "o", color="k", ms=4)
        ax.set(xscale="log", xlabel="flow time $t$", ylabel=r"$e_g$ (gradient flow)")
        # the end points and the optima of both flows: one entry each, as on replica-mlm dynamics
        handles, labels = ax.get_legend_handles_labels()
        handles.append(Line2D([], [], color="k", ls=":", lw=0.8))
        labels.append(r"$t \to \infty$: ERM end point")
        if any(np.isfinite(f.best.time) for f in flows):
            handles.append(Line2D([], [], color="k", ls="none", marker="o", ms=4))
            labels.append("early-stopping optimum")
        ax.legend(handles, labels, fontsize=7.5)
        save(fig, out / "dynamics_sgd_ridge")
        plt.close(fig)
    return ["dynamics_sgd_ridge.png", "dynamics_sgd_ridge.pdf"]


def run(out: Path, *, quick: bool = True, rng: int = 0) -> Section:
    """Run the section into ``out`` (figure ``dynamics_sgd_ridge.png/.pdf``, numbers in
    ``dynamics.json``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sgd, hebb, flow, vs = _sgd(quick, rng), _hebb(), _flow(quick, rng), _versus_ridge()
    colours = _q_colour(quick, rng)
    zmax, fzmax = float(np.max(np.abs(sgd["z"]))), float(np.max(np.abs(flow["z"])))
    scaled = sgd["p_times_difference"]
    spread = float(max(scaled) / min(scaled) - 1)
    checks = [
        Check("dynamics.exact_vs_simulation", zmax < 3.0, zmax, 3.0,
              f"largest |z| of the exact recursion against {sgd['runs']} simulated SGD runs at p = 50, "
              "20 times"),
        Check("dynamics.one_over_p", spread < 0.15, spread, 0.15,
              f"p |exact - limit| at p = {sgd['p_sizes']}: {[round(s, 5) for s in scaled]}, equal "
              "within 15 %"),
        Check("dynamics.hebb", hebb["rel_error"] < 1e-6, hebb["rel_error"], 1e-6,
              "online Hebb rule on the isotropic perceptron vs arccos(sqrt(2a / (2a + pi))) / pi"),
        Check("dynamics.flow_end_point", max(flow["end_rel_difference"]) < 1e-8,
              max(flow["end_rel_difference"]), 1e-8,
              "gradient flow at t = 1e4 vs rm.solve, alpha in {0.5, 2, 4}, lam in {0, 0.1} (relative)"),
        Check("dynamics.flow_vs_simulation", fzmax < 3.0, fzmax, 3.0,
              "largest |z| of gradient flow vs its exact integration on training sets, p = 300, alpha = 2"),
        Check("dynamics.q_colour_vs_simulation", colours["zmax"] < 3.0, colours["zmax"], 3.0,
              f"largest |z| of the q = 3 site's ODEs (eg, test loss, M, Q, |W - W*|^2) against "
              f"{colours['runs']} simulated SGD runs at p = {colours['p']}, {len(colours['alpha'])} times"),
        Check("dynamics.sgd_vs_ridge", vs["excess"] < 0.01, vs["excess"], 0.01,
              "largest relative excess of one-pass SGD at its best lr over ERM at its best lam, alpha <= 8"),
    ]
    figures = _figure(vs, out)
    data = dict(sgd=sgd, hebb=hebb, flow=flow, q_colour=colours, sgd_vs_ridge=vs)
    write_json(out / "dynamics.json", data, indent=2)
    return Section(name="dynamics", checks=checks, figures=figures, data=data,
                   parameters=dict(quick=quick, rng=rng))
