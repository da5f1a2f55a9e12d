"""Statistics of transient states of the attractor network: held-out tests and lifetimes.

Two questions are asked of per-input curves ``c[m, t]`` (one row per corrupted input m, one
column per step t = 0..T of the dynamics, e.g. the reconstruction error of
:func:`replica_mlm.attractor.measurements.transient_curves`):

1. Is there a transient? (:func:`transient_memory`) The inputs are split at random in two halves.
   The best step ``t*`` in a window is chosen on the *selection* half only (lowest mean error, or
   highest mean overlap); on the *evaluation* half the paired differences between ``c(t*)`` and
   each reference (the start ``c(0)``, the end ``c(T)``, and optionally a per-input baseline such
   as the error of predicting the mean training image) are averaged over inputs. The effect is
   declared only when every one of these mean gains exceeds ``z`` standard errors. Choosing ``t*``
   on one half and measuring on the other avoids the optimistic bias of reporting the minimum of a
   noisy curve; requiring the gain over the end state as well makes the test two-sided: a curve
   that improves and stays improved (a proper attractor) is not a *transient*.

2. How long does it last? (:func:`transient_lifetimes`) Per input, with the reference level
   ``r_m = min(c_m(0), b_m, c_m(T))`` (start, baseline, end) and the depth of the dip
   ``D_m = r_m - min_{t >= 1} c_m(t)``, the *lifetime* is the number of steps ``t >= 1`` at which
   ``c_m(t) < r_m - D_m / 2`` (the width of the dip at half its depth; 0 if there is no dip).
   The half-depth rule counts only the steps during which the state keeps at least half of its
   best improvement over all three references, so a slow approach of the end state from below,
   or an end state that happens to beat the baseline for this input, is not counted as memory.
   For comparison, ``below_start_and_baseline`` counts the steps with ``c_m(t) < min(c_m(0), b_m)``
   (no reference to the end state, so it also counts the end state whenever that is better than
   the baseline for this input).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replica_mlm._base.checks import as_generator, finite_array
from replica_mlm._base.stats import mean_stderr

__all__ = ["Lifetimes", "TransientMemory", "transient_lifetimes", "transient_memory"]


def _mean_sem(a: np.ndarray) -> tuple[float, float]:
    return mean_stderr(a)


@dataclass
class TransientMemory:
    """The held-out transient test of :func:`transient_memory` (see the module docstring).

    Attributes
    ----------
    t_best, t_last : int
        The step chosen on the selection half, and T.
    value_t0, value_best, value_last : tuple of float
        Mean and standard error, over the evaluation half, of the curve at 0, t* and T.
    gain_vs_t0, gain_vs_last : tuple of float
        Mean and standard error of the paired gains of t* over the start and over the end
        (``c(0) - c(t*)`` when lower is better, ``c(t*) - c(0)`` when higher is better).
    gain_vs_baseline : tuple of float or None
        The same against the per-input baseline, if one was given.
    z : float
        Required number of standard errors; ``passed`` is True iff every gain exceeds it.
    """

    t_best: int
    t_last: int
    value_t0: tuple[float, float]
    value_best: tuple[float, float]
    value_last: tuple[float, float]
    gain_vs_t0: tuple[float, float]
    gain_vs_last: tuple[float, float]
    gain_vs_baseline: tuple[float, float] | None
    value_baseline: tuple[float, float] | None
    z: float
    n_eval: int
    maximise: bool
    passed: bool

    def margins(self) -> dict:
        """Each gain in standard errors (inf if its standard error is 0 and the gain positive)."""
        out = {}
        for name in ("gain_vs_t0", "gain_vs_last", "gain_vs_baseline"):
            g = getattr(self, name)
            if g is not None:
                out[name.replace("gain_", "z_")] = (
                    g[0] / g[1] if g[1] > 0 else (np.inf if g[0] > 0 else -np.inf)
                )
        return out

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d.update(self.margins())
        return d


def transient_memory(
    curve, *, baseline=None, maximise: bool = False, window: tuple[int, int] = (1, 20),
    z: float = 3.0, rng=0,
) -> TransientMemory:
    """Held-out test for a transient optimum of per-input curves (module docstring, point 1).

    Parameters
    ----------
    curve : array_like, shape (M, T + 1)
        One row per input (M >= 4), e.g. reconstruction errors or overlaps.
    baseline : array_like, shape (M,), optional
        A per-input reference the state at t* must also beat (e.g. the error of predicting the
        mean training image for that input).
    maximise : bool
        False: lower is better (errors); True: higher is better (overlaps).
    window : (int, int)
        Steps ``lo..hi`` (inclusive, 1 <= lo <= hi < T) among which t* is chosen.
    z : float
        Number of standard errors every gain must exceed.
    rng : int or numpy.random.Generator
        Seeds the split into selection and evaluation halves.
    """
    c = finite_array(curve, "curve", ndim=2)
    M, T1 = c.shape
    lo, hi = window
    if not 1 <= lo <= hi < T1 - 1:
        raise ValueError(f"window must satisfy 1 <= lo <= hi < T = {T1 - 1}, got {window}")
    if M < 4:
        raise ValueError(f"need at least 4 inputs for the split test, got {M}")
    b = None
    if baseline is not None:
        b = finite_array(baseline, "baseline", ndim=1)
        if b.shape != (M,):
            raise ValueError(f"baseline must have shape (M,) = ({M},), got {b.shape}")
    sign = -1.0 if maximise else 1.0  # work with s = sign * c, lower is better
    s = sign * c
    order = as_generator(rng).permutation(M)
    sel, ev = order[: M // 2], order[M // 2 :]
    t_best = lo + int(np.argmin(s[sel, lo : hi + 1].mean(axis=0)))
    se = s[ev]
    g0 = _mean_sem(se[:, 0] - se[:, t_best])
    gl = _mean_sem(se[:, -1] - se[:, t_best])
    gains = [g0, gl]
    gb = vb = None
    if b is not None:
        gb = _mean_sem(sign * b[ev] - se[:, t_best])
        vb = _mean_sem(b[ev])
        gains.append(gb)
    return TransientMemory(
        t_best=t_best,
        t_last=T1 - 1,
        value_t0=_mean_sem(c[ev, 0]),
        value_best=_mean_sem(c[ev, t_best]),
        value_last=_mean_sem(c[ev, -1]),
        gain_vs_t0=g0,
        gain_vs_last=gl,
        gain_vs_baseline=gb,
        value_baseline=vb,
        z=float(z),
        n_eval=len(ev),
        maximise=bool(maximise),
        passed=bool(all(m > z * e for m, e in gains)),
    )


@dataclass
class Lifetimes:
    """Per-input lifetimes of the transient (module docstring, point 2), in steps.

    Attributes
    ----------
    half_depth : numpy.ndarray of int, shape (M,)
        Steps at which the curve keeps at least half of its best gain over the start, the
        baseline and the end state (0 if it never beats all three).
    below_start_and_baseline : numpy.ndarray of int, shape (M,)
        Steps at which the curve is below both its start and the baseline.
    depth : numpy.ndarray, shape (M,)
        ``r_m - min_{t >= 1} c_m(t)``; <= 0 means no dip.
    t_min : numpy.ndarray of int, shape (M,)
        The step (>= 1) of each input's lowest value.
    steps : int
        T; lifetimes are at most T.
    """

    half_depth: np.ndarray
    below_start_and_baseline: np.ndarray
    depth: np.ndarray
    t_min: np.ndarray
    steps: int

    def summary(self) -> dict:
        """Mean, standard deviation, standard error and quartiles of each lifetime (JSON-ready)."""
        out = {}
        for name in ("half_depth", "below_start_and_baseline", "t_min"):
            a = getattr(self, name).astype(float)
            q = np.quantile(a, [0.1, 0.25, 0.5, 0.75, 0.9])
            out[name] = {
                "mean": float(a.mean()), "std": float(a.std(ddof=1)),
                "sem": mean_stderr(a).stderr,
                "q10": float(q[0]), "q25": float(q[1]), "median": float(q[2]),
                "q75": float(q[3]), "q90": float(q[4]), "max": float(a.max()),
            }
        out["fraction_with_dip"] = float(np.mean(self.depth > 0))
        out["fraction_below_until_T"] = float(
            np.mean(self.below_start_and_baseline == self.steps)
        )
        return out


def transient_lifetimes(error, baseline) -> Lifetimes:
    """Lifetimes of the dips of per-input error curves ``error`` (M, T + 1) below the start,
    the per-input ``baseline`` (M,) and the end state (module docstring, point 2)."""
    err = finite_array(error, "error", ndim=2)
    M, T1 = err.shape
    if T1 < 3:
        raise ValueError(f"error needs at least 3 steps (t = 0, 1, T), got {T1}")
    b = finite_array(baseline, "baseline", ndim=1)
    if b.shape != (M,):
        raise ValueError(f"baseline must have shape (M,) = ({M},), got {b.shape}")
    ref = np.minimum(np.minimum(err[:, 0], b), err[:, -1])
    later = err[:, 1:]
    depth = ref - later.min(axis=1)
    level = (ref - 0.5 * np.maximum(depth, 0.0))[:, None]
    half = np.where(depth > 0, (later < level).sum(axis=1), 0)
    below = (later < np.minimum(err[:, 0], b)[:, None]).sum(axis=1)
    return Lifetimes(
        half_depth=half.astype(int),
        below_start_and_baseline=below.astype(int),
        depth=depth,
        t_min=1 + np.argmin(later, axis=1),
        steps=T1 - 1,
    )
