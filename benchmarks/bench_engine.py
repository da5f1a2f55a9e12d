"""Cost per point of the general replica engine: CPU seconds, evaluations per point, residuals.

A fixed workload in one process:

* ``fig3``: the quick ``discrete`` section's figure-3-right theory: ``PottsModel.random_ising(L=8,
  beta=0.4, seed=1)``, the exact spin covariance, the 8 ``ising_site``s and the section's alpha grid
  at ``lam = 1e-3``, logistic loss (logit channel), one warm-started learning curve per site;
* ``cold``: ``rm.solve`` from a cold start at 8 alphas of site 0 (logistic, logit);
* ``peak``: the section's Brent search for site 0's test-loss peak (``validation.discrete_section._peak``)
  at ``lam = 1e-2, 1e-3, 1e-4, 1e-5``;
* ``erm``: an erm-like curve, hinge loss with the sign channel on the masked site of
  ``GaussianPotts.random(L=201, shift=3, seed=0)``, 20 alphas in [0.2, 4.5] at ``lam = 1e-3``.

Each part runs with the package's code ("new") and with the engine as it was before the cost
reductions ("old": the previous code, restored by monkeypatching inside this script only), after
one untimed warm-up that compiles the sympy expressions. Printed per part: CPU seconds, channel-side
evaluations per point (every call of the hat integrals, counted by wrapping
``engine.Problem.hats``), the largest raw-equation residual, and the largest relative difference of
(V, q, m, test_loss) between old and new.

    OMP_NUM_THREADS=1 python benchmarks/bench_engine.py [--repeat 1] [--parts fig3,cold,peak,erm]
"""

from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np

import replica_mlm as rm
from replica_mlm.theory.sides import channels, energetic, losses
from replica_mlm.theory.solvers import engine
from replica_mlm.theory.studies import curve
from replica_mlm.validation import discrete_section as discrete

LAM = 1e-3
PEAK_LAMS = (1e-2, 1e-3, 1e-4, 1e-5)


class Counter:
    """Counts calls of ``energetic.hats`` (the channel-side evaluations) while active."""

    def __init__(self) -> None:
        self.calls = 0

    @contextlib.contextmanager
    def active(self):
        original = energetic.hats

        def hats(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        energetic.hats = hats
        try:
            yield self
        finally:
            energetic.hats = original


def _old_partition(self, yv, muv, vv, s2):
    """``Channel.partition`` before: Z and dZ (or P and dP) lambdified and evaluated one by one."""
    from replica_mlm.theory.symbolic import potentials as P
    from replica_mlm.theory.symbolic.expressions import lambdify, mu, nu, v, y

    fns = _OLD_FNS.get(self.name)
    if fns is None:
        if self.z_closed is not None:
            fns = [lambdify((y, mu, v, P.noise), e) for e in (self.z_closed, self.dz_closed)]
        else:
            fns = [lambdify((y, nu, P.noise), e) for e in (self.p_out, self.p_out.diff(nu))]
        _OLD_FNS[self.name] = fns
    muv = np.asarray(muv, dtype=float)
    if self.z_closed is not None:
        return (np.broadcast_to(fns[0](yv, muv, vv, s2), muv.shape),
                np.broadcast_to(fns[1](yv, muv, vv, s2), muv.shape))
    nodes, weights = channels.hermite(channels.NU_NODES)
    nus = muv[..., None] + np.sqrt(max(vv, 0.0)) * nodes
    return (np.broadcast_to(fns[0](yv, nus, s2), nus.shape) @ weights,
            np.broadcast_to(fns[1](yv, nus, s2), nus.shape) @ weights)


_OLD_FNS: dict = {}


def _old_d12(self, yv, zv):
    """The proximal Newton's ``loss'`` and ``loss''`` before: two lambdified functions."""
    return self.d1(yv, zv), self.d2(yv, zv)


def _old_hats(self, V, q, m):
    """``engine.Problem.hats`` before: every call integrates (no memory of repeated points)."""
    self.evaluations += 1
    out = energetic.hats(self.loss, self.channel, alpha=self.alpha, V=V, q=q, m=m, rho=self.rho,
                         noise=self.noise, order=self.order)
    if not self.signal:
        out["m_hat"] = 0.0
    return out


def _old_start(points, alpha):
    """``learning_curve``'s warm start before: the previous point as it is."""
    return points[-1] if points else None


def _old_peak(task, alpha_c, lam):
    """``validation.discrete_section._peak`` before: every Brent evaluation from a cold start."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(
        lambda la: -rm.solve(task, alpha=float(np.exp(la)), lam=lam, loss="logistic").test_loss,
        bounds=(np.log(0.5 * alpha_c), np.log(1.5 * alpha_c)), method="bounded",
        options=dict(xatol=1e-3))
    return float(np.exp(res.x))


@contextlib.contextmanager
def old_engine():
    """The engine as it was before the cost reductions, restored by monkeypatching."""
    saved = [(channels.Channel, "partition", _old_partition), (losses.Loss, "_d12", _old_d12),
             (engine.Problem, "hats", _old_hats), (engine, "XTOL", 1e-15),
             (curve, "_extrapolated", _old_start), (discrete, "_peak", _old_peak)]
    originals = [(obj, name, getattr(obj, name)) for obj, name, _ in saved]
    for obj, name, value in saved:
        setattr(obj, name, value)
    try:
        yield
    finally:
        for obj, name, value in originals:
            setattr(obj, name, value)


def fig3_sites():
    from replica_mlm.tasks.ising_site import ising_site, spin_covariance

    model = rm.PottsModel.random_ising(L=8, beta=0.4, seed=1)
    cov = spin_covariance(model)  # exact at L = 8
    p = model.L - 1
    sites = [ising_site(model, i, cov) for i in range(model.L)]
    alpha_c = [rm.separability_threshold(t) for t in sites]
    # the quick discrete section's grid (validation/discrete_section.py::_fig3_right, fig_extra = 12)
    ms = np.unique(np.round(np.geomspace(0.5, 6.0, 8) * p).astype(int))
    near = np.linspace(0.85 * min(alpha_c), 1.15 * max(alpha_c), 6)
    grid = np.unique(np.concatenate([ms / p, np.geomspace(ms[0] / p, ms[-1] / p, 12), near]))
    return sites, alpha_c, grid


def part_fig3(sites, alpha_c, grid):
    pts = []
    for t in sites:
        c = rm.learning_curve(t, alpha=grid, lam=LAM, loss="logistic")
        pts += [(v, q, m, tl, r) for v, q, m, tl, r in zip(c.V, c.q, c.m, c.test_loss, c.residual,
                                                              strict=True)]
    return pts


def part_cold(sites, alpha_c, grid):
    out = []
    for a in np.linspace(0.3, 5.0, 8):
        s = rm.solve(sites[0], alpha=float(a), lam=LAM, loss="logistic")
        out.append((s.V, s.q, s.m, s.test_loss, s.residual))
    return out


def part_peak(sites, alpha_c, grid):
    # (alpha of the peak, three placeholders, no residual: the points are Brent's business)
    return [(discrete._peak(sites[0], alpha_c[0], lm), 1.0, 0.0, 0.0, np.nan) for lm in PEAK_LAMS]


_ERM_SITE = []


def part_erm(sites, alpha_c, grid):
    if not _ERM_SITE:
        _ERM_SITE.append(rm.GaussianPotts.random(L=201, shift=3.0, seed=0).masked_site(0))
    c = rm.learning_curve(_ERM_SITE[0], alpha=np.linspace(0.2, 4.5, 20), lam=LAM, loss="hinge",
                          channel="sign")
    return list(zip(c.V, c.q, c.m, c.test_loss, c.residual, strict=True))


PARTS = {"fig3": part_fig3, "cold": part_cold, "peak": part_peak, "erm": part_erm}


def run(part, args, repeat):
    """(best CPU seconds, evaluations per point, points)."""
    best, calls, pts = np.inf, 0, None
    for _ in range(repeat):
        counter = Counter()
        c0 = time.process_time()
        with counter.active():
            pts = part(*args)
        best = min(best, time.process_time() - c0)
        calls = counter.calls
    return best, calls, pts


def _largest(values) -> str:
    return "-" if np.all(np.isnan(values)) else f"{np.nanmax(values):.2e}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="repeats per part and version (minimum CPU)")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {list(PARTS)}")
    args = ap.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    sites, alpha_c, grid = fig3_sites()
    data = (sites, alpha_c, grid)
    part_erm(*data), part_cold(*data)  # warm-up: sympy derivations and lambdify of both pairs
    print(f"fig3: {len(sites)} sites x {len(grid)} alphas, lam = {LAM}; alpha_c = "
          f"{np.round(alpha_c, 4).tolist()}")
    print(f"{'part':6s} {'version':7s} {'CPU s':>8s} {'points':>7s} {'evals/pt':>9s} {'max residual':>13s}")
    totals = {"old": 0.0, "new": 0.0}
    for name in parts:
        results, cpus = {}, {}
        for version in ("old", "new"):
            ctx = old_engine() if version == "old" else contextlib.nullcontext()
            with ctx:
                cpu, calls, pts = run(PARTS[name], data, args.repeat)
            arr = np.array(pts, dtype=float)
            results[version], cpus[version] = arr, cpu
            totals[version] += cpu
            print(f"{name:6s} {version:7s} {cpu:8.2f} {len(arr):7d} {calls / len(arr):9.2f} "
                  f"{_largest(arr[:, 4]):>13s}", flush=True)
        old, new = results["old"][:, :4], results["new"][:, :4]
        scale = np.maximum(np.abs(old), np.abs(new))
        rel = np.where(scale > 0, np.abs(old - new) / np.where(scale > 0, scale, 1.0), 0.0)
        what = "alpha of the peak" if name == "peak" else "V, q, m, test_loss"
        print(f"{name:6s} speed-up {cpus['old'] / cpus['new']:.2f}x; largest relative difference old vs "
              f"new in {what}: {np.max(rel):.2e}")
    print(f"total CPU: old {totals['old']:.2f} s, new {totals['new']:.2f} s, speed-up "
          f"{totals['old'] / totals['new']:.2f}x")


if __name__ == "__main__":
    main()
