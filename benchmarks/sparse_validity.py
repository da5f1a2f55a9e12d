"""The validity window and the cavity check counted on the sparse-coupling tables (issue 36).

docs/discrete.md, section "When a theory holds". Reads the ``sparse_tables.csv`` that
``python -m replica_mlm.validation.sparse_tables --full --out DIR`` writes and prints:

* the window count: a (theory, point) pair is *outside* when its Bayes-error ratio is off 1 by
  more than ``replica_mlm.tasks.validity.TOLERANCE``, and *failed* when some measure is off by
  more than 3 SE and 3 % of the simulation; the pairs outside that did not fail, and the failed
  pairs inside per theory;
* with ``--cavity``: the cavity distance of every Ising site (its task rebuilt as the tables build
  it, ``sparse_tables.measured_site`` with ``rng = 0``, about 10 CPU-minutes) and its Spearman
  correlation, and that of ``|1 - ratio|``, with the mixture's relative error-rate gap, over all
  sites and over the sites outside the lattice ferromagnet's ordering (``beta >= 0.44``).

    python benchmarks/sparse_validity.py DIR/sparse_tables.csv [--cavity]
"""
import sys

import pandas as pd

from replica_mlm.tasks.validity import TOLERANCE

MEASURES = ("eg", "test_loss", "estimation_error")
THEORIES = ("gaussian", "mixture", "local")

rows = pd.read_csv(sys.argv[1])
pairs = pd.DataFrame([
    dict(family=r.family, instance=r.instance, alpha=r.alpha, theory=t, ratio=r[f"ratio_{t}"],
         outside=abs(r[f"ratio_{t}"] - 1) > TOLERANCE,
         failed=any(abs(r[f"{k}_z_{t}"]) > 3
                    and abs(r[f"{k}_sim"] - r[f"{k}_{t}"]) > 0.03 * abs(r[f"{k}_sim"]) for k in MEASURES))
    for _, r in rows.iterrows() for t in THEORIES])
out, inside = pairs[pairs.outside], pairs[~pairs.outside]
print(f"outside 1 +- {TOLERANCE:g}: {int(out.failed.sum())} of {len(out)} pairs failed; "
      f"inside: {int(inside.failed.sum())} of {len(inside)}")
print("failed inside, per theory:", inside[inside.failed].theory.value_counts().to_dict())
print("outside, not failed:")
print(out[~out.failed].to_string(index=False))

if "--cavity" in sys.argv:
    from scipy.stats import spearmanr

    from replica_mlm.validation.sparse_tables import instances, measured_site

    distance = {}
    for inst in instances(quick=False):
        if inst.model.q == 2 and inst.label in set(rows.instance):
            task = measured_site(inst.model, inst.site, rng=0)
            distance[inst.label] = task.mixture.cavity_check().covariance_distance
            print(f"{inst.family}, {inst.label}: cavity distance {distance[inst.label]:.4f}", flush=True)
    d = rows[rows.instance.isin(distance)].copy()
    d["distance"] = d.instance.map(distance)
    d["gap"] = (d.eg_sim - d.eg_mixture).abs() / d.eg_sim
    d["off"] = (d.ratio_mixture - 1).abs()
    ordered = (d.family == "square lattice, ferromagnet") & (d.beta >= 0.44)
    for name, part in (("all", d), ("outside the ferromagnet's ordering", d[~ordered])):
        print(f"{name}: {part.instance.nunique()} sites, {len(part)} points; Spearman with the mixture's "
              f"relative error-rate gap: distance {spearmanr(part.distance, part.gap)[0]:.2f}, "
              f"|1 - ratio| {spearmanr(part.off, part.gap)[0]:.2f}")
