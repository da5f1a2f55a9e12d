"""A discrete site as the Gaussian mixture it is: class weights, class means, pooled covariance.

docs/discrete.md, section "The site as a Gaussian mixture". A site's conditional logits are linear
in its inputs, ``P(x, y = c) = P_cav(x) exp(u_c(x)) / Z``; if the cavity law ``P_cav`` of the inputs
is Gaussian, ``x | y = c`` is exactly Gaussian with its own mean and one shared covariance. The
mixture keeps what Gaussian equivalence drops: the class weights ``pi_c``, the class means
``mu_c = E[x | y = c]`` and the pooled within-class covariance ``S = sum_c pi_c Cov(x | y = c)``
(the total covariance is ``S + sum_c pi_c (mu_c - mu)(mu_c - mu)^T``).

:func:`mixture_from_samples` measures the three from weighted samples: exact when the samples are
all configurations weighted by their Boltzmann probabilities, with standard errors otherwise.
:meth:`GaussianMixture.cavity_check` says how far the cavity law is from Gaussian.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from replica_mlm._base import checks as _checks

#: a pooled covariance whose smallest eigenvalue is below this fraction of its largest is singular
#: for the theory; it is then regularised by adding this fraction of the largest eigenvalue
#: (reported in :attr:`GaussianMixture.regularisation`)
SINGULAR = 1e-10


@dataclass(frozen=True)
class CavityCheck:
    """How Gaussian the cavity law of a site is (:meth:`GaussianMixture.cavity_check`).

    Attributes
    ----------
    covariance_distance : float
        ``|S - S_tilt|_F / |S|_F``: the pooled within-class covariance against the one the tilt of a
        Gaussian cavity law predicts from the total covariance and the teacher (two classes:
        ``S_tilt = Sigma - a a^T / 4`` with ``a = Sigma w* / (1 + t / 4)``, ``t = 2 (sqrt(1 + w*^T
        Sigma w*) - 1)``; more classes: the covariance of the cavity law itself). 0 for a Gaussian
        cavity law.
    skewness, excess_kurtosis : float
        Of the cavity field (the teacher's field ``w* . x``; for more classes the largest in
        absolute value over the logit differences ``u_c - u_0``) under the cavity law; 0 for a
        Gaussian one, and reported as 0 for a constant field (a site without couplings).
    skewness_stderr, kurtosis_stderr : float
        Their standard errors (0 when the law was enumerated exactly), ``sqrt(6 / N)`` and
        ``sqrt(24 / N)`` for ``N`` effective samples of the cavity law.
    method : str
        ``"exact"`` or ``"samples"``.
    """

    covariance_distance: float
    skewness: float
    excess_kurtosis: float
    skewness_stderr: float
    kurtosis_stderr: float
    method: str

    def to_frame(self):
        """A one-row pandas DataFrame of the fields."""
        import pandas as pd

        return pd.DataFrame([asdict(self)])


class GaussianMixture:
    """The K-class Gaussian mixture of a site: ``x | y = c ~ N(mu_c, S)`` with ``P(y = c) = pi_c``.

    Built by :func:`mixture_from_samples` (``task.mixture`` of an Ising site). See the module
    docstring and docs/discrete.md, section "The site as a Gaussian mixture".

    Attributes
    ----------
    weights : ndarray (K,)
        ``pi_c``.
    means : ndarray (K, p)
        ``mu_c = E[x | y = c]``.
    covariance : ndarray (p, p)
        Pooled within-class covariance ``S`` (regularised if singular, see ``regularisation``).
    means_stderr : ndarray (K, p)
        Standard errors of the means (zeros when exact).
    regularisation : float
        What was added to the diagonal of ``S`` because it was singular (its smallest eigenvalue
        below :data:`SINGULAR` times its largest): that fraction of the largest eigenvalue; 0 if
        nothing was added.
    method : str
        ``"exact"`` (all configurations with their probabilities) or ``"samples"``.
    n_samples : int
        Samples used (0 when exact).
    """

    def __init__(self, *, weights, means, covariance, means_stderr, regularisation: float, method: str,
                 n_samples: int, teacher, cavity) -> None:
        self.weights, self.means, self.covariance = weights, means, covariance
        self.means_stderr, self.regularisation = means_stderr, float(regularisation)
        self.method, self.n_samples = method, int(n_samples)
        self.teacher = teacher
        self._cavity = cavity
        for arr in (weights, means, covariance, means_stderr):
            arr.setflags(write=False)

    @classmethod
    def from_moments(cls, *, weights, means, covariance, teacher=None) -> GaussianMixture:
        """A mixture given by its moments (no samples behind it: :meth:`cavity_check` is then a
        ValueError). ``teacher`` defaults, for two classes, to the Bayes logit direction
        ``2 S^{-1} (mu_0 - mu_1) / 2``; ``covariance`` must be positive definite."""
        S = _checks.positive_definite(covariance, "covariance")
        means = _checks.finite_array(means, "means", ndim=2)
        weights = _checks.finite_array(weights, "weights", ndim=1)
        K, p = means.shape
        if p != S.shape[0] or weights.shape != (K,) or K < 2:
            raise ValueError(f"means must be (K, p) with K >= 2 and p = {S.shape[0]}, weights (K,); got "
                             f"means {means.shape}, weights {weights.shape}")
        if np.any(weights <= 0) or abs(weights.sum() - 1.0) > 1e-12:
            raise ValueError(f"weights must be > 0 and sum to 1, got {weights.tolist()}")
        if teacher is None:
            if K != 2:
                raise ValueError("teacher must be given for more than two classes")
            teacher = np.linalg.solve(S, means[0] - means[1])
        teacher = _checks.finite_array(teacher, "teacher")
        if teacher.shape[:1] != (p,) or teacher.ndim not in (1, 2):
            raise ValueError(f"teacher must have shape ({p},) or ({p}, K - 1), got {teacher.shape}")
        return cls(weights=weights.copy(), means=means.copy(), covariance=S.copy(),
                   means_stderr=np.zeros_like(means), regularisation=0.0, method="moments",
                   n_samples=0, teacher=teacher, cavity=None)

    def sample(self, n: int, *, rng: _checks.RngLike = None) -> tuple[np.ndarray, np.ndarray]:
        """``n`` draws of the mixture itself: inputs ``x`` (n, p) and classes (n,) in ``[0, K)``."""
        n = _checks.positive_int(n, "n")
        gen = _checks.as_generator(rng)
        _checks.allocation(8 * 3 * n * self.p, f"sample(n={n}) on p = {self.p} inputs")
        labels = gen.choice(self.K, size=n, p=self.weights)
        chol = np.linalg.cholesky(self.covariance)
        return self.means[labels] + gen.standard_normal((n, self.p)) @ chol.T, labels

    def __repr__(self) -> str:
        reg = f", regularisation={self.regularisation:.3g}" if self.regularisation else ""
        return (f"GaussianMixture(K={self.K}, p={self.p}, weights={np.round(self.weights, 4).tolist()}, "
                f"method={self.method!r}{reg})")

    @property
    def K(self) -> int:
        """Number of classes."""
        return self.weights.shape[0]

    @property
    def p(self) -> int:
        """Number of inputs."""
        return self.covariance.shape[0]

    def total_covariance(self) -> np.ndarray:
        """``S + sum_c pi_c (mu_c - mu)(mu_c - mu)^T``: what Gaussian equivalence keeps."""
        d = self.means - self.weights @ self.means
        return self.covariance + (d.T * self.weights) @ d

    def cavity_check(self) -> CavityCheck:
        """How far the cavity law of the site is from Gaussian (:class:`CavityCheck`)."""
        if self._cavity is None:
            raise ValueError("this mixture was given by its moments: there are no samples of the site "
                             "whose cavity law could be checked")
        return self._cavity


def mixture_from_samples(x, labels, *, K: int, logits, teacher, probabilities=None) -> GaussianMixture:
    """Measure a site's mixture from samples (or from all configurations with their probabilities).

    Parameters
    ----------
    x : array (n, p)
        Inputs (for an Ising site the other spins).
    labels : array (n,)
        Class of each sample, integers in ``[0, K)``.
    K : int
        Number of classes (>= 2). A class that no sample (or only samples of probability 0) has is
        a ValueError: its mean does not exist.
    logits : array (n, K)
        The site's conditional logits ``u_c(x)`` of each sample (the cavity law is the law of x
        reweighted by ``1 / sum_c exp(u_c(x))``).
    teacher : array (p,) or (p, K - 1)
        For two classes the logit direction ``w*`` (``u_0 - u_1 = w* . x``), used by the tilt
        downdate of :meth:`GaussianMixture.cavity_check`; for more classes the teacher's logit
        directions (kept for the estimation error).
    probabilities : array (n,), optional
        Exact probabilities of the samples (then the moments are exact and carry no error); None
        for equally weighted independent samples.
    """
    x = _checks.finite_array(x, "x", ndim=2)
    n, p = x.shape
    if n < 2 or p < 1:
        raise ValueError(f"x must hold at least 2 samples of at least 1 input, got shape {x.shape}")
    K = _checks.positive_int(K, "K")
    if K < 2:
        raise ValueError(f"K must be >= 2 classes, got {K}")
    labels = np.asarray(labels)
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers of shape ({n},), got {labels.dtype} {labels.shape}")
    if labels.min() < 0 or labels.max() >= K:
        raise ValueError(f"labels must lie in [0, {K}), got {labels.min()} to {labels.max()}")
    exact = probabilities is not None
    w = (np.full(n, 1.0 / n) if not exact else _checks.finite_array(probabilities, "probabilities", ndim=1))
    if w.shape != (n,) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError("probabilities must be n >= 0 numbers with a positive sum")
    w = w / w.sum()
    weights = np.bincount(labels, weights=w, minlength=K)
    counts = np.bincount(labels[w > 0], minlength=K)
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise ValueError(f"class(es) {empty.tolist()} never occur among the {n} samples of the site: "
                         "a mixture needs the mean of every class; measure the site with more samples "
                         "or leave the class out of the model")
    means = np.stack([(w[labels == c] @ x[labels == c]) / weights[c] for c in range(K)])
    resid = x - means[labels]
    S = (resid.T * w) @ resid
    S = (S + S.T) / 2
    if exact:
        stderr = np.zeros_like(means)
    else:
        var = np.stack([np.mean(resid[labels == c] ** 2, axis=0) for c in range(K)])
        stderr = np.sqrt(var / counts[:, None])
    eig = np.linalg.eigvalsh(S)
    reg = 0.0
    if eig[0] <= SINGULAR * eig[-1]:
        reg = SINGULAR * eig[-1]
        S = S + reg * np.eye(p)
    teacher = _checks.finite_array(teacher, "teacher")
    if teacher.shape[0] != p or teacher.ndim not in (1, 2):
        raise ValueError(f"teacher must have shape ({p},) or ({p}, K - 1), got {teacher.shape}")
    cavity = _cavity_check(x, w, _checks.finite_array(logits, "logits", ndim=2), teacher, S - reg * np.eye(p),
                           exact=exact)
    return GaussianMixture(weights=weights, means=means, covariance=S, means_stderr=stderr,
                           regularisation=reg, method="exact" if exact else "samples",
                           n_samples=0 if exact else n, teacher=np.asarray(teacher, dtype=float),
                           cavity=cavity)


def _cavity_check(x, w, logits, teacher, S, *, exact: bool) -> CavityCheck:
    """:class:`CavityCheck` from weighted samples ``x`` (their weights ``w`` sum to one)."""
    K = logits.shape[1]
    shift = logits.max(axis=1, keepdims=True)
    tilt = np.exp(-shift[:, 0]) / np.exp(logits - shift).sum(axis=1)
    wc = w * tilt
    wc = wc / wc.sum()
    fields = logits[:, 1:] - logits[:, :1] if K > 2 else (logits[:, :1] - logits[:, 1:])
    mean = wc @ fields
    d = fields - mean
    var = wc @ d**2
    flat = var <= 1e-300  # a constant field (no teacher): reported as 0, 0 (documented)
    safe = np.where(flat, 1.0, var)
    skew = np.where(flat, 0.0, (wc @ d**3) / safe**1.5)
    kurt = np.where(flat, 0.0, (wc @ d**4) / safe**2 - 3.0)
    j = int(np.argmax(np.abs(skew)))
    k = int(np.argmax(np.abs(kurt)))
    if K == 2:
        sigma = (x.T * w) @ x - np.outer(w @ x, w @ x)
        rho = float(teacher @ sigma @ teacher)
        t = 2.0 * (np.sqrt(1.0 + rho) - 1.0)
        a = sigma @ teacher / (1.0 + t / 4.0)
        s_tilt = sigma - np.outer(a, a) / 4.0
    else:
        xc = x - wc @ x
        s_tilt = (xc.T * wc) @ xc
    dist = float(np.linalg.norm(S - s_tilt) / np.linalg.norm(S))
    n_eff = 1.0 / float(np.sum(wc**2)) if not exact else np.inf
    return CavityCheck(covariance_distance=dist, skewness=float(skew[j]), excess_kurtosis=float(kurt[k]),
                       skewness_stderr=float(np.sqrt(6.0 / n_eff)),
                       kurtosis_stderr=float(np.sqrt(24.0 / n_eff)),
                       method="exact" if exact else "samples")


__all__ = ["CavityCheck", "GaussianMixture", "mixture_from_samples"]
