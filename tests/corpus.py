"""A fixed corpus of calls over every route (fast path, iterate, general engine, mixture, multi-class,
Bayes-optimal, optimal lambda, phase diagram, simulation, equations), whose results are frozen in
``tests/data/corpus.json`` so that a change of structure can be held to the numbers users had.

``python tests/corpus.py`` writes the file again (only when a change of numbers is intended and
explained in its commit); ``tests/test_corpus.py`` recomputes every call and compares.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from pathlib import Path

# one BLAS thread, as the suite runs (tests/conftest.py): sums over threads round differently
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import replica_mlm as rm  # noqa: E402

PATH = Path(__file__).with_name("data") / "corpus.json"
#: two results agree when identical or within this many eps relative (the issue's bound)
EPS_FACTOR = 4


def _flat(value, prefix: str = "") -> dict:
    """Every number of a result (dataclass, dict, array, scalar, string) under a dotted key."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("message", "points"):  # prose, and objects flattened elsewhere
                continue
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    if isinstance(value, list | tuple) and value and not isinstance(value[0], int | float | bool | str):
        out = {}
        for i, v in enumerate(value):
            out.update(_flat(v, f"{prefix}{i}."))
        return out
    key = prefix.rstrip(".")
    if isinstance(value, str | bool) or value is None:
        return {key: value}
    try:
        arr = np.asarray(value, dtype=float)
    except TypeError:  # an object the result carries along (a task): its type only
        return {key: type(value).__name__}
    return {key: [_num(x) for x in arr.ravel()]}


def _num(x: float):
    return repr(float(x)) if not math.isfinite(x) else float(x)


def _calls():
    """(name, thunk) pairs: each thunk makes one public call."""
    site = rm.GaussianPotts.random(L=40, shift=3.0, seed=0).masked_site(0)
    lim = rm.GaussianPotts.limit(shift=3.0)
    spec = rm.Spectrum(omega=[0.5, 1.0, 2.0, 4.0], bulk=[0.3, 0.3, 0.2, 0.2], teacher=[0.1, 0.4, 0.2, 0.3],
                       noise=0.2)
    ising = rm.PottsModel.random_ising(L=13, beta=0.5, seed=0).masked_site(0, rng=0)
    potts3 = rm.PottsModel.random(L=6, q=3, seed=2, beta=0.8).masked_site(0)
    grid = np.linspace(0.1, 4.0, 40)
    short = np.array([0.3, 0.8, 1.5, 3.0])
    calls = []
    # the fast path, vectorised over alpha (40 x 5 + 40 x 3 + 40 points)
    for lam in (0.0, 1e-3, 0.1, 1.0, 10.0):
        calls.append((f"curve site lam={lam}", lambda lam=lam: rm.learning_curve(site, alpha=grid, lam=lam)))
    for lam in (0.0, 1e-3, 0.1):
        calls.append((f"curve limit lam={lam}", lambda lam=lam: rm.learning_curve(lim, alpha=grid, lam=lam)))
    calls.append(("curve spectrum lam=0.05", lambda: rm.learning_curve(spec, alpha=grid, lam=0.05)))
    # one point through solve: root, iterate, precise
    for a in (0.5, 1.0, 2.0):
        for lam in (0.0, 0.1):
            calls.append((f"solve root a={a} lam={lam}",
                          lambda a=a, lam=lam: rm.solve(site, alpha=a, lam=lam)))
        calls.append((f"solve iterate a={a}", lambda a=a: rm.solve(spec, alpha=a, lam=0.2, method="iterate")))
        calls.append((f"solve general square a={a}",
                      lambda a=a: rm.solve(spec, alpha=a, lam=0.2, method="general")))
    # the general engine: every loss with each channel it goes with (4 alphas each)
    pairs = [("absolute", "gaussian"), ("huber", "gaussian"), ("square", "sign"), ("logistic", "sign"),
             ("hinge", "sign"), ("logistic", "logit"), ("square", "logit"), ("hinge", "logit")]
    for loss, channel in pairs:
        calls.append((f"curve general {loss}/{channel}", lambda loss=loss, channel=channel: rm.learning_curve(
            site, alpha=short, lam=0.1, loss=loss, channel=channel)))
    calls.append(("curve general limit logistic", lambda: rm.learning_curve(lim, alpha=short, lam=[0.05, 0.5],
                                                                            loss="logistic", channel="sign")))
    # a discrete Ising site: its own channel, Gaussian equivalence and the mixture
    for loss in ("logistic", "square", "hinge"):
        calls.append((f"ising gaussian {loss}", lambda loss=loss: rm.learning_curve(
            ising, alpha=short, lam=0.1, loss=loss)))
        calls.append((f"ising mixture {loss}", lambda loss=loss: rm.learning_curve(
            ising, alpha=short, lam=0.1, loss=loss, theory="mixture")))
    # a q = 3 Potts site: the multi-class theory and its mixture
    calls.append(("potts3 gaussian", lambda: rm.solve(potts3, alpha=1.0, lam=0.1)))
    calls.append(("potts3 mixture", lambda: rm.solve(potts3, alpha=1.0, lam=0.1, theory="mixture")))
    # Bayes-optimal
    calls.append(("bayes curve site", lambda: rm.bayes_optimal_curve(site, alpha=grid[::4])))
    calls.append(("bayes curve sign", lambda: rm.bayes_optimal_curve(lim, alpha=short, channel="sign")))
    calls.append(("bayes ising mixture",
                  lambda: rm.bayes_optimal_curve(ising, alpha=short, theory="mixture")))
    calls.append(("bayes ising", lambda: rm.bayes_optimal(ising, alpha=2.0)))
    # optimal lambda and phase diagrams, fast and general
    calls.append(("optimal lambda site", lambda: rm.optimal_lambda(site, alpha=short)))
    calls.append(("optimal lambda logistic", lambda: rm.optimal_lambda(lim, alpha=[0.5, 2.0], loss="logistic",
                                                                       channel="sign")))
    calls.append(("phase site", lambda: rm.phase_diagram(site, alpha=np.linspace(0.2, 3.0, 8),
                                                         lam=[1e-3, 1e-2, 0.1, 1.0])))
    calls.append(("phase absolute", lambda: rm.phase_diagram(lim, alpha=[0.5, 1.0, 2.0], lam=[0.1, 1.0],
                                                             loss="absolute", optimal=False)))
    calls.append(("shift phase", lambda: rm.shift_phase_diagram(alpha=[0.5, 1.5], shift=[2.5, 4.0], lam=0.1)))
    # simulations (their seeds fixed): ridge, a general loss, the Ising site
    calls.append(("simulate site",
                  lambda: rm.simulate(site, alpha=[0.5, 2.0], lam=[0.0, 0.1], seeds=3, rng=7)))
    calls.append(("simulate logistic", lambda: rm.simulate(site, alpha=2.0, lam=0.1, seeds=2, rng=1,
                                                           loss="logistic", channel="sign")))
    calls.append(("simulate ising", lambda: rm.simulate(ising, alpha=2.0, lam=0.1, seeds=2, rng=3,
                                                        loss="logistic")))
    # the printed equations
    calls.append(("equations", lambda: {"text": rm.equations()}))
    calls.append(("equations logistic", lambda: {"text": rm.equations(loss="logistic", channel="sign")}))
    calls.append(("equations bayes", lambda: {"text": rm.equations(bayes_optimal=True)}))
    calls.append(("equations mixture", lambda: {"text": rm.equations(loss="logistic", theory="mixture")}))
    return calls


def compute() -> dict:
    """The corpus: every call's flattened result."""
    return {name: _flat(thunk()) for name, thunk in _calls()}


def count_points(corpus: dict) -> int:
    """How many solved points (entries of the eg-like columns) the corpus holds."""
    n = 0
    for result in corpus.values():
        for key, value in result.items():
            if key.rsplit(".", 1)[-1] in ("eg", "eg_opt", "eg_theory", "mmse") and isinstance(value, list):
                n += len(value)
    return n


def same(a, b) -> bool:
    """Identical, or numbers within EPS_FACTOR eps relative."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= EPS_FACTOR * np.finfo(float).eps * max(abs(a), abs(b))
    return a == b


if __name__ == "__main__":
    corpus = compute()
    PATH.parent.mkdir(exist_ok=True)
    PATH.write_text(json.dumps(corpus, indent=0, sort_keys=True) + "\n")
    print(f"{len(corpus)} calls, {count_points(corpus)} points written to {PATH}", file=sys.stderr)
