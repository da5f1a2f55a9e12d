"""Hostile input to every public function, constructor and method of replica_mlm.

Every public callable (``rm.__all__`` and the public methods of its classes) is called with its
valid arguments except one, which is replaced by something hostile: NaN, inf, complex, bool,
strings (numeric or not), bytes, None, objects, object / string / bool / complex arrays, wrong
shapes, empty arrays, ragged lists and sizes no machine can hold. The only acceptable outcomes:

* invalid input: ``ValueError`` or ``TypeError`` (exactly those classes) whose message names the
  argument;
* valid input written differently (a list for an array, ``np.int64`` for an int, a 0-d array for a
  float): the same result as the plain call, with no NaN;
* never another exception, a floating-point or complex-casting warning, or a call that runs past
  its time budget (``BUDGET`` seconds, enforced by SIGALRM).

Valid but extreme numbers (lam = 1e300, alpha = 1e308) belong to the solver's own tests; here the
valid values are moderate. The result records (SaddlePoint, LearningCurve, OptimalLambda, PhaseDiagram,
Simulation, Asymptotics), the exception ConvergenceError, ``__version__`` and ``plotting`` are not
input paths and are not driven.

``test_hostile_table`` tries every case of the table once; ``test_hostile_hypothesis`` draws from
hypothesis strategies (random dtypes, shapes, complex numbers, text) for the same arguments.
"""

from __future__ import annotations

import contextlib
import math
import re
import resource
import signal
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import replica_mlm as rm
from replica_mlm._base import io as rio
from replica_mlm.tasks.gaussian_potts_limit import GaussianPottsLimit
from replica_mlm.theory.solvers import mixture_ridge

#: seconds one call may take
BUDGET = 6.0
#: extra address space allowed to the process while the hostile calls run (MemoryError, not the
#: OOM killer, if a size check is missing)
EXTRA_ADDRESS_SPACE = 3 * 2**30
#: result fields documented as NaN (SaddlePoint.kappa of method="iterate", PhaseDiagram.peak_alpha
#: where eg has no interior maximum)
NAN_FIELDS = {"kappa", "peak_alpha"}
#: result fields that measure time (not compared between calls)
TIMING_FIELDS = {"seconds_per_epoch", "cpu_seconds"}

# ------------------------------------------------------------------ the valid objects
RNG = np.random.default_rng(0)
GP = rm.GaussianPotts.random(L=5, shift=3.0, seed=0)
SITE = GP.masked_site(0)
#: an exact Ising site with its Gaussian mixture (theory="mixture")
ISING_SITE = rm.PottsModel.random_ising(L=6, beta=0.5, seed=0).masked_site(0)
#: an exact Potts site (q = 3) with its Gaussian mixture
POTTS_SITE = rm.PottsModel.random(L=4, q=3, beta=1.0, seed=0).masked_site(0)
LIMIT = rm.GaussianPotts.limit(shift=3.0)
SPEC = SITE.spectrum
AMP_X, AMP_Y = SITE.sample(12, rng=5)
PM = rm.PottsModel.random(L=3, q=2, seed=0, beta=0.5)
SEQS = RNG.integers(0, 2, size=(8, 3))
A3 = np.array([[0.0, 0.5, -0.2], [0.3, 0.0, 0.1], [-0.4, 0.2, 0.0]])
V2 = np.array([[1.0, -0.5], [0.2, 0.7]])
FA = rm.FactoredAttention(attention=A3, value=V2)
JNET = RNG.normal(size=(3, 3, 2, 2))
NET = rm.AttractorNetwork(couplings=JNET, beta=1.0, gamma=0.5)
X = np.eye(2)[[0, 1, 0]] * 1.0
XDATA = np.stack([np.eye(2)[[0, 1, 0]], np.eye(2)[[1, 1, 0]], np.eye(2)[[1, 0, 1]]]) * 1.0
HUGE = (10**9, 10**18, 2**64, 10**100)


class _StubMSA:
    """The MSA contract of issue 24 (``.sequences``, ``.q``, ``.weights(identity=)``) on SEQS."""

    sequences, q = SEQS, 2

    def weights(self, identity=0.8):
        identical = (SEQS[:, None, :] == SEQS[None, :, :]).mean(axis=2)
        return 1.0 / np.sum(identical >= identity, axis=1)


MSA_STUB = _StubMSA()
CURVE_CSV = Path(tempfile.mkdtemp(prefix="replica-mlm-hostile-")) / "curve.csv"
rm.learning_curve(SITE, alpha=[0.5, 1.0], lam=0.0).to_csv(CURVE_CSV)
MSA_FASTA = CURVE_CSV.parent / "family.fasta"
MSA_FASTA.write_text(">a\nACDEF-GH\n>b\nACDEY-GH\n>c\nA-DEFKGW\n>d\nMCDQF-GH\n")
MSA4 = rm.MSA.read(MSA_FASTA)
S8 = RNG.normal(size=(8, 8))
S8 = S8 + S8.T
D8 = np.abs(np.subtract.outer(np.arange(8.0), np.arange(8.0))) * 1.5  # a straight chain


# ------------------------------------------------------------------ hostile values by kind
def bad_scalar() -> list:
    return [math.nan, math.inf, -math.inf, 1 + 1j, np.complex128(2.0), True, np.bool_(False), "1.0",
            "nan", b"2", None, [1.0], (1.0,), np.array([1.0, 2.0]), np.array(1.0, dtype=object),
            object(), 10**400, {"a": 1}, np.array("1.0")]


def bad_int() -> list:
    return [2.0, 2.5, math.nan, math.inf, True, np.bool_(True), "3", 3 + 0j, None, [3], np.array([3]),
            object(), np.float64(3.0), b"3"]


BAD_SEED = [-1, 1.5, "0", True, np.random.RandomState(0), object(), math.nan, 1 + 0j, b"0"]
BAD_FLAG = ["no", "", 1, 0, None, 1.0, np.array([True]), "True", 2 + 0j]
BAD_CHOICE = ["nope", "", 1, None, b"x", ["x"], 1.5, True]
BAD_TASK = [None, "site", np.eye(3), 3.0, GP, [1.0, 2.0], 1 + 1j]


def bad_array(a: np.ndarray, *, integer: bool = False) -> list:
    """Hostile variants of a valid array ``a``."""
    a = np.asarray(a)
    f = a.astype(float)
    out = []
    for v in (math.nan, math.inf, 1.5 if integer else None):
        if v is not None:
            b = f.copy()
            b.flat[-1] = v
            out.append(b)
    c = f.astype(complex)
    c.flat[0] += 1j
    for bad in ("1", True, 1 + 1j, None):
        bl = a.tolist()
        leaf = bl
        while isinstance(leaf[0], list):
            leaf = leaf[0]
        leaf[0] = bad
        out.append(bl)
    out += [c, f.astype(complex), a != 0, a.astype(str), a.astype(object), a[None], a[..., :-1],
            np.empty((0,) * a.ndim), [], 1.0, None, "abc", object(), a.ravel()[:1]]
    if a.ndim > 1:
        out += [a.ravel(), a[:-1]]
    ragged = [list(range(3)), list(range(2))]
    out.append(ragged)
    if integer:
        out += [a - 1 - a.max(), a + 100, a.astype(bool)]
    return out


def equivalent_array(a: np.ndarray) -> list:
    """The same array written differently (a nested list; a Fortran-ordered copy)."""
    return [np.asarray(a).tolist(), np.asfortranarray(a)]


def equivalent_scalar(x) -> list:
    if isinstance(x, bool) or x is None:
        return []
    if isinstance(x, int):
        return [np.int64(x), np.int32(x)]
    if isinstance(x, float):
        return [np.float64(x), np.array(x)]
    return []


@dataclass
class Param:
    """One argument: its valid value, the invalid values and the equivalent rewritings."""

    name: str
    valid: object
    invalid: list
    equivalent: list
    label: str = ""  # what the refusal message must contain (default: the name)
    huge_invalid: bool = False  # sizes beyond any machine must be refused
    shapes: object = None  # predicate: which array shapes are valid (default: the valid one's)

    def valid_shape(self, shape: tuple) -> bool:
        if self.shapes is not None:
            return bool(self.shapes(tuple(shape)))
        return tuple(shape) == np.shape(self.valid)


def real(name, valid, *, extra=(), none_ok=False, label=""):
    inv = [v for v in bad_scalar() if not (none_ok and v is None)] + list(extra)
    return Param(name, valid, inv, equivalent_scalar(valid), label)


def integer(name, valid, *, extra=(), huge=True, none_ok=False, label="", iterations=False):
    """An int argument; ``huge``: sizes beyond any machine are invalid. For iteration counts
    (``iterations``) 10**9 is a long but finite computation, so only 10**18 and up are."""
    inv = [v for v in bad_int() if not (none_ok and v is None)] + list(extra)
    big = list(HUGE[1:] if iterations else HUGE) if huge else []
    return Param(name, valid, inv + big, equivalent_scalar(valid), label, huge_invalid=huge)


def _valid_rewrite(p: Param, x) -> bool:
    """A reshaped copy of valid numbers that happens to be a valid shape (not hostile)."""
    if isinstance(x, float | int) and not isinstance(x, bool):
        x = np.asarray(x)
    return (isinstance(x, np.ndarray) and x.dtype.kind in "iuf" and x.shape != np.shape(p.valid)
            and bool(np.all(np.isfinite(x))) and p.valid_shape(x.shape))


def real_or_grid(name, valid, *, extra=()):
    """A float argument that also takes a 1-d grid (one result per value): 1-d sequences of
    valid numbers are not hostile; ragged, 2-d, empty or non-finite ones are."""
    p = real(name, valid, extra=extra)
    p.shapes = lambda s: len(s) <= 1 and math.prod(s) > 0
    p.invalid = [v for v in p.invalid if not isinstance(v, list | tuple | np.ndarray)
                 or (isinstance(v, np.ndarray) and v.dtype.kind not in "iuf")]
    p.invalid += [[valid, math.nan], [valid, math.inf], [[valid]], [], np.array([valid, 1j]), [valid, "1"],
                  [valid, None], [valid, [valid]], [valid, True], [valid, *extra[:1]]]
    return p


def array(name, valid, *, integer_=False, label="", shapes=None):
    p = Param(name, valid, bad_array(valid, integer=integer_), equivalent_array(valid), label,
              shapes=shapes)
    p.invalid = [x for x in p.invalid if not _valid_rewrite(p, x)]
    return p


def NO_NONE(p: Param) -> Param:
    """The same argument where None is a valid value (the default)."""
    p.invalid = NOT_NONE(p.invalid)
    return p


def grid(name, valid):
    return array(name, valid, shapes=lambda s: len(s) <= 1 and math.prod(s) > 0)


def seqs(name, valid):
    return array(name, valid, integer_=True, shapes=lambda s: len(s) == 2 and s[0] > 0 and s[1] == 3)


def tokens(name, valid):
    return array(name, valid, shapes=lambda s: len(s) in (2, 3) and s[-2:] == (3, 2) and s[0] > 0)


def seed(name, valid=0):
    return Param(name, valid, list(BAD_SEED), [np.int64(valid)] if isinstance(valid, int) else [])


def flag(name, valid):
    return Param(name, valid, list(BAD_FLAG), [np.bool_(valid)])


def choice(name, valid):
    return Param(name, valid, list(BAD_CHOICE), [])


def task(name="task"):
    return Param(name, SITE, list(BAD_TASK), [])


def NOT_NONE(values: list) -> list:
    return [v for v in values if v is not None]


POS = (0, 0.0, -1.0, -1e-300)
NONNEG = (-1.0, -5e-324)
POSINT = (0, -1)
SYM = GP.couplings
COV = SITE.covariance
TEACHER = np.asarray(SITE.teacher)
Jp, Up = PM.couplings, PM.colours
MR = {"weights": np.array([0.5, 0.3, 0.2]), "covariance": np.diag([1.0, 0.5, 2.0, 1.5]),
      "means": np.array([[0.3, -0.2, 0.1, 0.0], [-0.4, 0.5, 0.0, 0.2], [-0.15, -0.25, -0.25, -0.3]]),
      "targets": np.array([1.0, -0.5, -1.75])}
MR_THEORY = mixture_ridge.MixtureRidgeTheory(**MR)


@dataclass
class Target:
    name: str
    call: object
    params: list


def _t(name, call, *params):
    return Target(name, call, list(params))


TARGETS = [
    _t("GaussianPotts", lambda **k: rm.GaussianPotts(**k),
       array("couplings", SYM), real("shift", 3.0, extra=POS)),
    _t("GaussianPotts.random", lambda **k: rm.GaussianPotts.random(**k),
       integer("L", 4, extra=POSINT), real("shift", 3.0, extra=POS), seed("seed")),
    _t("GaussianPotts.random(rng)", lambda **k: rm.GaussianPotts.random(L=4, **k), seed("rng")),
    _t("GaussianPotts.limit", lambda **k: rm.GaussianPotts.limit(**k),
       real("shift", 3.0, extra=(2.0, 1.0, -3.0))),
    _t("GaussianPottsLimit", lambda **k: GaussianPottsLimit(**k),
       real("shift", 3.0, extra=(2.0,)), real("digits", 17.0, extra=(*POS, 1e300, 1e308))),
    _t("GaussianPottsLimit.mp_spectrum", lambda **k: LIMIT.mp_spectrum(**k),
       integer("dps", 20, extra=POSINT)),
    _t("GaussianPotts.masked_site", lambda **k: GP.masked_site(**k),
       integer("i", 1, extra=(-1, 5), label="site index")),
    _t("MaskedSite", lambda **k: rm.MaskedSite(**k),
       array("covariance", COV), array("teacher", TEACHER), real("noise", 0.3, extra=NONNEG)),
    _t("MaskedSite.sample", lambda **k: SITE.sample(**k), integer("n", 5, extra=POSINT), seed("rng")),
    _t("PottsSite", lambda **k: rm.PottsSite(channel="gaussian", **k),
       array("covariance", COV), array("teacher", TEACHER[:, None] * np.ones(2),
                                       shapes=lambda s: len(s) == 2 and s[0] == TEACHER.size and s[1] >= 1),
       integer("p", 2, extra=POSINT, huge=False), real("noise", 0.3, extra=NONNEG)),
    _t("MaskedSite.generalisation_error", lambda **k: SITE.generalisation_error(**k),
       array("weights", TEACHER + 0.1,
             shapes=lambda s: len(s) in (1, 2) and s[0] == TEACHER.size and math.prod(s) > 0)),
    _t("Spectrum", lambda **k: rm.Spectrum(**k),
       array("omega", np.array([0.5, 2.0])), array("bulk", np.array([0.25, 0.75])),
       array("teacher", np.array([0.1, 0.3])), real("noise", 0.2, extra=NONNEG)),
    _t("Spectrum.from_site", lambda **k: rm.Spectrum.from_site(**k), task("site"),
       choice("method", "lanczos"), integer("rank", 2, extra=POSINT, huge=False, none_ok=True)),
    _t("solve", lambda **k: rm.solve(**k), task(), real("alpha", 0.7, extra=POS),
       real("lam", 0.1, extra=NONNEG), Param("method", "root", NOT_NONE(list(BAD_CHOICE)), [None]),
       Param("precision", None, [*NOT_NONE(bad_int()), 15, 0, -1, *HUGE], [])),
    _t("solve(iterate)", lambda **k: rm.solve(SITE, alpha=2.0, lam=0.1, method="iterate", **k),
       real("damping", 0.5, extra=(-0.1, 1.0, 1.5)), real("tol", 1e-10, extra=POS),
       integer("max_iter", 100000, extra=POSINT, huge=False)),
    _t("solve(mixture)", lambda **k: rm.solve(ISING_SITE, loss="logistic", theory="mixture", **k),
       real("alpha", 0.7, extra=POS), real("lam", 0.1, extra=POS),
       integer("order", 16, extra=POSINT, none_ok=True)),
    _t("learning_curve(mixture)", lambda **k: rm.learning_curve(ISING_SITE, loss="logistic", theory="mixture",
                                                                **k),
       grid("alpha", np.array([0.5, 1.5])), real_or_grid("lam", 0.1, extra=POS)),
    _t("solve(mixture, Potts)", lambda **k: rm.solve(POTTS_SITE, theory="mixture", **k),
       real("alpha", 0.7, extra=POS), real("lam", 0.1, extra=POS),
       integer("order", 8, extra=(*POSINT, 65), none_ok=True)),
    _t("solve(theory)", lambda **k: rm.solve(ISING_SITE, alpha=1.0, lam=0.1, loss="logistic", **k),
       choice("theory", "mixture")),
    _t("learning_curve", lambda **k: rm.learning_curve(**k), task(),
       grid("alpha", np.array([0.5, 1.5])), real_or_grid("lam", 0.1, extra=NONNEG),
       Param("method", "root", NOT_NONE(list(BAD_CHOICE)), [None])),
    _t("learning_curve(several lam)", lambda **k: rm.learning_curve(**k), task(),
       grid("alpha", np.array([0.5, 1.5])), grid("lam", np.array([1e-3, 0.1])),
       Param("method", "root", NOT_NONE(list(BAD_CHOICE)), [None])),
    _t("load", lambda **k: rm.load(**k),
       Param("path", CURVE_CSV, [None, 3, 1.5, b"curve.csv", object(), ["curve.csv"], True,
                                 str(CURVE_CSV.with_suffix(".txt")), "", np.array("curve.csv")],
             [str(CURVE_CSV)])),
    _t("optimal_lambda", lambda **k: rm.optimal_lambda(**k), task(), grid("alpha", np.array([0.7, 2.0])),
       Param("bounds", (1e-3, 10.0), [(1.0, 0.1), (0.0, 1.0), (math.nan, 1.0), ("a", 1.0), 3.0,
                                      (1.0,), None, (1 + 1j, 2.0), (True, 2.0)], [[1e-3, 10.0]]),
       real("xatol", 1e-9, extra=(*POS, 10.0))),
    _t("phase_diagram", lambda **k: rm.phase_diagram(**k), task(),
       grid("alpha", np.array([0.5, 2.0])), grid("lam", np.array([0.1, 1.0])),
       flag("optimal", False), flag("progress", False)),
    _t("shift_phase_diagram", lambda **k: rm.shift_phase_diagram(**k),
       grid("alpha", np.array([0.5, 2.0])), grid("shift", np.array([2.5, 3.0])),
       real("lam", 0.1, extra=NONNEG), flag("progress", False)),
    _t("asymptotics", lambda **k: rm.asymptotics(**k), task(), real("lam", 0.1, extra=NONNEG),
       Param("precision", None, [*NOT_NONE(bad_int()), 0, -1, *HUGE], [])),
    _t("expansions", lambda **k: rm.expansions(**k), Param("bogus", None, [1], [])),
    _t("equations", lambda **k: rm.equations(**k), flag("latex", False)),
    # --- the Bayes-optimal error (issue 25)
    _t("bayes_optimal", lambda **k: rm.bayes_optimal(**k), task(), real("alpha", 0.7, extra=(*POS, 1e9)),
       choice("prior", "gaussian"), integer("order", 16, extra=(*POSINT, 257), huge=False)),
    _t("bayes_optimal_curve", lambda **k: rm.bayes_optimal_curve(**k), task(),
       grid("alpha", np.array([0.5, 1.5])), choice("prior", "gaussian")),
    _t("bayes_optimal(theory)", lambda **k: rm.bayes_optimal(ISING_SITE, **k), real("alpha", 0.7, extra=POS),
       choice("theory", "mixture"), Param("channel", None, ["logit", "sign", 3], [])),
    _t("bayes_optimal_curve(theory)", lambda **k: rm.bayes_optimal_curve(ISING_SITE, **k),
       grid("alpha", np.array([0.5, 1.5])), choice("theory", "mixture")),
    _t("amp", lambda **k: rm.amp(site=SITE, **k), array("X", AMP_X), array("y", AMP_Y),
       integer("max_iter", 5, extra=POSINT, huge=False), real("tol", 1e-8, extra=POS),
       real("damping", 0.0, extra=(-0.1, 1.0, 1.5))),
    _t("equations(bayes_optimal)", lambda **k: rm.equations(channel="sign", **k),
       flag("bayes_optimal", True)),
    _t("equations(theory)", lambda **k: rm.equations(**k), choice("theory", "mixture")),
    _t("separability_threshold", lambda **k: rm.separability_threshold(**k), task(),
       Param("channel", "sign", NOT_NONE(list(BAD_CHOICE)), [None])),
    _t("TransformerMLM", lambda **k: rm.TransformerMLM(**k), integer("L", 3, extra=(1, *POSINT)),
       integer("q", 2, extra=(1, *POSINT)), integer("layers", 1, extra=POSINT),
       integer("d_model", 4, extra=POSINT), integer("heads", 1, extra=POSINT, huge=False),
       real("gamma", 1.0, extra=(-1.0,)), seed("rng")),
    _t("losses.Huber", lambda **k: rm.losses.Huber(**k), real("delta", 1.0, extra=POS)),
    _t("channels.resolve", lambda **k: rm.channels.resolve(**k),
       Param("channel", "sign", NOT_NONE(list(BAD_CHOICE)), [None])),
    _t("show_options", lambda **k: rm.show_options(disp=False, **k),
       Param("route", "general", NOT_NONE(list(BAD_CHOICE)), [None])),
    _t("penalties.ShapedRidge", lambda **k: rm.penalties.ShapedRidge(**k), real("power", 1.0)),
    _t("simulate", lambda **k: rm.simulate(**k), Param("task", SITE, [*BAD_TASK, LIMIT, SPEC], []),
       grid("alpha", np.array([2.0, 3.0])), grid("lam", np.array([0.0, 0.1])),
       integer("seeds", 3, extra=(*POSINT, 1)), seed("rng")),
    _t("simulate(one alpha)", lambda **k: rm.simulate(SITE, lam=0.1, seeds=3, **k),
       real_or_grid("alpha", 2.0, extra=(*POS, 0.1)), seed("rng")),
    _t("online_sgd", lambda **k: rm.online_sgd(**k), task(), grid("alpha", np.array([0.5, 1.0])),
       real("lr", 0.5, extra=POS), real("lam", 0.0, extra=NONNEG),
       integer("batch", 1, extra=POSINT, huge=False), flag("exact", False)),
    _t("gradient_flow", lambda **k: rm.gradient_flow(**k), task(), real("alpha", 2.0, extra=POS),
       grid("time", np.array([0.5, 2.0])), real("lam", 0.0, extra=NONNEG)),
    _t("simulate_sgd", lambda **k: rm.simulate_sgd(**k), Param("task", SITE, [*BAD_TASK, LIMIT, SPEC], []),
       grid("alpha", np.array([0.5, 1.0])), real("lr", 0.5, extra=POS), real("lam", 0.0, extra=NONNEG),
       integer("batch", 1, extra=POSINT), integer("seeds", 3, extra=(*POSINT, 1)), seed("rng")),
    _t("simulate_gradient_flow", lambda **k: rm.simulate_gradient_flow(**k),
       Param("task", SITE, [*BAD_TASK, LIMIT, SPEC], []), real("alpha", 2.0, extra=POS),
       grid("time", np.array([0.5, 2.0])), real("lam", 0.0, extra=NONNEG),
       integer("seeds", 3, extra=(*POSINT, 1)), seed("rng")),
    _t("PottsModel", lambda **k: rm.PottsModel(**k), array("couplings", Jp, label="couplings"),
       array("colours", Up, label="colours"), real("beta", 0.5, extra=POS)),
    _t("PottsModel.random", lambda **k: rm.PottsModel.random(**k), integer("L", 3, extra=(1, *POSINT)),
       integer("q", 2, extra=(1, *POSINT)), seed("seed"), real("beta", 1.0, extra=POS)),
    _t("PottsModel.random(rng)", lambda **k: rm.PottsModel.random(L=3, q=2, **k), seed("rng")),
    _t("PottsModel.random_ising", lambda **k: rm.PottsModel.random_ising(L=3, beta=0.5, **k), seed("rng")),
    _t("PottsModel.with_beta", lambda **k: PM.with_beta(**k), real("beta", 2.0, extra=POS)),
    *[_t(f"PottsModel.{m}", lambda m=m, **k: getattr(PM, m)(**k), seqs("seqs", SEQS))
      for m in ("logits", "energy", "conditionals", "neg_pseudo_loglikelihood", "mean_hamming")],
    _t("PottsModel.conditional", lambda **k: PM.conditional(**k), seqs("seqs", SEQS),
       integer("i", 1, extra=(-1, 3), label="site index")),
    _t("PottsModel.run_chains", lambda **k: PM.run_chains(**k),
       seqs("s0", SEQS[:4]), integer("n_sweeps", 3, extra=(-1,), iterations=True), seed("rng"),
       integer("record_every", 1, extra=(-1,), huge=False)),
    _t("PottsModel.tempering_ladder", lambda **k: PM.with_beta(3.0).tempering_ladder(**k),
       integer("n_rungs", 4, extra=POSINT, none_ok=True), real("beta_hot", 1.0, extra=POS)),
    _t("PottsModel.gibbs_diagnostics", lambda **k: PM.gibbs_diagnostics(**k), seed("rng"),
       integer("n_chains", 8, extra=POSINT, none_ok=True), integer("n_sweeps", 20, extra=POSINT),
       integer("max_sweeps", 40, extra=POSINT), choice("method", "gibbs")),
    _t("PottsModel.sample", lambda **k: PM.sample(**k), integer("n", 10, extra=POSINT), seed("rng"),
       integer("n_chains", 4, extra=POSINT, none_ok=True, huge=False),
       integer("sweeps_between", 1, extra=POSINT, none_ok=True, iterations=True),
       integer("burn_in", 2, extra=(-1,), none_ok=True, iterations=True),
       flag("return_diagnostics", False), choice("method", "gibbs"),
       integer("n_rungs", 3, extra=POSINT, none_ok=True), real("beta_hot", 0.3, extra=POS)),
    _t("PottsModel.tune_beta", lambda **k: PM.tune_beta(**k),
       Param("target_hamming", 0.3, [*bad_scalar(), 0, -0.1, 0.5, 0.9], []),
       Param("rng", 0, list(BAD_SEED), []), Param("n_samples", 100, [*bad_int(), 0, 1, *HUGE], []),
       Param("tol", 0.01, NOT_NONE([*bad_scalar(), *POS]), []),
       Param("max_iter", 30, [*bad_int(), 0, -1], []), Param("method", "auto", list(BAD_CHOICE), [])),
    _t("FactoredAttention", lambda **k: rm.FactoredAttention(**k),
       array("attention", A3), array("value", V2),
       Param("fit_info", None, ["info", 1, object(), {"lam": 1}], [])),
    *[_t(f"FactoredAttention.{m}", lambda m=m, **k: getattr(FA, m)(**k),
         seqs("seqs", SEQS)) for m in ("logits", "conditionals", "mlm_loss")],
    _t("FactoredAttention.conditional", lambda **k: FA.conditional(**k),
       seqs("seqs", SEQS), integer("i", 0, extra=(-1, 3), label="site index")),
    _t("FactoredAttention.fit", lambda **k: rm.FactoredAttention.fit(**k),
       seqs("seqs", SEQS), integer("q", 2, extra=(1, *POSINT)),
       real("lam", 1e-3, extra=NONNEG), choice("variant", "linear"), seed("rng"),
       choice("method", "lbfgs"), integer("max_iter", 5, extra=POSINT, huge=False),
       real("tol", 1e-9, extra=POS), integer("epochs", 2, extra=POSINT, huge=False),
       integer("batch_size", 4, extra=POSINT, huge=False), real("lr", 0.05, extra=POS),
       real("init_scale", 0.1, extra=POS), NO_NONE(seqs("monitor", SEQS[:2]))),
    _t("fit_potts", lambda **k: rm.fit_potts(**k),
       Param("msa", MSA_STUB, [None, "abc", SEQS, 1.0, object(), [1, 2], b"x"], []),
       choice("method", "factored"), integer("heads", 2, extra=POSINT, none_ok=True),
       choice("attention", "softmax"),
       real("reweight", 0.8, none_ok=True, extra=(*POS, 1.5)), real("lambda_h", 0.01, extra=NONNEG),
       real("lambda_J", 0.01, extra=NONNEG), integer("max_iter", 20, extra=POSINT, iterations=True),
       real("tol", 1e-5, extra=POS, none_ok=True), seed("rng"), real("init_scale", 0.01, extra=POS),
       Param("precision", "single", NOT_NONE(list(BAD_CHOICE)), []),
       Param("init", None, ["abc", 1.0, [1, 2], np.zeros((1, 1, 2, 2))], [])),
    _t("AttractorNetwork", lambda **k: rm.AttractorNetwork(**k), array("couplings", JNET),
       real("beta", 1.0, extra=POS), real("gamma", 0.5, extra=(-0.1, 1.5))),
    *[_t(f"AttractorNetwork.{m}", lambda m=m, **k: getattr(NET, m)(**k), tokens("x", X))
      for m in ("local_energies", "attention_weights", "attention", "step")],
    _t("AttractorNetwork.run", lambda **k: NET.run(**k), tokens("x0", X),
       integer("steps", 3, extra=POSINT)),
    *[_t(f"AttractorNetwork.{m}", lambda m=m, **k: getattr(NET, m)(**k), tokens("data", XDATA),
         real("weight_decay", 0.01, extra=NONNEG), choice("normalisation", "none"))
      for m in ("training_cost", "training_gradient")],
    _t("AttractorNetwork.fit", lambda **k: rm.AttractorNetwork.fit(**k),
       array("data", XDATA, shapes=lambda s: len(s) == 3 and s[0] > 0 and s[1] >= 2 and s[2] > 0),
       real("beta", 1.0, extra=POS), real("gamma", 0.5, extra=(-0.1, 1.5)),
       real("lr", 0.1, extra=POS), integer("epochs", 2, extra=POSINT),
       real("weight_decay", 1e-3, extra=POS),
       integer("batch_size", 2, extra=POSINT, none_ok=True, huge=False),
       real("init_scale", 0.1, extra=(-1.0,)), choice("normalisation", "none"), seed("rng")),
    # --- protein families (issue 24)
    _t("MSA.read", lambda **k: rm.MSA.read(**k),
       Param("path", MSA_FASTA, [None, 3, 1.5, b"family.fasta", object(), ["family.fasta"], True, "",
                                 np.array("family.fasta")], [str(MSA_FASTA)]),
       Param("format", None, ["nope", "", 1, b"x", ["x"], 1.5, True], ["fasta"])),
    _t("MSA.filter", lambda **k: MSA4.filter(**k),
       real("max_gap_fraction", 0.3, extra=(-0.1, 1.5), none_ok=True),
       real("min_coverage", 0.5, extra=(-0.1, 1.5), none_ok=True)),
    _t("MSA.weights", lambda **k: MSA4.weights(**k), real("identity", 0.8, extra=(-0.1, 1.5))),
    _t("contact_precision", lambda **k: rm.contact_precision(**k), array("scores", S8),
       Param("structure_or_distances", D8,  # NaN is a valid distance (no residue): not hostile here
             [x for x in bad_array(D8) if not (isinstance(x, np.ndarray) and x.shape == D8.shape
                                              and x.dtype == float and not np.isinf(x).any())],
             equivalent_array(D8)),
       Param("top", "L/5", ["nope", "", "L/3", None, b"x", ["x"], 1.5, True, 0, -1, math.nan], []),
       integer("min_separation", 2, extra=POSINT, huge=False), real("cutoff", 8.0, extra=POS)),
    _t("datasets.protein_family", lambda **k: rm.datasets.protein_family(**k),
       Param("name", "rhomboid", list(BAD_CHOICE), ["RHOMBOID"]),
       real("max_gap_fraction", 0.2, extra=(-0.1, 1.5), none_ok=True)),
    _t("MixtureRidgeTheory", lambda **k: mixture_ridge.MixtureRidgeTheory(**{**MR, **k}),
       array("covariance", MR["covariance"]), array("means", MR["means"]),
       array("targets", MR["targets"], shapes=lambda s: 1 <= len(s) <= 2 and s[0] == 3 and math.prod(s) > 0)),
    _t("mixture_ridge.solve_point", lambda **k: mixture_ridge.solve_point(MR_THEORY, **k),
       real("alpha", 0.7, extra=POS), real("lam", 0.1, extra=POS)),
    _t("mixture_ridge.mixture_ridge_curve", lambda **k: mixture_ridge.mixture_ridge_curve(MR_THEORY, **k),
       grid("alpha", np.array([0.5, 1.5])), real("lam", 0.1, extra=POS)),
]


def _cases() -> list[tuple[Target, Param, object, bool]]:
    out = []
    for t in TARGETS:
        for p in t.params:
            out += [(t, p, v, False) for v in p.invalid]
            out += [(t, p, v, True) for v in p.equivalent]
    return out


CASES = _cases()


# ------------------------------------------------------------------ running one call
class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang


def _leaves(x, depth: int = 0) -> list:
    """Numeric content of a result (arrays, floats, dataclass fields, tuples, lists, dicts)."""
    if depth > 4:
        return []
    if isinstance(x, np.ndarray):
        return [x] if x.dtype.kind in "iufcb" else [leaf for y in x.ravel()[:50]
                                                       for leaf in _leaves(y, depth + 1)]
    if isinstance(x, bool | int | float | np.number | mpmath.mpf):
        return [np.asarray(float(x))]
    if isinstance(x, tuple | list):
        return [leaf for y in x for leaf in _leaves(y, depth + 1)]
    if isinstance(x, dict):
        return [leaf for y in x.values() for leaf in _leaves(y, depth + 1)]
    if is_dataclass(x):
        return [leaf for f in fields(x) if f.name not in NAN_FIELDS | TIMING_FIELDS
                for leaf in _leaves(getattr(x, f.name), depth + 1)]
    if type(x).__module__.startswith("replica_mlm"):
        return [leaf for k, v in vars(x).items() if not k.startswith("__")
                for leaf in _leaves(v, depth + 1)]
    return []


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape and np.allclose(x, y, rtol=1e-12, atol=0, equal_nan=True)
        for x, y in zip(a, b, strict=True))


@contextlib.contextmanager
def _guarded():
    """Bounded address space (so a missing size check gives MemoryError, not the OOM killer)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as fh:
        vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    limit = vm + EXTRA_ADDRESS_SPACE
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


_BASELINES: dict[str, list] = {}


def _baseline(t: Target) -> list:
    if t.name not in _BASELINES:
        _BASELINES[t.name] = _leaves(t.call(**{p.name: p.valid for p in t.params if p.name != "bogus"}))
    return _BASELINES[t.name]


def run_case(t: Target, p: Param, value, valid: bool) -> tuple[str, str]:
    """Call ``t`` with ``p = value``; return (outcome, detail). Outcome "ok" is the only pass."""
    kwargs = {q.name: q.valid for q in t.params if q.name != "bogus"}
    kwargs[p.name] = value
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, BUDGET)
        try:
            result = t.call(**kwargs)
            exc = None
        except _Hang:
            return "hang", f"> {BUDGET} s"
        except Exception as e:
            exc = e
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        dt = time.perf_counter() - t0
    fp = [w for w in caught if issubclass(w.category, RuntimeWarning | np.exceptions.ComplexWarning)
          and ("encountered" in str(w.message) or "imaginary" in str(w.message))]
    if fp:
        return "warning", f"{fp[0].category.__name__}: {fp[0].message}"
    if exc is not None:
        if type(exc) not in (ValueError, TypeError):
            return "other exception", f"{type(exc).__name__}: {exc}"[:200]
        if valid:
            return "valid input refused", f"{type(exc).__name__}: {exc}"[:200]
        if (p.label or p.name) not in str(exc):
            return "message does not name the argument", f"{type(exc).__name__}: {exc}"[:200]
        return "ok", f"refused in {dt:.3f} s"
    got = _leaves(result)
    nan = any(np.isnan(np.asarray(x, dtype=complex)).any() for x in got)
    if not valid:
        return "invalid input accepted", "returned NaN" if nan else "returned a result"
    if nan:
        return "NaN returned", ""
    if not _same(got, _baseline(t)):
        return "different result", ""
    return "ok", f"{dt:.3f} s"


def _describe(value) -> str:
    r = repr(value).replace("\n", " ")
    return r if len(r) < 60 else r[:57] + "..."


def _report(outcomes: list) -> str:
    counts = Counter(o for o, *_ in outcomes)
    lines = [f"{len(outcomes)} hostile calls: " + ", ".join(f"{k}: {v}" for k, v in counts.most_common())]
    for o, t, p, v, detail in outcomes:
        if o not in ("ok", "skipped"):
            lines.append(f"  [{o}] {t}({p}={_describe(v)}): {detail}")
    return "\n".join(lines)


def _expansions_derived() -> bool:
    """asymptotics needs the sympy expansions, derived once per process (about 40 s)."""
    from replica_mlm.theory.studies.asymptotics import expansions

    return expansions.cache_info().currsize > 0


def test_hostile_table():
    """Every case of the table once; prints the counts (pytest -s)."""
    outcomes = []
    start = time.perf_counter()
    slow = set() if _expansions_derived() else {"asymptotics"}
    spent: Counter = Counter()
    for t in TARGETS:  # the plain calls, untimed (compiles the lambdified equations once)
        if t.name not in slow and any(p.equivalent for p in t.params):
            _baseline(t)
    with _guarded():
        for t, p, v, valid in CASES:
            if valid and t.name in slow:
                outcomes.append(("skipped", t.name, p.name, v, "sympy expansions not derived yet"))
                continue
            t0 = time.perf_counter()
            o, detail = run_case(t, p, v, valid)
            outcomes.append((o, t.name, p.name, v, detail))
            spent[t.name] += time.perf_counter() - t0
    text = _report(outcomes)
    print("slowest targets:", [(k, round(v, 1)) for k, v in spent.most_common(8)])
    print(f"\n{text}\n({time.perf_counter() - start:.1f} s)")
    assert all(o in ("ok", "skipped") for o, *_ in outcomes), text


# ------------------------------------------------------------------ hypothesis
CHOICES = {"root", "iterate", "gibbs", "tempering", "auto", "linear", "softmax", "lbfgs", "sgd", "none",
           "vmf"}


def _retyped(v: np.ndarray, kind: str, x: float):
    if kind == "complex":
        c = v.astype(complex)
        c.flat[0] += 1j * (x if x != 0 else 1.0)
        return c
    return {"bool": v != 0, "str": v.astype(str), "object": v.astype(object)}[kind]


def _with_bad_entry(v: np.ndarray, k: int, x: float):
    b = v.astype(float).copy()
    b.flat[k % b.size] = x
    return b


def _hostile_value(p: Param):
    """Hypothesis strategy of invalid values for argument ``p`` (by the kind of its valid value)."""
    v = p.valid
    common = st.one_of(st.complex_numbers(allow_nan=True).filter(lambda z: z.imag != 0),
                       st.text(max_size=5), st.binary(max_size=3), st.none(),
                       st.sampled_from([math.nan, math.inf, -math.inf]))
    if isinstance(v, np.ndarray):
        shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
        return st.one_of(
            st.builds(_retyped, st.just(v), st.sampled_from(["complex", "bool", "str", "object"]),
                      st.floats(-3, 3)),
            hnp.arrays(np.float64, shapes.filter(lambda s: not p.valid_shape(s)),
                       elements=st.floats(0.1, 0.9)),
            st.builds(_with_bad_entry, st.just(v), st.integers(0, 100),
                      st.sampled_from([math.nan, math.inf, -math.inf])),
            common.filter(lambda x: x is not None),
        )
    if p.name in ("rng", "seed"):
        return st.one_of(st.integers(max_value=-1), st.floats(), st.booleans(), st.text(max_size=3),
                         st.complex_numbers())
    if isinstance(v, bool):
        return st.one_of(st.integers(), st.text(max_size=3), st.floats(), st.none())
    if isinstance(v, str):  # None is valid where the parameter lists it as an equivalent spelling
        return st.one_of(st.text(max_size=6).filter(lambda s: s not in CHOICES), st.integers(),
                         st.none(), st.binary(max_size=3)).filter(
            lambda x: not (x is None and None in p.equivalent))
    if isinstance(v, int):
        ints = [st.floats(), st.booleans(), st.text(max_size=3),
                st.complex_numbers().filter(lambda z: z.imag != 0)]
        if p.huge_invalid:
            ints.append(st.integers(min_value=10**18))
        return st.one_of(*ints)
    if isinstance(v, float):
        return st.one_of(common.filter(lambda x: x is not None), st.booleans(),
                         hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2).filter(
                             lambda s: not p.valid_shape(s))))
    return common


# top (contact_precision) takes "L/5"-like strings and positive ints alike, and its distances take NaN
# (a residue without coordinates): their hostile values are in the table, not drawn by the kind of
# their valid value
_SCALAR_TARGETS = [(t, p) for t in TARGETS for p in t.params
                   if p.name not in ("bogus", "fit_info", "bounds", "task", "site", "path", "top",
                                     "structure_or_distances")
                   and p.valid is not None]


@settings(max_examples=250, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_hypothesis(data):
    t, p = data.draw(st.sampled_from(_SCALAR_TARGETS), label="argument")
    value = data.draw(_hostile_value(p), label="value")
    if p.name in ("n_chains", "n_rungs", "precision", "batch_size") and value is None:
        return  # None is the documented default of these
    if p.name == "bogus":
        return
    with _guarded():
        outcome, detail = run_case(t, p, value, valid=False)
    assert outcome == "ok", f"{t.name}({p.name}={_describe(value)}): {outcome}: {detail}"


def test_every_public_name_is_driven():
    """The table covers every callable of rm.__all__ that takes input."""
    skipped = {"Asymptotics", "ConvergenceError", "LearningCurve", "MulticlassCurve", "MulticlassSaddlePoint",
               "OptimalLambda", "OnlineSGD", "GradientFlow",
               "PhaseDiagram", "SaddlePoint", "Simulation", "ValidityWarning", "__version__", "plotting"}
    driven = {t.name.split(".")[0].split("(")[0] for t in TARGETS}
    missing = set(rm.__all__) - skipped - driven
    assert not missing, missing



# ---------------------------------------------------------------- issue 22: wrong answers that look right
def _ab():
    import sympy as sp

    return sp, *sp.symbols("a b", real=True)


def test_from_sympy_refuses_text_and_non_expressions():
    """A string is refused (never evaluated by sympify), as are None and plain numbers."""
    _, a, b = _ab()
    with pytest.raises(TypeError, match=r"expr must be a sympy expression.*string"):
        rm.losses.Loss.from_sympy("(y-z)**2", a, b)
    for bad in (None, 3, 2.5, np.float64(1.0)):
        with pytest.raises(TypeError, match="expr must be a sympy expression"):
            rm.losses.Loss.from_sympy(bad, a, b)
    with pytest.raises(ValueError, match="two different symbols"):
        rm.losses.Loss.from_sympy((a - b) ** 2, a, a)


def test_from_sympy_refuses_complex_infinite_and_discontinuous_losses():
    sp, a, b = _ab()
    cases = {sp.I * b: "imaginary unit", sp.zoo * b: "finite", b**2 + sp.nan * a: "finite",
             sp.floor(b): "floor", sp.ceiling(b) + b**2: "ceiling", sp.Heaviside(b): "Heaviside",
             b**2 + sp.sign(b): "sign", sp.Function("f")(b): "known functions"}
    for expr, what in cases.items():
        with pytest.raises(ValueError, match=f"expr must .*{what}"):
            rm.losses.Loss.from_sympy(expr, a, b)


def test_non_convex_losses_are_refused_naming_a_point():
    """-|y - z| and min(z^2, 1) were accepted and "solved" with converged=True."""
    sp, a, b = _ab()
    for expr in (-sp.Abs(a - b), sp.Min(b**2, 1), sp.Piecewise((b**2, b < 0), (b**2 + 1, True))):
        with pytest.raises(ValueError, match=r"not convex in z: .* at \(y, z\) = \("):
            rm.losses.Loss.from_sympy(expr, a, b)
    # built directly (no check at construction): refused at the first node the solver evaluates
    from replica_mlm.theory.symbolic.expressions import y, z

    direct = rm.losses.Loss(-sp.Abs(y - z), name="direct")
    with pytest.raises(ValueError, match=r"'direct' .* not convex in z: .*concave kink.* \(y, z\) = \("):
        rm.solve(LIMIT, alpha=0.5, lam=1e-3, loss=direct)


def test_a_loss_convex_only_near_zero_is_refused_where_the_solver_leaves_that_range():
    """(y - z)^2/2 - z^4/10^4 is convex for |z| < 40.8 only (the grid check at construction
    covers |z| <= 5): the nodes of this point reach z = 29 and beyond, where loss'' < 0."""
    _, a, b = _ab()
    bad = rm.losses.Loss.from_sympy((a - b) ** 2 / 2 - b**4 / 10000, a, b, name="quartic-bad")
    with pytest.raises(ValueError, match=r"'quartic-bad' .* not convex in z: loss'' = -[\d.e-]+ < 0 at "
                                         r"\(y, z\) = \("):
        rm.solve(LIMIT, alpha=0.5, lam=1e-3, loss=bad)
    assert not bad.convex_proven


def test_convex_losses_are_proven_and_solve_with_the_same_numbers():
    """The built-in losses and a pseudo-Huber loss are proven convex by sympy (no check per
    call); the per-call check, when it runs, does not change a number."""
    from replica_mlm.theory.sides import convexity
    sp, a, b = _ab()
    for loss in (rm.losses.Square(), rm.losses.Absolute(), rm.losses.Huber(delta=0.8),
                 rm.losses.Logistic(), rm.losses.Hinge()):
        assert loss.convex_proven and convexity.prove(loss.expr), loss.name
    ph = rm.losses.Loss.from_sympy(sp.sqrt(1 + (a - b) ** 2) - 1, a, b, name="pseudo-huber")
    assert ph.convex_proven
    checked = rm.losses.Loss.from_sympy(sp.sqrt(1 + (a - b) ** 2) - 1, a, b, name="pseudo-huber")
    checked.convex_proven = False  # force the check at every node
    s1 = rm.solve(LIMIT, alpha=1.5, lam=0.1, loss=ph)
    s2 = rm.solve(LIMIT, alpha=1.5, lam=0.1, loss=checked)
    assert s1.converged and s1.residual <= 1e-10
    for k in ("eg", "m", "q", "V", "m_hat", "q_hat", "V_hat", "train_loss", "test_loss"):
        assert getattr(s1, k) == getattr(s2, k), k
    for expr in (-sp.Abs(a - b), (a - b) ** 2 / 2 - b**4 / 10000, sp.Min(b**2, 1)):
        from replica_mlm.theory.symbolic.expressions import y, z

        assert not convexity.prove(expr.subs({a: y, b: z}))


def test_one_rule_for_loss_channel_pairs_in_solve_curve_and_cli(tmp_path):
    """hinge + gaussian: rm.solve returned converged=True while the CLI refused the pair."""
    from click.testing import CliRunner

    from replica_mlm.cli import main

    with pytest.raises(ValueError, match="binary labels") as exc:
        rm.solve(LIMIT, alpha=1.5, lam=0.1, loss="hinge", channel="gaussian")
    with pytest.raises(ValueError) as exc_curve:
        rm.learning_curve(SITE, alpha=[0.5, 1.5], lam=0.1, loss="logistic", channel="gaussian")
    assert "binary labels" in str(exc_curve.value)
    res = CliRunner().invoke(main, ["curve", "--loss", "hinge", "--channel", "gaussian",
                                    "--out", str(tmp_path / "c")])
    assert res.exit_code == 2 and str(exc.value) in " ".join(res.output.split())
    # a custom loss declares its labels; undeclared ones go with any channel
    sp, a, b = _ab()
    mine = rm.losses.Loss.from_sympy(sp.log(1 + sp.exp(-a * b)), a, b, labels="binary")
    with pytest.raises(ValueError, match="needs binary labels"):
        rm.solve(LIMIT, alpha=1.5, lam=0.1, loss=mine)
    assert rm.solve(LIMIT, alpha=1.5, lam=0.1, loss=mine, channel="sign").converged
    with pytest.raises(ValueError, match="lam must be > 0 for the general engine"):
        rm.learning_curve(LIMIT, alpha=[0.5, 1.5], lam=0.0, loss="absolute")


def test_simulate_checks_n_test_for_every_task():
    """n_test was ignored (never checked) for a MaskedSite, whose test quantities are exact."""
    for bad, error in ((100, ValueError), (0, ValueError), ("x", TypeError), (2.5, TypeError)):
        with pytest.raises(error, match="n_test"):
            rm.simulate(SITE, alpha=2.0, lam=0.1, seeds=2, n_test=bad)
    ising = rm.PottsModel.random_ising(L=4, beta=0.5, rng=0)
    with pytest.raises(ValueError, match=r"n_test=1000000000000000.*memory"):
        rm.simulate(ising, site=1, alpha=2.0, lam=0.1, seeds=2, loss="logistic", n_test=10**15)


def test_masked_site_checks_rng_and_samples_also_when_it_enumerates():
    """At L <= 16 (Ising) or q**L <= 2**22 (Potts) the covariance is exact and rng/samples were
    never looked at."""
    for model in (rm.PottsModel.random_ising(L=4, beta=0.5, rng=0), rm.PottsModel.random(L=3, q=3, seed=0)):
        for kw, error in ((dict(rng="abc"), TypeError), (dict(rng=-1), ValueError),
                          (dict(rng=1.5), TypeError), (dict(samples=0), ValueError),
                          (dict(samples=2.5), TypeError), (dict(samples="x"), TypeError)):
            name = next(iter(kw))
            with pytest.raises(error, match=name):
                model.masked_site(1, **kw)


def test_masked_arrays_are_refused_where_arrays_enter():
    """A fully masked array was used as if it were not masked (its hidden entries as data)."""
    def masked(a):
        return np.ma.masked_array(np.asarray(a), mask=np.ones(np.shape(a), dtype=bool))

    cases = {
        "covariance": lambda: rm.MaskedSite(covariance=masked(COV), teacher=TEACHER, noise=0.3),
        "teacher": lambda: rm.MaskedSite(covariance=COV, teacher=masked(TEACHER), noise=0.3),
        "noise": lambda: rm.MaskedSite(covariance=COV, teacher=TEACHER, noise=np.ma.masked),
        "omega": lambda: rm.Spectrum(omega=masked([0.5, 2.0]), bulk=[0.25, 0.75], teacher=[0.1, 0.3],
                                     noise=0.2),
        "couplings": lambda: rm.GaussianPotts(couplings=masked(SYM), shift=3.0),
        "alpha": lambda: rm.solve(SITE, alpha=masked(0.7), lam=0.1),
        "lam": lambda: rm.learning_curve(SITE, alpha=[0.5, 1.5], lam=[masked(0.1), 0.2]),
        "weights": lambda: SITE.generalisation_error(masked(TEACHER)),
        "seqs": lambda: PM.energy(masked(SEQS)),
    }
    for name, call in cases.items():
        with pytest.raises(TypeError, match=f"{name} is a numpy masked array: masked arrays are not "
                                            "supported; pass data with the masked entries removed or filled"):
            call()


def test_huge_finite_covariances_are_refused_before_they_overflow():
    """A covariance with entries 1e308 became inf when symmetrised (and its eigenvalues NaN, the
    error then naming "omega"); couplings 1e308 gave "shift must exceed ... nan"."""
    huge = COV / np.abs(COV).max() * 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way to the refusal
        with pytest.raises(ValueError, match=r"covariance has an entry of magnitude 1e\+308; at most"):
            rm.MaskedSite(covariance=huge, teacher=TEACHER, noise=0.3)
        with pytest.raises(ValueError, match=r"covariance has trace .* at most 1e\+150"):
            rm.MaskedSite(covariance=COV / np.trace(COV) * 2e150, teacher=TEACHER, noise=0.3)
        with pytest.raises(ValueError, match=r"teacher has norm .* at most 1e\+150"):
            rm.MaskedSite(covariance=COV, teacher=TEACHER / np.abs(TEACHER).max() * 1e100, noise=0.3)
        with pytest.raises(ValueError, match=r"couplings has an entry of magnitude 1e\+308"):
            rm.GaussianPotts(couplings=SYM / np.abs(SYM).max() * 1e308, shift=3.0)
        with pytest.raises(ValueError, match=r"omega has an entry of magnitude 1e\+308"):
            rm.Spectrum(omega=[1e308, 2.0], bulk=[0.25, 0.75], teacher=[0.1, 0.3], noise=0.2)
    # the bound leaves large but safe scales alone, with the numbers of the rescaled task
    big = rm.MaskedSite(covariance=COV * 1e100, teacher=TEACHER, noise=0.3)
    assert np.allclose(big.spectrum.omega, SITE.spectrum.omega * 1e100, rtol=1e-12)


# ---------------------------------------------------------------- issue 22: processes and files
import errno  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import select  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ORPHAN_SCRIPT = """
import os, sys, time
sys.path.insert(0, {root!r})
from replica_mlm._base.sweep import run_sweep
from replica_mlm._base.pool import Task, run_tasks

def nap(point, rng=None):
    os.write(1, b"%d\\n" % os.getpid())  # the worker's pid, for the test (one write)
    time.sleep(60)
    return {{}}

if {pool!r} == "sweep":
    run_sweep(nap, [{{"k": 0}}, {{"k": 1}}], workers=2)
else:
    run_tasks([Task(nap, ({{}},)), Task(nap, ({{}},))], workers=2)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("pool", ["sweep", "tasks"])
def test_pool_workers_die_with_a_killed_parent(pool):
    """SIGKILL of the process that runs a pool (run_sweep, run_tasks) ends its workers within 5 s."""
    proc = subprocess.Popen([sys.executable, "-c", ORPHAN_SCRIPT.format(root=str(ROOT), pool=pool)],
                            stdout=subprocess.PIPE)
    pids: list[int] = []
    try:
        out, deadline = b"", time.monotonic() + 60
        while out.count(b"\n") < 2 and time.monotonic() < deadline:
            if select.select([proc.stdout], [], [], 1.0)[0]:
                chunk = os.read(proc.stdout.fileno(), 1024)
                assert chunk, f"the parent ended before its workers started: {proc.wait()}"
                out += chunk
        pids = [int(p) for p in out.split()]
        assert len(pids) == 2 and proc.pid not in pids
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 5
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(p) for p in pids), f"workers {pids} outlived their killed parent"
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        for pid in pids:  # the orphans of a failed run
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


KILLED_SAVE_SCRIPT = """
import json, os, random, signal, sys, time
sys.path.insert(0, {root!r})
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from replica_mlm.plotting import save, style

with style():
    fig, ax = plt.subplots(figsize=(3, 2))
    x = np.linspace(0, 10, 200)
    for k in range(3):
        ax.plot(x, np.sin(x + k) * np.exp(-x / (k + 1)), label=f"curve {{k}}")
    ax.legend()
save(fig, os.path.join({folder!r}, "probe"))  # the first save loads fonts
t0 = time.perf_counter()
save(fig, os.path.join({folder!r}, "probe"))
one = time.perf_counter() - t0  # the time of one save (PNG and PDF)

def valid(path):
    if not os.path.exists(path):
        return "absent"
    data = open(path, "rb").read()
    if path.endswith(".png"):
        ok = data.startswith(b"\\x89PNG\\r\\n\\x1a\\n") and data.endswith(b"IEND\\xaeB`\\x82")
    else:
        ok = data.startswith(b"%PDF") and data.rstrip().endswith(b"%%EOF")
    return "complete" if ok else f"partial ({{len(data)}} bytes)"

rng = random.Random(2022)
results = []
for trial in range({trials}):
    stem = os.path.join({folder!r}, f"fig{{trial}}")
    pid = os.fork()
    if pid == 0:  # the child saves the figure again and again until it is killed
        while True:
            save(fig, stem)
    time.sleep(rng.uniform(0.0, 2.0 * one))
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    results.append([valid(stem + ".png"), valid(stem + ".pdf")])
print(json.dumps({{"one_save_seconds": one, "results": results}}))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks the saving process")
def test_a_figure_killed_while_saved_is_never_partial(tmp_path):
    """SIGKILL at random moments of plotting.save leaves each of the PNG and the PDF complete or
    absent under its name, never partial (0 bytes, or cut before the PNG's IEND / the PDF's %%EOF)."""
    code = KILLED_SAVE_SCRIPT.format(root=str(ROOT), folder=str(tmp_path), trials=6)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    partial = [r for r in report["results"] if any(v.startswith("partial") for v in r)]
    assert not partial, f"partial figures after a kill: {report}"
    assert any("complete" in r for r in report["results"])  # some kill came after a finished save


CURVE_ARGS = ["curve", "--L", "20", "--points", "4", "--alpha-max", "3", "--lam", "0.1", "--lam", "1"]


def _files(folder: Path) -> dict[str, bytes]:
    if not folder.exists():  # a run that wrote nothing leaves no folder it created
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != ".replica-mlm.lock"}


def test_a_full_disk_names_the_file_and_leaves_the_previous_set(tmp_path, monkeypatch):
    """ENOSPC at the first, a middle or the last write of ``replica-mlm curve`` (csv, png, pdf, json):
    exit status 2 with one line naming the file, and the folder keeps its previous complete set byte
    for byte (no temporary file); into a fresh folder, nothing is left, curve.json least of all."""
    from click.testing import CliRunner

    from replica_mlm.cli import main

    out = tmp_path / "c"
    assert CliRunner().invoke(main, [*CURVE_ARGS, "--out", str(out)]).exit_code == 0
    before = _files(out)
    assert sorted(before) == [".replica-mlm-curve.files.json", "curve.csv", "curve.json", "curve.pdf",
                              "curve.png"]
    real_write, calls = os.write, []

    def counting(fd, data):
        calls.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", counting)
    assert CliRunner().invoke(main, [*CURVE_ARGS, "--out", str(tmp_path / "count")]).exit_code == 0
    n_writes = len(calls) - 1  # the last write is the run manifest's, after the set is committed
    assert n_writes >= 4

    def full_at(n):
        def write(fd, data):
            calls.append(len(data))
            if len(calls) == n:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_write(fd, data)
        return write

    for folder, n in [(out, 1), (out, n_writes // 2), (out, n_writes), (tmp_path / "fresh", n_writes)]:
        calls.clear()
        monkeypatch.setattr(os, "write", full_at(n))
        # --overwrite: a second run into a folder that holds a set is refused without it (issue 28)
        res = CliRunner().invoke(main, [*CURVE_ARGS, "--out", str(folder), "--overwrite"])
        lines = res.stderr.splitlines()  # the "solving ..." note, then the one error line
        assert res.exit_code == 2 and sum(line.startswith("Error:") for line in lines) == 1, (n, res.output)
        assert all(line.startswith(("Error:", "solving ")) for line in lines), (n, res.output)
        named = re.fullmatch(rf"Error: {re.escape(str(folder))}/curve\.(csv|png|pdf|json): "
                             rf"{os.strerror(errno.ENOSPC)}", lines[-1])
        assert named, (n, res.stderr)
        assert _files(folder) == (before if folder == out else {}), n


@contextlib.contextmanager
def _deadline(seconds: float):
    """SIGALRM after ``seconds``: a call that would block for ever raises _Hang instead."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _draw(point, rng):
    """A sweep point without a solver."""
    return {"x": float(rng.standard_normal())}


def test_load_refuses_a_truncated_curve_table(tmp_path):
    """A curve.csv cut at the boundary between its two curves no longer reads as one curve; cut
    inside a row, it is refused too; both errors name the file."""
    from click.testing import CliRunner

    from replica_mlm.cli import main

    out = tmp_path / "c"
    assert CliRunner().invoke(main, [*CURVE_ARGS, "--out", str(out)]).exit_code == 0
    path = out / "curve.csv"
    text = path.read_text()
    assert len(rm.load(path)) == 2
    lines = text.splitlines(keepends=True)
    per_curve = (len(lines) - 1) // 2
    path.write_text("".join(lines[:1 + per_curve]))  # the first curve only, every row intact
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))} has {per_curve} rows, but curve.json"):
        rm.load(path)
    path.write_text(text[:-5])  # cut inside the last row
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))} is cut inside its last row"):
        rm.load(path)


def test_load_refuses_numbers_the_writer_never_writes(tmp_path):
    """1e999 (read as inf by float) in a curve table, in any other table and in JSON is refused,
    naming the file; the writer writes inf / Infinity."""
    curves = rm.learning_curve(rm.GaussianPotts.limit(shift=3.0), alpha=[0.5, 2.0], lam=0.1)
    curves.to_csv(tmp_path / "c.csv")
    text = (tmp_path / "c.csv").read_text()
    eg = repr(float(curves.eg[0]))
    assert text.count(f",{eg},") == 1
    (tmp_path / "c.csv").write_text(text.replace(f",{eg},", ",1e999,"))
    (tmp_path / "t.csv").write_text("alpha,eg\n0.5,1e999\n")
    (tmp_path / "x.json").write_text('{"eg": 1e999}\n')
    for name in ("c.csv", "t.csv", "x.json"):
        with pytest.raises(ValueError, match=re.escape(str(tmp_path / name))):
            rm.load(tmp_path / name)


def test_load_reads_a_file_with_a_byte_order_mark_as_without(tmp_path):
    curves = rm.learning_curve(rm.GaussianPotts.limit(shift=3.0), alpha=[0.5, 2.0], lam=[0.1, 1.0])
    from replica_mlm.theory.studies.curve import curves_to_csv

    text = curves_to_csv(curves)
    (tmp_path / "c.csv").write_text("\ufeff" + text, encoding="utf-8")
    back = rm.load(tmp_path / "c.csv")
    assert isinstance(back, list) and len(back) == 2
    assert all(np.array_equal(a.eg, b.eg) and a.lam == b.lam for a, b in zip(back, curves, strict=True))
    (tmp_path / "x.json").write_text("\ufeff" + rio.dumps({"eg": [0.5, np.inf]}), encoding="utf-8")
    assert rm.load(tmp_path / "x.json") == {"eg": [0.5, np.inf]}


def test_load_and_resume_refuse_fifos_and_devices_at_once(tmp_path, monkeypatch):
    """A FIFO or a link to /dev/zero under a file's name is refused at once (ValueError naming it),
    by rm.load and by a sweep's resume (which reads under the folder lock); so is an oversized file."""
    from replica_mlm import results
    from replica_mlm._base.sweep import BadPointFile, run_sweep

    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    sweep = tmp_path / "sweep"
    run_sweep(_draw, [{"k": 0}, {"k": 1}], out=sweep)
    (sweep / "point-00001.json").unlink()
    os.mkfifo(sweep / "point-00001.json")
    with _deadline(5.0):
        with pytest.raises(ValueError, match=rf"{re.escape(str(tmp_path / 'fifo.csv'))} is a FIFO"):
            rm.load(tmp_path / "fifo.csv")
        with pytest.raises(BadPointFile, match=r"point-00001.json in .* \(a FIFO \(named pipe\), not a"):
            run_sweep(_draw, [{"k": 0}, {"k": 1}], out=sweep, resume=True)
        with pytest.raises(ValueError, match=rf"{re.escape(str(tmp_path / 'zero.json'))} is a character"):
            rm.load(tmp_path / "zero.json")
    (tmp_path / "big.json").write_text('{"x": 1}\n')
    monkeypatch.setattr(results, "MAX_BYTES", 4)
    with pytest.raises(ValueError, match=r"big.json is longer than 4 bytes"):
        rm.load(tmp_path / "big.json")


def test_an_empty_out_is_a_usage_error_and_writes_nothing(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from replica_mlm.cli import main

    monkeypatch.chdir(tmp_path)
    for command in (CURVE_ARGS, ["paper-fig2"]):
        res = CliRunner().invoke(main, [*command, "--out", ""])
        assert res.exit_code == 2, res.output
        assert "Invalid value for '--out': must name a folder" in res.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_an_unwritable_out_says_so_not_another_run():
    """--out /proc/self (no file can be created there) is not "another run is writing"."""
    from click.testing import CliRunner

    from replica_mlm.cli import main

    res = CliRunner().invoke(main, [*CURVE_ARGS, "--out", "/proc/self"])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("Error: /proc/self: not a writable folder")
    assert "another run" not in res.stderr and len(res.stderr.splitlines()) == 1


def test_a_sweep_removes_only_its_own_leftover_temporaries(tmp_path, monkeypatch):
    """The next run into a sweep folder removes the temporaries a killed run left (named as
    the writer names them) and nothing else: a user's own .*.tmp files stay."""
    from replica_mlm._base.sweep import run_sweep

    real_replace, renamed = os.replace, []

    def replace(src, dst):  # learn the writer's name for a temporary point file
        renamed.append(Path(src).name)
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    rio.write_json(tmp_path / "point-00001.json", {})
    monkeypatch.undo()
    (tmp_path / "point-00001.json").unlink()
    ours = [renamed[0], ".fingerprint.json.0123456789ab.tmp"]
    users = [".notes.tmp", ".point-00001.json.tmp", ".data.0123456789ab.tmp",
             ".point-7.json.0123456789ab.tmp"]
    for name in ours + users:
        (tmp_path / name).write_text("x")
    run_sweep(_draw, [{"k": 0}, {"k": 1}], out=tmp_path)
    assert sorted(p.name for p in tmp_path.glob(".*.tmp")) == sorted(users)


# ---------------------------------------------------------------- issue 22: hangs and raw exceptions
#: seconds one call of this section may take: every refusal below is immediate, and the old code
#: hung, so a hang fails the test quickly (SIGALRM, as in the table) instead of hanging the suite
QUICK = 3.0
P3 = rm.PottsModel.random(L=4, q=3, seed=0, beta=0.5)  # q = 3 colours: the multi-class theory


@contextlib.contextmanager
def _within(seconds: float = QUICK):
    """The table's guard (SIGALRM, bounded address space) around one block: a hang raises _Hang."""
    with _guarded():
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)


def _transformer_fit(epochs):
    from replica_mlm.learners.transformer import TransformerMLM

    return TransformerMLM(L=3, q=2, layers=1, d_model=4, heads=1, rng=0).fit(SEQS, epochs=epochs)


@pytest.mark.parametrize("call,names", [
    (lambda: _transformer_fit(10**100), "epochs"),
    (lambda: _transformer_fit(10**12), "epochs"),
    (lambda: PM.sample(10, burn_in=10**12, sweeps_between=1), "burn_in"),
    (lambda: PM.sample(10, burn_in=10**12, sweeps_between=1, method="tempering", n_rungs=3), "burn_in"),
    (lambda: PM.run_chains(SEQS[:4], n_sweeps=10**12), "n_sweeps"),
    (lambda: rm.solve(P3.masked_site(0), alpha=2.0, lam=0.1, integration="sobol", randomisations=10**6),
     "randomisations"),
], ids=["fit-epochs-1e100", "fit-epochs-1e12", "sample-burn_in", "sample-tempering-burn_in",
        "run_chains-n_sweeps", "sobol-randomisations"])
def test_iteration_counts_beyond_the_work_limit_are_refused_up_front(call, names):
    """Loops over tiny arrays are bounded by their steps (each >= 10 us), before any work."""
    from replica_mlm._base import checks as _checks

    with _within(), pytest.raises(ValueError) as info:
        call()
    msg = str(info.value)
    assert names in msg and f"{float(_checks.WORK_LIMIT):.0e}" in msg, msg


def test_tune_beta_runs_beyond_the_machine_are_refused_up_front():
    # n_replicas = 1e12 was a MemoryError after the scans; the largest verification run (4 n_replicas
    # replicas, max_sweeps steps) is now checked by the pilot's size check first
    with _within(), pytest.raises(ValueError, match=r"tune_beta\(n_replicas=1000000000000, .* of memory"):
        PM.tune_beta(0.3, method="tempering", n_replicas=10**12)


@pytest.mark.parametrize("loss,alpha", [("logistic", 1e300), ("hinge", 1e16)])
def test_general_engine_refuses_alpha_beyond_its_range(loss, alpha):
    # 1e300: OverflowError in the cold start; hinge at 1e16: a spurious fixed point with V_hat = 0
    with _within(), pytest.raises(ValueError) as info:
        rm.solve(SITE, alpha=alpha, lam=0.1, loss=loss, channel="sign")
    from replica_mlm.theory.solvers import engine
    assert f"alpha must be <= {engine.ALPHA_MAX:g}" in str(info.value)


def test_general_engine_tends_to_the_population_minimiser_at_large_alpha():
    """Up to ALPHA_MAX the engine converges (it raised ConvergenceError from 1e8): eg tends to that
    of w ~ w*, arccos(sqrt(rho / (rho + sigma^2))) / pi, with a correction c / alpha of one c."""
    spec = SITE.spectrum
    limit = math.acos(math.sqrt(spec.rho / (spec.rho + spec.noise))) / math.pi
    alphas = np.array([1e8, 1e10, 1e12])
    with _within(3 * QUICK):
        eg = np.array([rm.solve(SITE, alpha=a, lam=0.1, loss="logistic", channel="sign").eg for a in alphas])
    scaled = alphas * (eg / limit - 1)
    assert np.all(scaled > 0) and np.allclose(scaled, scaled[0], rtol=1e-3), scaled


def _mp_separability(s, channel: str) -> float:
    """alpha_c at label slope s by 17-digit mpmath quadrature of the original integral in v, with
    breakpoints at +-10/s and +-60/s where the label noise sits (the logit tail is exponential)."""
    mpmath.mp.dps = 17
    if channel == "sign":
        def prob(v):
            return mpmath.ncdf(s * v)
    else:
        def prob(v):
            return 1 / (1 + mpmath.exp(-s * v))

    def g(a):
        return (1 + a * a) * mpmath.ncdf(-a) - a * mpmath.npdf(a)

    def gp(a):
        return -2 * (mpmath.npdf(a) - a * mpmath.ncdf(-a))

    pts = [-mpmath.inf, -60 / s, -10 / s, 0, 10 / s, 60 / s, mpmath.inf]
    t = mpmath.findroot(lambda t: mpmath.quad(lambda v: mpmath.npdf(v) * prob(v) * gp(t * v) * v, pts), s)
    return float(1 / (2 * mpmath.quad(lambda v: mpmath.npdf(v) * prob(v) * g(t * v), pts)))


@pytest.mark.parametrize("task,channel", [
    (rm.Spectrum(omega=[1.0], bulk=[1.0], teacher=[1.0], noise=1e-10), "sign"),  # s = 1e5
    (rm.Spectrum(omega=[1.0], bulk=[1.0], teacher=[1e12], noise=0.0), "logit"),  # rho = 1e12: s = 1e6
], ids=["sign-noise-1e-10", "logit-rho-1e12"])
def test_separability_of_nearly_noiseless_labels_is_exact(task, channel):
    # was ZeroDivisionError (quad missed the noise at |v| ~ 1/s and the objective came out 0)
    spec = task
    s = math.sqrt(spec.rho / spec.noise) if channel == "sign" else math.sqrt(spec.rho)
    with _within():
        got = rm.separability_threshold(task, channel=channel)
    assert got == pytest.approx(_mp_separability(mpmath.mpf(s), channel), rel=1e-14)


@pytest.mark.parametrize("noise", [1e-320, 5e-324])
def test_separability_beyond_the_float_range_is_a_named_error(noise):
    # the largest accepted spectrum and teacher (1e150 each: rho = 1e300) with subnormal noise:
    # alpha_c ~ 1.8 sqrt(rho / noise) is beyond float64, and so is the label slope itself
    task = rm.Spectrum(omega=[1e150], bulk=[1.0], teacher=[1e150], noise=noise)
    with _within(), pytest.raises(ValueError, match="rho = 1e\\+300 and noise"):
        rm.separability_threshold(task, channel="sign")
    # within the range the scaling holds: alpha_c / sqrt(rho / noise) is the same at 1e-200 and 1e-300
    ratios = [rm.separability_threshold(rm.Spectrum(omega=[1.0], bulk=[1.0], teacher=[t], noise=n),
                                        channel="sign") / (math.sqrt(t) / math.sqrt(n))
              for t, n in ((1.0, 1e-200), (1e150, 1e-300))]
    assert ratios[0] == pytest.approx(ratios[1], rel=1e-10)


@pytest.mark.parametrize("make,name", [
    (lambda: rm.MaskedSite(covariance=COV * 1e-300, teacher=TEACHER, noise=0.3), "covariance"),
    (lambda: rm.PottsSite(covariance=COV * 1e-300, teacher=TEACHER[:, None], p=2, noise=0.3,
                          channel="gaussian"), "covariance"),
    (lambda: rm.Spectrum(omega=[5e-301, 2e-300], bulk=[0.5, 0.5], teacher=[0.1, 0.3], noise=0.2), "omega"),
], ids=["MaskedSite", "PottsSite", "Spectrum"])
def test_covariance_of_vanishing_scale_is_refused_at_construction(make, name):
    # was accepted, then 'math domain error' (general engine), ConvergenceError (lam = 0) or
    # overflow warnings (asymptotics) depending on the path
    with _within(), pytest.raises(ValueError) as info:
        make()
    from replica_mlm._base import checks as _checks

    assert re.match(f"{name} is too small .* {_checks.MIN_SCALE:g}", str(info.value)), info.value


def test_general_engine_with_a_field_below_float64_names_lam():
    # lam = 1e300: q ~ (omega / lam)^2 underflows; was 'math domain error' from math.log(0)
    with _within(), pytest.raises(ValueError, match="lam = 1e\\+300 is too large"):
        rm.solve(SITE, alpha=2.0, lam=1e300, loss="logistic", channel="sign")


@pytest.mark.parametrize("call,match", [
    (lambda: rm.solve(SITE, alpha=2.0, lam=0.1, loss="logistic", channel="sign", order=2**64),
     "order must be <= 1024"),
    (lambda: rm.solve(P3.masked_site(0), alpha=2.0, lam=0.1, order=2**64), "order = 18446744073709551616"),
    (lambda: rm.solve(P3.masked_site(0), alpha=2.0, lam=0.1, order=90), "order = 90: the error check"),
], ids=["general-engine", "multiclass-hermite", "multiclass-finer-rule"])
def test_order_beyond_its_range_is_a_named_error(call, match):
    # was ConvergenceError (general engine) or, for the error check's finer rule, a message without
    # 'order' after the first (minutes long) solve
    with _within(), pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call", [
    lambda: rm.simulate(SITE, alpha=2.0, lam=0.1, seeds=2, rng=0, threads=2**64),
    lambda: rm.TransformerMLM(L=3, q=2, layers=1, d_model=4, heads=1, threads=2**64),
], ids=["simulate", "TransformerMLM"])
def test_threads_beyond_the_allowed_range_is_a_named_error(call):
    # was ctypes.ArgumentError (threadpoolctl) or an unnamed overflow from torch.set_num_threads
    with _within(), pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith("threads must be <= "), info.value
    from replica_mlm._base.threads import MAX_THREADS

    assert f"<= {MAX_THREADS} (the allowed range is 1 to {MAX_THREADS}" in str(info.value)


def test_iterate_with_init_none_takes_the_default_start():
    with _within():
        default = rm.solve(SITE, alpha=2.0, lam=0.1, method="iterate")
        none = rm.solve(SITE, alpha=2.0, lam=0.1, method="iterate", init=None)
    assert none == default
    with _within(), pytest.raises(ValueError, match="init must be \\(V, q, m\\)"):
        rm.solve(SITE, alpha=2.0, lam=0.1, method="iterate", init=5.0)


@pytest.mark.parametrize("sims", [[[[1.0, 0.1, 0.2, 0.01]]], [[(1.0, 0.1, 0.2, 0.01)]], [(1.0, 0.1)]],
                         ids=["nested-lists", "nested-tuples", "two-numbers"])
def test_plot_learning_curves_refuses_other_simulation_shapes(sims):
    import matplotlib

    matplotlib.use("Agg")
    curve = rm.learning_curve(SITE, alpha=[0.5, 1.5], lam=0.1)
    with _within(), pytest.raises(TypeError, match=r"simulations must be .*\(alpha, lam, mean, stderr\)"):
        rm.plotting.plot_learning_curves([curve], simulations=sims)


@pytest.mark.parametrize("z,error", [([0.1, math.nan], ValueError), ([0.1, math.inf], ValueError),
                                     ([0.1, 1j], TypeError), (np.array([0.5, 1 + 1j]), TypeError)],
                         ids=["nan", "inf", "complex", "complex-array"])
def test_plot_z_histogram_refuses_non_finite_and_complex_z(z, error):
    import matplotlib

    matplotlib.use("Agg")
    with _within(), pytest.raises(error, match=r"^z "):
        rm.plotting.plot_z_histogram(z)


ISING = rm.PottsModel.random_ising(L=4, beta=0.5, rng=0)


@pytest.mark.parametrize("model,loss", [(P3, "cross_entropy"), (ISING, "logistic")], ids=["q3", "ising"])
def test_simulate_on_a_potts_model_takes_the_default_loss_of_its_task(model, loss):
    with _within():
        default = rm.simulate(model, site=0, alpha=2.0, lam=0.1, seeds=2, rng=0)
        named = rm.simulate(model, site=0, alpha=2.0, lam=0.1, seeds=2, rng=0, loss=loss)
    from replica_mlm.theory.sides.task_loss import default_loss

    assert default.loss == loss == default_loss(model)
    assert np.array_equal(default.eg, named.eg) and np.array_equal(default.test_loss, named.test_loss)
    if model.q > 2:  # the same source as solve on the model's site
        assert default_loss(model.masked_site(0)) == loss


# ---------------------------------------------------------------- issue 23: learners
def test_one_logistic_fitter_gives_the_old_weights():
    # learners/logistic.py replaces sklearn's newton-cholesky fits (erm, pseudo_likelihood), the
    # single-class Newton of pseudo_likelihood and multinomial_pl's own Newton: same weights to 1e-8
    import warnings

    from sklearn.linear_model import LogisticRegression

    from replica_mlm.learners import logistic, multinomial_pl, pseudo_likelihood
    from replica_mlm.tasks.potts_site import simplex_basis

    rng = np.random.default_rng(23)
    for n, p, lam in ((150, 60, 0.3), (300, 120, 1e-2), (400, 100, 1e-3)):
        x = rng.standard_normal((n, p))
        y = np.where(rng.random(n) < special_expit(x @ rng.standard_normal(p) * 2 / np.sqrt(p)), 1.0, -1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            old = LogisticRegression(C=1.0 / (lam * p), fit_intercept=False, tol=1e-12, max_iter=10_000,
                                     solver="newton-cholesky").fit(x, y).coef_[0]
        for new in (logistic.fit_binary(x, y, lam * p)[0], pseudo_likelihood.fit_site(x, y, lam)[0]):
            assert np.linalg.norm(new - old) <= 1e-8 * np.linalg.norm(old)
    # one class only: the old plain Newton from 0
    x, y, lam = rng.standard_normal((20, 8)), np.ones(20), 0.1
    old = np.zeros(8)
    for _ in range(100):
        margin = y * (x @ old)
        grad = -x.T @ (y * special_expit(-margin)) + lam * 8 * old
        hess = (x.T * (special_expit(margin) * special_expit(-margin))) @ x + lam * 8 * np.eye(8)
        old = old - np.linalg.solve(hess, grad)
    assert np.linalg.norm(pseudo_likelihood.fit_site(x, y, lam)[0] - old) <= 1e-8 * np.linalg.norm(old)
    # multinomial, q = 4 colours in the reduced basis: sklearn's unreduced fit, W = coef_^T P
    P = simplex_basis(4)
    x, y, lam, p = rng.standard_normal((300, 30)), rng.integers(0, 4, 300), 0.05, 10
    old = LogisticRegression(C=1.0 / (lam * p), fit_intercept=False, tol=1e-12, max_iter=10_000,
                             solver="newton-cholesky").fit(x, y).coef_.T @ P
    for new in (logistic.fit(x, y, P, lam * p)[0], multinomial_pl.fit(x, y, P, lam, p)[0]):
        assert np.linalg.norm(new - old) <= 1e-8 * np.linalg.norm(old)


def special_expit(t):
    from scipy.special import expit

    return expit(t)


# ---------------------------------------------------------------- issue 23: theory
# One fixed-point driver (theory/solvers/fixed_point.py) replaces the three loops of engine.solve_point,
# multiclass.solve_point and solve.py's damped iteration: the loops as they were are kept here as the
# reference, and the driver must give their numbers (the same arithmetic: to 1e-13).


def _old_hybr_loop(problem, init, *, tol, warmup, xtols, retry_xtol, maxfev, domain):
    from scipy import optimize

    x = problem.start() if init is None else np.asarray(init, dtype=float)
    if init is None:
        for _ in range(warmup):
            x = 0.5 * x + 0.5 * problem.image(x)
    best = (math.inf, x)

    def gap(u):
        try:
            return problem.image(u) - u
        except domain:
            return np.full(u.shape, 1e3)

    for attempt in range(3):
        for xtol in (xtols if attempt == 0 else (retry_xtol,)):
            sol = optimize.root(gap, x, method="hybr", options={"xtol": xtol, "maxfev": maxfev})
            res, point = problem.residual(sol.x)
            if res < best[0]:
                best = (res, sol.x)
            if res <= tol:
                return res, point
            x = best[1]
        for _ in range(4 * (attempt + 1)):
            x = 0.5 * x + 0.5 * problem.image(x)
    raise AssertionError("the reference loop did not converge")


@contextlib.contextmanager
def _driver_used():
    """The solver inside goes through the one driver, fixed_point.solve (exactly once)."""
    from replica_mlm.theory.solvers import fixed_point

    calls, original = [], fixed_point.solve

    def counted(*args, **kwargs):
        calls.append(kwargs.get("method", "hybr"))
        return original(*args, **kwargs)

    fixed_point.solve = counted
    try:
        yield
    finally:
        fixed_point.solve = original
    assert len(calls) == 1, calls


def _close(new: dict, old: dict, keys) -> None:
    for k in keys:
        a, b = np.asarray(new[k], dtype=float), np.asarray(old[k], dtype=float)
        assert np.allclose(a, b, rtol=1e-13, atol=0), (k, a, b)


@pytest.mark.parametrize("loss,channel,alpha,warm", [("logistic", "logit", 0.7, False),
                                                     ("logistic", "logit", 2.5, True),
                                                     ("hinge", "sign", 3.0, False),
                                                     ("huber", "gaussian", 1.5, False)])
def test_the_one_driver_gives_the_general_engines_numbers(loss, channel, alpha, warm):
    from replica_mlm.theory.sides import channels, losses
    from replica_mlm.theory.solvers import engine

    spec = rm.GaussianPotts.random(60, shift=3.0, seed=5).masked_site(2).spectrum
    lo, ch = losses.resolve(loss), channels.resolve(channel)
    init = None
    if warm:
        init = engine.solve_point(engine.gaussian_problem(spec, 0.8 * alpha, 0.1, lo, ch))["packed"]
    old = _old_hybr_loop(engine.gaussian_problem(spec, alpha, 0.1, lo, ch), init, tol=engine.TOL,
                         warmup=engine.WARMUP, xtols=(engine.XTOL, engine.XTOL_FINE),
                         retry_xtol=engine.XTOL_FINE, maxfev=400,
                         domain=(FloatingPointError, OverflowError, ZeroDivisionError, ValueError))
    with _driver_used():
        new = engine.solve_point(engine.gaussian_problem(spec, alpha, 0.1, lo, ch), init=init)
    _close(new, {**old[1], "residual": old[0]}, ("V", "q", "m", "V_hat", "q_hat", "m_hat", "residual"))


@pytest.mark.parametrize("alpha", [0.6, 2.0])
def test_the_one_driver_gives_the_multiclass_numbers(alpha):
    from replica_mlm.theory.sides import multiclass_channel as mc
    from replica_mlm.theory.solvers import multiclass

    site = rm.PottsModel.random(L=6, q=3, seed=2, beta=0.8).masked_site(1)
    rule = mc.rule_for(site.K, "hermite", order=8, seed=0)
    errors = (FloatingPointError, OverflowError, ZeroDivisionError, ValueError, np.linalg.LinAlgError)
    old = _old_hybr_loop(multiclass.site_problem(site, alpha, 0.1, "cross_entropy", rule), None,
                         tol=multiclass.TOL, warmup=multiclass.WARMUP, xtols=(1e-14,), retry_xtol=1e-14,
                         maxfev=600, domain=errors)
    with _driver_used():
        new = multiclass.solve_point(multiclass.site_problem(site, alpha, 0.1, "cross_entropy", rule))
    _close(new, {**old[1], "residual": old[0]}, ("V", "Q", "M", "V_hat", "Q_hat", "M_hat", "residual"))


@pytest.mark.parametrize("alpha,lam,damping", [(0.5, 0.1, 0.5), (2.0, 0.01, 0.3), (1.0, 1e-3, 0.7)])
def test_the_one_driver_gives_the_damped_iterations_numbers(alpha, lam, damping):
    from replica_mlm.theory.solvers import residual, root
    from replica_mlm.theory.symbolic.compiled import compiled

    site = rm.GaussianPotts.random(40, shift=3.0, seed=1).masked_site(0)
    spec, fns, tol = site.spectrum, compiled(), 1e-12
    x = dict(zip("Vqm", (1000.0, 1e-3, 1e-3), strict=True))
    steps = 0
    for it in range(1, 100_001):  # the loop of solve.py before the driver, verbatim in its arithmetic
        hat_args = (alpha, x["V"], x["q"], x["m"], spec.rho, spec.noise)
        hats = [fns.hat[name](*hat_args) for name in ("V_hat", "q_hat", "m_hat")]
        mode_args = (spec.omega, spec.bulk, spec.teacher, lam, *hats)
        with np.errstate(over="ignore"):
            new = {name: float(np.sum(fns.mode[name](*mode_args))) for name in ("V", "q", "m")}
        new = {k: damping * x[k] + (1 - damping) * new[k] for k in x}
        delta = sum(abs(new[k] - x[k]) for k in x)
        x = new
        if delta < tol:
            hat_args = (alpha, x["V"], x["q"], x["m"], spec.rho, spec.noise)
            out = {name: f(*hat_args) for name, f in fns.hat.items()}
            out.update(x)
            if residual.raw_residual(spec, alpha, lam, out) <= max(tol, root.RESIDUAL_TOL):
                steps = it
                break
    with _driver_used():
        sp = rm.solve(site, alpha=alpha, lam=lam, method="iterate", damping=damping)
    assert sp.iterations == steps > 0
    _close(sp.as_dict(), out, ("V", "q", "m", "V_hat", "q_hat", "m_hat"))


def test_one_packing_for_the_engine_and_the_multiclass_theory():
    # issue 23: the symmetric multi-class unknowns were packed by a copy of the engine's pack
    # (with m / sqrt(q r) for m / sqrt(q) / sqrt(r)); both now use theory/solvers/packing.py
    from replica_mlm.theory.solvers import multiclass, packing

    site = rm.PottsModel.random(L=6, q=3, seed=2, beta=0.8).masked_site(1)
    sym = next(s for s in (site, *(rm.PottsModel(couplings=rm.PottsModel.random_ising(L=8, beta=1.0, seed=3)
                                                  .couplings, colours=np.eye(3), beta=1.5).masked_site(i)
                                  for i in range(3))) if s.symmetric)
    problem = multiclass.site_problem(sym, 1.0, 0.1, "cross_entropy", None)
    r = float(sym.rho[0, 0])
    eye = np.eye(sym.K)
    for v, q, m in [(0.3, 0.7, 0.2), (2.0, 1e-3, -0.01), (1e-4, 5.0, 1.9)]:
        x = problem.pack(v * eye, q * eye, m * eye)
        assert np.array_equal(x, packing.pack(v, q, m, r))
        c = float(np.clip(m / math.sqrt(q * r), -1 + 1e-15, 1 - 1e-15))
        old = [math.log(v), math.log(q), math.atanh(c)]
        assert np.allclose(x, old, rtol=1e-13, atol=0)
        V, Q, M = problem.unpack(x)
        assert np.allclose([V[0, 0], Q[0, 0], M[0, 0]], [v, q, m], rtol=1e-13, atol=0)
        assert np.array_equal(V, V[0, 0] * eye)
    general = multiclass.site_problem(site, 1.0, 0.1, "cross_entropy", None)
    A = np.array([[2.0, 0.3], [0.3, 1.0]])
    V, Q, M = general.unpack(general.pack(A, 2 * A, A.T))
    assert np.allclose(V, A, rtol=1e-13) and np.allclose(Q, 2 * A, rtol=1e-13) and np.array_equal(M, A.T)


def test_the_ridge_prior_once_scalar_and_k_by_k():
    # issue 23: the ridge prior (prior.RidgePrior, the engine's prior side; multiclass.prior,
    # root.estimation_error_of_hats)
    # lives in theory/sides/prior.py; at K = 1 the K x K closed forms are the scalar ones
    from replica_mlm.theory.sides import channels, losses, prior
    from replica_mlm.theory.solvers import engine, multiclass

    spec = rm.GaussianPotts.random(40, shift=3.0, seed=1).masked_site(0).spectrum
    omega, theta = spec.omega, np.sqrt(spec.teacher)
    p = 1 / spec.bulk[0]
    assert np.allclose(spec.bulk, 1 / p, rtol=1e-15)
    for lam, hats in [(0.05, (0.8, 1.3, 0.6)), (2.0, (3.0, 0.2, -0.4)), (1e-4, (0.01, 5.0, 1.0))]:
        scalar = prior.ridge(spec, lam, *hats)
        problem = engine.gaussian_problem(spec, 1.0, lam, losses.resolve("logistic"),
                                          channels.resolve("logit"))
        assert problem.prior(*hats) == scalar
        matrices = [np.array([[h]]) for h in hats]
        V, Q, M, _, _ = prior.ridge_matrices(omega, theta[:, None], p, lam, *matrices)
        assert np.allclose([V[0, 0], Q[0, 0], M[0, 0]], scalar, rtol=1e-12, atol=0)
        est = prior.estimation_error(spec, lam, *hats)
        est_k = prior.estimation_error_matrices(omega, theta[:, None], p, lam, *matrices)
        assert est == pytest.approx(est_k, rel=1e-12)
    assert getattr(multiclass, "prior", prior) is prior and not hasattr(multiclass, "estimation_error")
