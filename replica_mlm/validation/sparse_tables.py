"""The three theories of a masked site against pseudo-likelihood fits on sparse couplings.

docs/discrete.md, sections "Sparse couplings" and "When a theory holds". On couplings a site sees
through a few neighbours (periodic square lattices, ferromagnetic on both sides of the ordering
temperature and +-1 glasses; random 3-regular graphs with q = 2, 3, 4 colours; a contact-map-like
band at L from 16 to 400, :mod:`replica_mlm.potts.graphs`), each row holds one (instance, site,
alpha) against the fits of the site's pseudo-likelihood on Boltzmann sequences of the model:

* the simulation: ``seeds`` independent training sets of ``n = round(alpha (L - 1))`` sequences,
  each fitted at ``lam`` (the package's objective); for Ising sites with ``L <= 16`` the sequences
  are drawn i.i.d. from the exact Boltzmann law and every test measure is exact (the sum over all
  configurations); otherwise the package's sampler (thinning and burn-in from its measured
  autocorrelation time, parallel tempering where Gibbs does not mix; the sampler's method and
  thinning are in the row) and test measures Rao-Blackwellised on ``n_test`` fresh sequences;
  for Ising sites one pool of sequences per seed serves every alpha (nested training sets);
* the theories ``gaussian``, ``mixture`` and ``local`` (``rm.solve`` on ``model.masked_site``):
  classification error ``eg``, test cross-entropy ``test_loss`` and ``estimation_error``, each with
  ``z = (simulation - theory) / SE`` over seeds, and each theory's validity ratio (the Bayes error of
  its data model over the site's); on Ising sites also the local theory with each cluster's own
  covariance (``covariance="cluster"``; columns ``*_local_own``, its CPU seconds beside the pooled
  local theory's in ``cpu_local_s`` and ``cpu_local_own_s``).

``python -m replica_mlm.validation.sparse_tables --out DIR [--full]`` writes ``sparse_tables.csv``
(one row per point), ``sparse_tables.md`` (the tables of docs/discrete.md) and the figure of the
local theory's gaps against L (:mod:`replica_mlm.validation.sparse_plots`).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from replica_mlm._base.stats import mean_stderr

MEASURES = ("eg", "test_loss", "estimation_error")
THEORIES = ("gaussian", "mixture", "local")
#: the columns of an Ising site: also the local theory with each cluster's own covariance
ISING_THEORIES = (*THEORIES, "local_own")
#: held bound on |z| (discrete.local_agreement)
Z_MAX = 3.0
#: the exact Boltzmann law is enumerated up to this many sites (2**16 configurations)
EXACT_L = 16
#: sequences a sampled site of the tables is measured on at the least: on 20 000 the local theory's
#: prediction for the 3-regular Ising glass sat 2 % low in test loss (z +3.9) with 13 sequences per
#: cluster and input, and within 1.0 SE on 100 000 (docs/discrete.md, "Sparse couplings")
SEQUENCES = 100_000


@dataclass(frozen=True)
class SparseInstance:
    """One model and the site of it the tables hold against the theories.

    ``family`` names the table, ``label`` the row's instance (size, temperature, seed); ``n_test``
    fresh sequences score each fit (sampled sites); a sampled site's moments and clusters are measured
    on ``sequences`` at the least (:func:`measured_site`).
    """

    family: str
    label: str
    model: object
    site: int = 0
    alphas: tuple[float, ...] = (1.0, 4.0)
    seeds: int = 20
    n_test: int = 2000
    sequences: int = SEQUENCES


def instances(*, quick: bool) -> list[SparseInstance]:
    """The instances of the tables (quick: those of the discrete validation section in full mode).

    Temperatures: the square-lattice ferromagnet orders at ``beta_c = 0.4407``: 0.3 (disordered),
    0.44 (at the transition) and 0.6 (ordered) at 4 x 4 (exact enumeration) and 10 x 10 (cluster
    updates), 0.44 at 6 x 6 and 16 x 16; the +-1 glass on the square lattice has no
    transition at positive temperature (beta = 0.5, and 1.0 where the samplers do not mix: reported
    as not measured); on the 3-regular graph the +-1 Ising glass orders at ``tanh(beta_c)^2 = 1/2``
    (beta_c = 0.88); the band has no ordering transition (a quasi-one-dimensional graph).
    """
    import replica_mlm as rm
    from replica_mlm.potts import graphs

    def ising(J, beta):
        return rm.PottsModel.ising(couplings=J, beta=beta)

    def potts(J, q, beta):
        return rm.PottsModel(couplings=J, colours=np.eye(q), beta=beta)

    if quick:
        return section_instances(quick=False)
    # the ferromagnets are sampled by cluster updates (tau_int about 2-3 updates at the transition
    # and beyond, where Gibbs needs hundreds of sweeps or does not mix)
    out = [SparseInstance("square lattice, ferromagnet", f"L = 4 x 4, beta = {b:g}",
                          ising(graphs.square_lattice(4), b), seeds=200) for b in (0.3, 0.44, 0.6)]
    out += [SparseInstance("square lattice, ferromagnet", f"L = {s} x {s}, beta = {b:g}",
                           ising(graphs.square_lattice(s), b))
            for s, b in ((6, 0.44), (10, 0.3), (10, 0.44), (10, 0.6), (16, 0.44))]
    out += [SparseInstance("square lattice, +-1 glass", f"L = 10 x 10, beta = {b:g}, site {i}",
                           ising(graphs.square_lattice(10, signs="glass", rng=2), b), site=i)
            for b in (0.5, 1.0) for i in (0, 1)]
    out += [SparseInstance("random 3-regular graph", "q = 2 (+-1 glass), L = 100, beta = 0.7",
                           ising(graphs.random_regular(100, signs="glass", rng=1), 0.7))]
    out += [SparseInstance("contact-map-like band", f"L = {L}, beta = 0.5",
                           ising(graphs.banded(L, rng=3), 0.5), site=L // 2,
                           seeds=200 if L <= EXACT_L else 20) for L in (16, 50, 100, 200, 400)]
    # Potts glasses (U = identity, +-1 couplings): a random colour matrix with one dominant colour
    # freezes every site into it at beta = 1 (a colour never sampled: a singular covariance)
    out += [SparseInstance("random 3-regular graph", f"q = {q} (Potts +-1 glass), L = 100, beta = 1.5",
                           potts(graphs.random_regular(100, signs="glass", rng=1), q, 1.5)) for q in (3, 4)]
    return out


def section_instances(*, quick: bool) -> list[SparseInstance]:
    """The discrete validation section's instances: a 10 x 10 lattice on 20 000 sequences (quick:
    about 5 CPU-seconds; 9 120 asked for), and in full mode also a q = 3 Potts glass on a random
    3-regular graph at L = 100 on :data:`SEQUENCES` (about two CPU-minutes). Both at L = 100, where
    the local theory is claimed to hold: on an 8 x 8 lattice (p = 63) its test loss sits about 1.3 SE
    above the simulation at 12 seeds (five seeds each of two samplers: |z| up to 3.8), a finite-size
    gap, and at L = 40 the Potts glass misses by 6 SE; on the 10 x 10 lattice the same six seeds give
    |z| <= 2.8."""
    import replica_mlm as rm
    from replica_mlm.potts import graphs

    out = [SparseInstance("square lattice, ferromagnet", "L = 10 x 10, beta = 0.3",
                          rm.PottsModel.ising(couplings=graphs.square_lattice(10), beta=0.3), alphas=(2.0,),
                          seeds=12, n_test=500, sequences=20000)]
    if not quick:
        out.append(SparseInstance("random 3-regular graph", "q = 3 (Potts +-1 glass), L = 100, beta = 1.5",
                                  rm.PottsModel(couplings=graphs.random_regular(100, signs="glass", rng=1),
                                                colours=np.eye(3), beta=1.5), alphas=(2.0,), seeds=20,
                                  n_test=1000))
    return out


def measure(inst: SparseInstance, *, lam: float = 0.1, rng: int = 0) -> list[dict]:
    """The rows of one instance: every theory and the simulation at each of its alphas."""
    import warnings

    import replica_mlm as rm

    start = time.process_time()
    model = inst.model
    task = measured_site(model, inst.site, rng=rng, sequences=inst.sequences)
    theory, cpu = {}, {"local": 0.0, "local_own": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # validity warnings: the ratio is in the row
        for t in ISING_THEORIES if model.q == 2 else THEORIES:
            for a in inst.alphas:
                options = {"theory": "local", "covariance": "cluster"} if t == "local_own" else {"theory": t}
                t0 = time.process_time()
                theory[t, a] = rm.solve(task, alpha=a, lam=lam, loss=model.default_loss, **options)
                if t in cpu:
                    cpu[t] += time.process_time() - t0
    sims, sampler = _simulate(inst, lam=lam, rng=rng, n_test=inst.n_test)
    rows = []
    for a in inst.alphas:
        row = dict(family=inst.family, instance=inst.label, L=model.L, q=model.q, beta=model.beta,
                   site=inst.site, neighbours=len(task.neighbourhood), alpha=a, lam=lam, seeds=inst.seeds,
                   sequences=task.local_mixture.n_samples, **sampler)
        for t in THEORIES:
            row[f"ratio_{t}"] = float(theory[t, a].valid.ratio)
        for k in MEASURES:
            mean, se = sims[a][k]
            row[f"{k}_sim"], row[f"{k}_se"] = mean, se
            for t in (t for t in ISING_THEORIES if (t, a) in theory):
                value = float(getattr(theory[t, a], k))
                row[f"{k}_{t}"], row[f"{k}_z_{t}"] = value, (mean - value) / se
        if model.q == 2 and model.L <= EXACT_L:  # the small-L reason: ERM on the local data model itself
            own = own_model_point(task, alpha=a, lam=lam, seeds=inst.seeds, rng=rng + 2)
            for k in MEASURES:
                row[f"{k}_own"], row[f"{k}_own_se"] = own[k]
        if model.q == 2:  # both local theories' solves over the instance's alphas
            row["cpu_local_s"], row["cpu_local_own_s"] = cpu["local"], cpu["local_own"]
        row["cpu_s"] = time.process_time() - start
        rows.append(row)
    return rows


def measured_site(model, site: int, *, rng: int, sequences: int = SEQUENCES):
    """``model.masked_site(site, rng=rng, samples=sequences)``, measured again on the sequences its
    local mixture needs (:func:`replica_mlm.tasks.local_site.samples_needed`, with a 10 % margin for
    the clusters more sequences find) where that is more: the tables hold the theories, not the noise
    of their sampled cluster means (docs/discrete.md, "Sparse couplings")."""
    import warnings

    from replica_mlm.tasks.local_site import samples_needed

    task = model.masked_site(site, rng=rng, samples=sequences)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the warning this function answers
        need = samples_needed(task.local_mixture)
    if need <= task.local_mixture.n_samples:
        return task
    return model.masked_site(site, rng=rng, samples=-(-int(1.1 * need) // 1000) * 1000)


def own_model_point(task, *, alpha: float, lam: float, seeds: int, rng: int) -> dict:
    """ERM on data drawn from the local theory's own data model at the site's own ``p`` (q = 2).

    The local theory is the ``p -> infinity`` limit of exactly this experiment: where its gap to the
    discrete simulation at small L is matched by the gap to this one, it is the finite size of the
    learning problem, not the data model. Fits by :func:`replica_mlm.learners.logistic.fit` (the
    package's objective); error rate and test loss exact under the mixture, by the local theory's
    own channel side (:class:`replica_mlm.theory.sides.local_clusters.LocalClusters`: the logit is
    Gaussian given the cluster, ``M_c = w . mu_c``, ``Q = w^T S w``); the estimation error against
    the site's teacher. Returns (mean, SE) over ``seeds`` per measure.
    """
    from replica_mlm._base.checks import as_generator
    from replica_mlm.learners import logistic
    from replica_mlm.theory.sides import losses
    from replica_mlm.theory.sides.local_clusters import LocalClusters

    mix, p = task.local_mixture, task.p
    n = round(alpha * p)
    side = LocalClusters(losses.resolve("logistic"), mix.weights, np.where(mix.labels == 0, 1.0, -1.0))
    vals = {k: [] for k in MEASURES}
    for gen in as_generator(rng).spawn(seeds):
        x, clusters = mix.sample(n, rng=gen)
        W, _ = logistic.fit(x, mix.labels[clusters], logistic.BINARY_BASIS, lam * p)
        w = W[:, 0]  # logits (z / 2, -z / 2): the logistic loss of y = +-1 on z = w . x
        M, Q = (mix.means @ w)[None, :], np.array([[w @ mix.covariance @ w]])
        vals["eg"].append(side.error(Q, M))
        vals["test_loss"].append(side.test_loss(Q, M))
        vals["estimation_error"].append(float(np.sum((w - mix.teacher) ** 2)))
    return {k: tuple(float(v) for v in mean_stderr(np.array(v))) for k, v in vals.items()}


def _simulate(inst: SparseInstance, *, lam: float, rng: int, n_test: int) -> tuple[dict, dict]:
    """Per alpha, the simulation's (mean, SE) of each measure; and the sampler's diagnostics."""
    model, p = inst.model, inst.model.L - 1
    ns = [round(a * p) for a in inst.alphas]
    if model.q == 2 and model.L <= EXACT_L:
        from replica_mlm.validation.discrete_mixture import _ExactIsing

        first = _site_first(model, inst.site)
        exact = _ExactIsing(first, 2.0 * first.beta * first.couplings[0, 1:], rng)
        return ({a: exact.simulate(n, lam, inst.seeds) for a, n in zip(inst.alphas, ns, strict=True)},
                dict(sampler="exact enumeration", sweeps_between=0, tau_int=0.0))
    if model.q == 2:
        from replica_mlm.learners.pseudo_likelihood import simulate_nested

        out = simulate_nested(model, site=inst.site, ns=ns, lam=np.array([lam]), seeds=inst.seeds,
                              rng=rng + 1, n_test=n_test)
        sims = {a: {k: tuple(float(v) for v in mean_stderr(out[k][:, j, 0])) for k in MEASURES}
                for j, a in enumerate(inst.alphas)}
        return sims, dict(sampler=str(out["method"]), sweeps_between=int(out["sweeps_between"]),
                          tau_int=float(out["tau_int"]))
    import replica_mlm as rm

    sims = {}
    for a in inst.alphas:
        sim = rm.simulate(model, site=inst.site, alpha=a, lam=lam, seeds=inst.seeds, rng=rng + 1,
                          loss="cross_entropy", n_test=n_test, progress=False)
        sims[a] = {k: (float(np.ravel(getattr(sim, f"{k}_mean"))[0]),
                       float(np.ravel(getattr(sim, f"{k}_stderr"))[0])) for k in MEASURES}
    diag = model.gibbs_diagnostics(rng=rng + 1, method="auto")
    return sims, dict(sampler=str(diag.method), sweeps_between=int(diag.sweeps_between),
                      tau_int=float(diag.tau_int))


def _site_first(model, site: int):
    """The same model with ``site`` moved to index 0 (the exact simulation fits site 0)."""
    import replica_mlm as rm

    order = np.r_[site, np.delete(np.arange(model.L), site)]
    return rm.PottsModel(couplings=model.couplings[np.ix_(order, order)], colours=model.colours,
                         beta=model.beta)


def checks(rows: list[dict]) -> list:
    """The discrete section's checks of the local theory (:func:`section_instances`):
    ``discrete.local_agreement`` (every measure within 3 SE) and ``discrete.local_matters``
    (Gaussian equivalence off at the same points: the check has power)."""
    from replica_mlm.validation.report import Check

    def worst(t):
        return max(abs(r[f"{k}_z_{t}"]) for r in rows for k in MEASURES)

    points = "; ".join(
        f"{r['family']}, {r['instance']}, alpha = {r['alpha']:g}, {r['seeds']} seeds: " + ", ".join(
            f"{k} z {r[f'{k}_z_local']:+.1f} (local) / {r[f'{k}_z_gaussian']:+.1f} (gaussian)"
            for k in MEASURES) + f", Bayes-error ratio {r['ratio_local']:.3f}" for r in rows)
    zl, zg = worst("local"), worst("gaussian")
    return [
        Check("discrete.local_agreement", zl <= Z_MAX, zl, Z_MAX,
              f"theory='local' within 3 SE of pseudo-likelihood fits on sparse couplings: largest |z| = "
              f"{zl:.2f} over {len(rows)} points x {len(MEASURES)} measures (z = (simulation - theory) / SE "
              f"over seeds); " + points),
        Check("discrete.local_matters", zg > Z_MAX, zg, Z_MAX,
              f"at the same points theory='gaussian' is off: largest |z| = {zg:.2f} > 3"),
    ]


def markdown(rows: list[dict]) -> str:
    """One table per family: instance, alpha, the simulation and each theory with its z, per measure."""
    lines = []
    for family in dict.fromkeys(r["family"] for r in rows):
        lines += [f"### {family}", ""]
        for k, name in (("eg", "classification error"), ("test_loss", "test cross-entropy"),
                        ("estimation_error", "estimation error")):
            lines += [f"{name}:", "",
                      "| instance | alpha | simulation | gaussian (z) | mixture (z) | local (z) "
                      "| local, each cluster's covariance (z) |",
                      "|---|---|---|---|---|---|---|"]
            for r in (r for r in rows if r["family"] == family):
                cells = " | ".join(f"{r[f'{k}_{t}']:.4f} ({r[f'{k}_z_{t}']:+.1f})" if f"{k}_{t}" in r else "-"
                                   for t in ISING_THEORIES)
                lines.append(f"| {r['instance']} | {r['alpha']:g} | {r[f'{k}_sim']:.4f} +- "
                             f"{r[f'{k}_se']:.4f} | {cells} |")
            lines.append("")
        lines += ["Bayes-error ratio of each theory's data model to the site's (validity), sampler:", "",
                  "| instance | neighbours | gaussian | mixture | local | sampler (thinning, tau_int) "
                  "| sequences measured | seeds |",
                  "|---|---|---|---|---|---|---|---|"]
        seen = set()
        for r in (r for r in rows if r["family"] == family):
            if r["instance"] in seen:
                continue
            seen.add(r["instance"])
            lines.append(f"| {r['instance']} | {r['neighbours']} | {r['ratio_gaussian']:.3f} | "
                         f"{r['ratio_mixture']:.3f} | {r['ratio_local']:.3f} | {r['sampler']} "
                         f"({r['sweeps_between']}, {r['tau_int']:.1f}) | {_sequences(r)} | {r['seeds']} |")
        lines.append("")
    return "\n".join(lines)


def _sequences(row: dict) -> str:
    """The sequences the site's moments rest on: all (exact enumeration) or how many were sampled."""
    return "all" if row["sampler"] == "exact enumeration" else f"{int(row['sequences']):,}"


def main(argv: list[str] | None = None) -> None:
    """Write the tables (CSV and markdown) and the figure into ``--out``."""
    from replica_mlm._base.io import atomic_write_text, loads, write_csv, write_json
    from replica_mlm._base.progress import bar
    from replica_mlm.validation.sparse_plots import gap_figure

    parser = argparse.ArgumentParser(prog="python -m replica_mlm.validation.sparse_tables",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--full", action="store_true", help="every family (about an hour on one core)")
    parser.add_argument("--rng", type=int, default=0)
    args = parser.parse_args(argv)
    (args.out / "instances").mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    failed: list[str] = []
    for inst in bar(instances(quick=not args.full), progress=True, desc="sparse tables", unit="instance"):
        done = args.out / "instances" / f"{inst.family} {inst.label} rng {args.rng}.json".replace("/", "-")
        if done.exists():  # a finished instance of an earlier run with the same settings and seed
            rows += loads(done.read_text())
            continue
        try:
            new = measure(inst, rng=args.rng)
        except ValueError as err:  # the sampler cannot mix, a covariance cannot be measured: say so
            failed.append(f"{inst.family}, {inst.label}: {err}")
            continue
        write_json(done, new)
        rows += new
    columns = list(dict.fromkeys(k for r in rows for k in r))  # the own-model columns: L <= 16 only
    write_csv(args.out / "sparse_tables.csv", [{k: r.get(k, float("nan")) for k in columns} for r in rows],
              columns=columns)
    text = markdown(rows)
    if failed:
        text += "\nNot measured:\n\n" + "\n".join(f"* {f}" for f in failed) + "\n"
    atomic_write_text(args.out / "sparse_tables.md", text)
    gap_figure(rows, args.out / "sparse_gaps")


if __name__ == "__main__":
    main()
