"""
Finite size near the separability threshold
===========================================

The finite-size effect of the Ising pseudo-likelihood learning curve near the separability
threshold (docs: "Discrete spins", section "Finite size near the threshold"). At small ``lam``
the test cross-entropy of one Ising site peaks at the separability threshold ``alpha_c`` of the
logit channel. This script measures, on several SK instances per size ``L``,
the relative gap ``(simulation - theory) / theory`` of the site's test cross-entropy, estimation
error and error rate at ``alpha`` in {1.7, 1.96, 2.2} (``alpha_c`` is about 2.1-2.2 at beta = 0.4),
``lam = 1e-3``, for two kinds of simulation on the same instance:

* discrete: pseudo-likelihood fits on Boltzmann samples of the Ising model
  (:func:`replica_mlm.learners.pseudo_likelihood.simulate_nested`);
* Gaussian: logistic fits on Gaussian inputs with the same covariance Sigma (the one the theory
  uses), the same teacher and the logit channel (``rm.simulate`` on the site's ``MaskedSite``).

The Gaussian simulation differs from the theory only by the finite size ``p = L - 1``; the discrete
one additionally by the non-Gaussianity of the spins. Each instance is written to
``OUT/L{L}_seed{k}.json`` as soon as it is done; ``--analyse`` pools them and fits the decay of the
gap with ``p``. ``--isotropic`` measures the same gap with Gaussian inputs and Sigma = I at
alpha / alpha_c in {0.8, 0.91, 1.02} and p up to 400 (no spins, no sampled Sigma). Run (about 15
and 3 CPU minutes)::

    nice -n 10 python docs/examples/discrete_finite_size.py OUT
    python docs/examples/discrete_finite_size.py OUT --analyse
    nice -n 10 python docs/examples/discrete_finite_size.py OUT --isotropic
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

MEASURES = ("test_loss", "estimation_error", "eg")
ALPHAS = (1.7, 1.96, 2.2)
#: L: (SK instances, discrete seeds per instance, Gaussian seeds per instance)
PLAN = {25: (6, 40, 200), 50: (5, 30, 200), 100: (3, 20, 150), 200: (2, 12, 100)}


def instance(L: int, k: int, *, beta: float, lam: float, seeds: int, gseeds: int, n_test: int,
             cov_samples: int) -> dict:
    import replica_mlm as rm
    from replica_mlm.learners.pseudo_likelihood import simulate_nested
    from replica_mlm.tasks.ising_site import ising_site, spin_covariance
    from replica_mlm.validation.discrete_section import _jackknife, _predict

    t0 = time.process_time()
    model = rm.PottsModel.random_ising(L=L, beta=beta, rng=k)
    cov = spin_covariance(model, samples=cov_samples, batches=5, rng=k)
    task = ising_site(model, 0, cov)
    p = L - 1
    ns = [round(a * p) for a in ALPHAS]
    out = dict(L=L, instance=k, beta=beta, lam=lam, p=p, n=ns, alpha=[n / p for n in ns],
               alpha_c=rm.separability_threshold(task), seeds=seeds, gaussian_seeds=gseeds,
               n_test=n_test, cov_samples=cov_samples, theory={}, theory_se={}, discrete={},
               gaussian={})
    for a, n in enumerate(ns):
        th = _predict(model, cov, 0, n / p, lam)
        jk, _ = _jackknife(model, cov, 0, n / p, lam, th)
        out["theory"][a] = th
        out["theory_se"][a] = jk
        g = rm.simulate(task, alpha=n / p, lam=[lam], seeds=gseeds, rng=1000 + k, loss="logistic")
        out["gaussian"][a] = {m: getattr(g, m)[:, 0].tolist() for m in MEASURES}
    sim = simulate_nested(model, site=0, ns=ns, lam=np.array([lam]), seeds=seeds, rng=k + 1,
                          n_test=n_test)
    for a in range(len(ns)):
        out["discrete"][a] = {m: sim[m][:, a, 0].tolist() for m in MEASURES}
    out["kkt"] = float(sim["kkt"])
    out["sweeps_between"] = int(sim["sweeps_between"])
    out["cpu_seconds"] = time.process_time() - t0
    return out


def isotropic(out: Path, *, lam: float, rho: float = 0.55) -> dict:
    """The same gap without spins and without a sampled Sigma: Gaussian inputs, Sigma = I.

    Teacher of norm^2 ``rho`` (about an SK site's w*^T Sigma w* at beta = 0.4), logit channel,
    ``alpha = r alpha_c`` for r in {0.8, 0.91, 1.02}, p in {50, 100, 200, 400}; the theory is
    exact for p -> infinity here, so the gap is the finite-p effect alone.
    """
    import replica_mlm as rm
    from replica_mlm.tasks.masked_site import MaskedSite

    plan = {50: 400, 100: 300, 200: 160, 400: 60}
    res = {}
    for p, seeds in plan.items():
        task = MaskedSite(covariance=np.eye(p), teacher=np.full(p, np.sqrt(rho / p)), noise=0.0,
                          channel="logit")
        ac = rm.separability_threshold(task)
        for r in (0.8, 0.91, 1.02):
            n = round(r * ac * p)
            th = rm.solve(task, alpha=n / p, lam=lam, loss="logistic")
            sim = rm.simulate(task, alpha=n / p, lam=[lam], seeds=seeds, rng=p, loss="logistic")
            row = dict(p=p, ratio=r, alpha=n / p, alpha_c=ac, seeds=seeds,
                       kkt=float(sim.kkt_residual.max()))
            for m in MEASURES:
                v, t = getattr(sim, m)[:, 0], float(getattr(th, m))
                row[m] = dict(theory=t, rel=float((v.mean() - t) / t),
                              rel_se=float(v.std(ddof=1) / np.sqrt(seeds) / t))
            res[f"{p} {r}"] = row
            print(p, r, {m: f"{100 * row[m]['rel']:+.1f} ± {100 * row[m]['rel_se']:.1f} %" for m in MEASURES},
                  flush=True)
    for r in (0.8, 0.91, 1.02):
        rows = [v for v in res.values() if v["ratio"] == r]
        for m in ("test_loss", "estimation_error"):
            fit = fit_decay(np.array([v["p"] for v in rows], dtype=float),
                            np.array([v[m]["rel"] for v in rows]), np.array([v[m]["rel_se"] for v in rows]))
            res[f"fit {r} {m}"] = fit
            print(r, m, json.dumps(fit), flush=True)
    (out / "isotropic.json").write_text(json.dumps(res, indent=1))
    return res


def run(out: Path, *, beta: float, lam: float, n_test: int, cov_samples: int, sizes) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # round robin over the sizes: an interrupted run still has every size
    for k in range(max(PLAN[L][0] for L in sizes)):
        for L in sizes:
            K, seeds, gseeds = PLAN[L]
            if k >= K:
                continue
            path = out / f"L{L}_seed{k}.json"
            if path.exists():
                continue
            res = instance(L, k, beta=beta, lam=lam, seeds=seeds, gseeds=gseeds, n_test=n_test,
                           cov_samples=cov_samples)
            path.write_text(json.dumps(res))
            print(f"L={L} instance {k}: alpha_c={res['alpha_c']:.3f} {res['cpu_seconds']:.1f} CPU s",
                  flush=True)


def pooled_gap(rows: list[dict], kind: str, a: int, m: str) -> tuple[float, float]:
    """Mean over instances of the relative gap (sim - theory) / theory and its standard error.

    Each instance's gap has the standard error of its seeds (and the jackknife error of its
    theory); instances are independent, so the pooled mean's error is the root of the summed
    variances over the number of instances.
    """
    gaps, var = [], []
    for r in rows:
        th = r["theory"][str(a)][m]
        v = np.asarray(r[kind][str(a)][m])
        gaps.append((v.mean() - th) / th)
        var.append((v.var(ddof=1) / v.size + r["theory_se"][str(a)][m] ** 2) / th**2)
    return float(np.mean(gaps)), float(np.sqrt(np.sum(var)) / len(gaps))


def fit_decay(p: np.ndarray, gap: np.ndarray, se: np.ndarray) -> dict:
    """Weighted fits gap = c p^-1, gap = c p^-1/2 (chi-square each) and gap = c p^-a (a with error)."""
    from scipy.optimize import curve_fit
    from scipy.stats import chi2 as chi2_dist

    res = {}
    for name, power in (("1/p", 1.0), ("1/sqrt(p)", 0.5)):
        f = p ** (-power)
        c = np.sum(f * gap / se**2) / np.sum(f**2 / se**2)
        c_se = 1.0 / np.sqrt(np.sum(f**2 / se**2))
        chi2 = float(np.sum(((gap - c * f) / se) ** 2))
        res[name] = dict(c=float(c), c_se=float(c_se), chi2=chi2, dof=p.size - 1,
                         p_value=float(chi2_dist.sf(chi2, p.size - 1)))
    try:
        (c, a), cov = curve_fit(lambda x, c, a: c * x ** (-a), p, gap, p0=(gap[0] * p[0], 1.0),
                                sigma=se, absolute_sigma=True, maxfev=10000)
        res["power"] = dict(c=float(c), a=float(a), a_se=float(np.sqrt(cov[1, 1])))
    except RuntimeError as exc:
        res["power"] = dict(error=str(exc))
    return res


def few_seed_z(rows: list[dict], a: int, m: str, seeds: int, draws: int = 20000) -> dict:
    """How a ``seeds``-seed mean of the Gaussian simulation scatters around its many-seed mean.

    Subsamples of ``seeds`` out of each instance's Gaussian seeds, z = (subsample mean - all-seed
    mean) / (subsample standard error); fractions with z < -3 and z > 3 (normal: 0.13 % each).
    """
    gen = np.random.default_rng(0)
    z = []
    for r in rows:
        v = np.asarray(r["gaussian"][str(a)][m])
        idx = np.array([gen.choice(v.size, seeds, replace=False) for _ in range(draws // len(rows))])
        sub = v[idx]
        z.append((sub.mean(axis=1) - v.mean()) / (sub.std(axis=1, ddof=1) / np.sqrt(seeds)))
    z = np.concatenate(z)
    return dict(seeds=seeds, below_minus3=float(np.mean(z < -3)), above_3=float(np.mean(z > 3)),
                median_z=float(np.median(z)))


def analyse(out: Path) -> dict:
    rows = [json.loads(f.read_text()) for f in sorted(out.glob("L*_seed*.json"))]
    sizes = sorted({r["L"] for r in rows})
    report = dict(sizes=sizes, cpu_seconds=float(sum(r["cpu_seconds"] for r in rows)), table=[],
                  fits={}, few_seeds={})
    for a, alpha in enumerate(ALPHAS):
        for m in MEASURES:
            per = {}
            for kind in ("gaussian", "discrete"):
                for L in sizes:
                    rs = [r for r in rows if r["L"] == L]
                    g, se = pooled_gap(rs, kind, a, m)
                    per[(kind, L)] = (g, se)
            for L in sizes:
                rs = [r for r in rows if r["L"] == L]
                (gg, gs), (dg, ds) = per[("gaussian", L)], per[("discrete", L)]
                # the two share the theory (and its jackknife error): their difference is free of it
                diff = [np.mean(r["discrete"][str(a)][m]) - np.mean(r["gaussian"][str(a)][m]) for r in rs]
                dvar = [(np.var(r["discrete"][str(a)][m], ddof=1) / r["seeds"]
                         + np.var(r["gaussian"][str(a)][m], ddof=1) / r["gaussian_seeds"])
                        / r["theory"][str(a)][m] ** 2 for r in rs]
                rel = [d / r["theory"][str(a)][m] for d, r in zip(diff, rs, strict=True)]
                d_mean, d_se = float(np.mean(rel)), float(np.sqrt(np.sum(dvar)) / len(rs))
                report["table"].append(dict(
                    alpha=alpha, measure=m, L=L, instances=len(rs),
                    alpha_c=[r["alpha_c"] for r in rs],
                    gaussian_gap=gg, gaussian_se=gs, discrete_gap=dg, discrete_se=ds,
                    disc_minus_gauss=d_mean, disc_minus_gauss_se=d_se, z_diff=d_mean / d_se))
            for kind in ("gaussian", "discrete"):
                p = np.array([L - 1 for L in sizes], dtype=float)
                g = np.array([per[(kind, L)][0] for L in sizes])
                s = np.array([per[(kind, L)][1] for L in sizes])
                report["fits"][f"{kind} alpha={alpha} {m}"] = fit_decay(p, g, s)
    for L in sizes:
        rs = [r for r in rows if r["L"] == L]
        report["few_seeds"][L] = {f"alpha={alpha} {m}": few_seed_z(rs, a, m, 12)
                                  for a, alpha in enumerate(ALPHAS)
                                  for m in ("test_loss", "estimation_error")}
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description="Finite size near the separability threshold")
    ap.add_argument("out", type=Path)
    ap.add_argument("--analyse", action="store_true")
    ap.add_argument("--isotropic", action="store_true", help="Sigma = I instead of SK instances")
    ap.add_argument("--sizes", type=int, nargs="*", default=sorted(PLAN))
    ap.add_argument("--beta", type=float, default=0.4)
    ap.add_argument("--lam", type=float, default=1e-3)
    ap.add_argument("--n-test", type=int, default=500)
    ap.add_argument("--cov-samples", type=int, default=8000)
    args = ap.parse_args()
    if args.isotropic:
        args.out.mkdir(parents=True, exist_ok=True)
        isotropic(args.out, lam=args.lam)
    elif args.analyse:
        rep = analyse(args.out)
        (args.out / "analysis.json").write_text(json.dumps(rep, indent=1))
        for e in rep["table"]:
            print(f"alpha={e['alpha']:<5} {e['measure']:<17} L={e['L']:<4} "
                  f"gauss {100 * e['gaussian_gap']:+6.1f}"
                  f" ± {100 * e['gaussian_se']:4.1f} %  discrete {100 * e['discrete_gap']:+6.1f} ± "
                  f"{100 * e['discrete_se']:4.1f} %  disc-gauss z = {e['z_diff']:+.2f}")
        for k, v in rep["fits"].items():
            print(k, json.dumps(v))
        print(json.dumps(rep["few_seeds"], indent=1))
        print(f"CPU {rep['cpu_seconds']:.0f} s")
    else:
        run(args.out, beta=args.beta, lam=args.lam, n_test=args.n_test, cov_samples=args.cov_samples,
            sizes=args.sizes)


if __name__ == "__main__":
    main()
