"""Whether a discrete theory can describe a site: the Bayes error of its data model against the
site's own.

docs/discrete.md, section "When a theory holds". A theory of ERM on a site is exact for its data
model; where that model's Bayes error is far from the site's, its learning curve cannot be right
at every sample size (below the site's Bayes error it predicts what no estimator reaches). On the
sparse-coupling tables of that page, 52 of the 58 (theory, point) pairs outside the window failed
(off by more than 3 SE and 3 %), while 27 of the 50 inside it failed too: ``ok = False`` means "do
not use", ``ok = True`` does not certify agreement.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass

#: ``ok`` when the ratio lies within this distance of 1 (widened by two standard errors of a
#: sampled site error); chosen from the sparse-coupling tables of docs/discrete.md as first measured
#: (before the split by ordered states): the smallest window that kept the local theory ``ok``
#: wherever it held (its sampled models sat up to 5 % below the site's Bayes error). With the split,
#: two points at the ferromagnet's transition hold at ratios 0.83-0.84; a window of 0.17 would pass
#: as many failed pairs as held ones (docs/discrete.md, "When a theory holds")
TOLERANCE = 0.1


class ValidityWarning(RuntimeWarning):
    """A discrete theory used outside its validity (:meth:`Validity.warn`): a category of its own,
    so that a caller who reads ``result.valid`` can filter it without hiding other warnings."""


@dataclass(frozen=True)
class Validity:
    """The validity check of one theory on one site (:meth:`DiscreteSite.validity`).

    Attributes
    ----------
    theory : str
        ``"gaussian"``, ``"mixture"`` or ``"local"``.
    bayes_error_model : float
        The Bayes error of the theory's data model.
    bayes_error_site : float
        The site's true Bayes error ``E[1 - max_a P(s_i = a | s_-i)]``: exact over all
        configurations, or the mean over the sampler's sequences.
    bayes_error_site_stderr : float
        Its standard error (0 when exact).
    ratio : float
        ``bayes_error_model / bayes_error_site`` (1 when both vanish, inf when only the site's does).
    ratio_stderr : float
        Its standard error from the site's.
    ok : bool
        ``|ratio - 1| <= TOLERANCE + 2 ratio_stderr`` (:data:`TOLERANCE`).
    threshold : float
        :data:`TOLERANCE`.
    """

    theory: str
    bayes_error_model: float
    bayes_error_site: float
    bayes_error_site_stderr: float
    ratio: float
    ratio_stderr: float
    ok: bool
    threshold: float = TOLERANCE

    def to_frame(self):
        """A one-row pandas DataFrame of the fields."""
        import pandas as pd

        return pd.DataFrame([asdict(self)])

    def warn(self) -> None:
        """A :class:`ValidityWarning` naming the theory and the two Bayes errors, if not :attr:`ok`."""
        if not self.ok:
            warnings.warn(f"theory={self.theory!r} is outside its validity on this site: its data model's "
                          f"Bayes error {self.bayes_error_model:.4g} against the site's "
                          f"{self.bayes_error_site:.4g} (ratio {self.ratio:.3g}, allowed 1 +- "
                          f"{self.threshold:g}); see docs/discrete.md, 'When a theory holds'",
                          ValidityWarning, stacklevel=3)


def judge(theory: str, model: float, site: float, site_stderr: float) -> Validity:
    """:class:`Validity` from the two Bayes errors."""
    if site <= 0.0:
        ratio, r_se = (1.0 if model <= 0.0 else math.inf), 0.0
    else:
        ratio = model / site
        r_se = ratio * site_stderr / site
    ok = math.isfinite(ratio) and abs(ratio - 1.0) <= TOLERANCE + 2.0 * r_se
    return Validity(theory=theory, bayes_error_model=float(model), bayes_error_site=float(site),
                    bayes_error_site_stderr=float(site_stderr), ratio=float(ratio), ratio_stderr=float(r_se),
                    ok=bool(ok))


__all__ = ["TOLERANCE", "Validity", "ValidityWarning", "judge"]
