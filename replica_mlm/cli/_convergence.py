"""The one-line convergence report of a command's solves (docs/cli.rst): on the console after the
run, in the run's JSON, and (when a point did not converge) in the figure's title."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import click
import numpy as np

#: unconverged points named on the console at most (the rest counted)
NAMED = 5


@dataclass(frozen=True)
class Convergence:
    """Whether every solved point converged.

    Attributes
    ----------
    points : int
        Points solved.
    unconverged : list of str
        The points that did not converge, each named by its coordinates (``"lam=0.01, alpha=1.2"``).
    largest_residual : float
        The largest saddle-point residual over the points (NaN if none is finite).
    """

    points: int
    unconverged: list[str]
    largest_residual: float

    @property
    def converged(self) -> bool:
        return not self.unconverged

    def line(self, what: str = "") -> str:
        """One line: ``converged: all 200 points (largest residual 3e-11)`` or a warning naming
        the points that did not; ``what`` (e.g. ``"ERM at lam = 0"``) says of which solves."""
        res = f"largest residual {self.largest_residual:.2g}"
        what = f"{what}: " if what else ""
        if self.converged:
            return f"{what}converged: all {self.points} points ({res})"
        named = "; ".join(self.unconverged[:NAMED])
        more = f" and {len(self.unconverged) - NAMED} more" if len(self.unconverged) > NAMED else ""
        return (f"warning: {what}{len(self.unconverged)} of {self.points} points did not converge ({res}): "
                f"{named}{more}")

    def note(self) -> str:
        """A figure's title line when some point did not converge; empty otherwise."""
        return "" if self.converged else f"{len(self.unconverged)} of {self.points} points did not converge"

    def as_dict(self) -> dict:
        """The JSON record: converged, points, unconverged (names), largest_residual."""
        largest = self.largest_residual
        return {"converged": self.converged, "points": self.points, "unconverged": list(self.unconverged),
                "largest_residual": largest if np.isfinite(largest) else None}

    def echo(self, what: str = "") -> None:
        """The line on stdout (converged) or stderr (a warning)."""
        click.echo(self.line(what), err=not self.converged)


def _largest(residuals: Sequence[np.ndarray]) -> float:
    finite = [r[np.isfinite(r)] for r in (np.asarray(x, dtype=float).ravel() for x in residuals)]
    finite = [r for r in finite if r.size]
    return float(max(r.max() for r in finite)) if finite else float("nan")


def _point_mask(curve) -> np.ndarray:
    """Per alpha: converged. The reduced route ("root") records residuals only, judged here by its
    rule (:func:`.root.converged`); the other routes raise on a point that does not converge, so a
    returned curve converged wherever ``curve.converged``."""
    if getattr(curve, "method", None) == "root":
        from replica_mlm.theory.solvers import root

        return root.converged({name: np.asarray(getattr(curve, name)) for name in root.FIELDS})
    return np.full(np.size(curve.alpha), bool(curve.converged))


def of_curves(curves: Sequence) -> Convergence:
    """The convergence of learning curves (LearningCurve, MulticlassCurve), a point per (lam, alpha)."""
    bad = []
    for c in curves:
        ok = _point_mask(c)
        bad += [f"lam={c.lam:g}, alpha={a:.4g}" for a in np.asarray(c.alpha)[~ok]]
    return Convergence(points=sum(np.size(c.alpha) for c in curves), unconverged=bad,
                       largest_residual=_largest([c.residual for c in curves]))


def of_phase(pd) -> Convergence:
    """The convergence of a PhaseDiagram's grid (and of its optimal-lam line, the last row of its
    ``converged`` when it has one)."""
    ok = np.asarray(pd.converged, dtype=bool)
    rows = [f"{pd.axis}={y:g}" for y in pd.y] + (["optimal lam"] if ok.shape[0] > len(pd.y) else [])
    bad = [f"{rows[i]}, alpha={pd.alpha[j]:.4g}" for i, j in zip(*np.nonzero(~ok), strict=True)]
    return Convergence(points=ok.size, unconverged=bad, largest_residual=_largest([pd.residual]))
