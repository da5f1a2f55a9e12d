"""The learning curve of one site of a real protein family against the replica prediction.

For site ``i`` of an alignment, :func:`site_learning_curve` measures the test loss of the site's
regression on the other columns against the number ``M`` of training sequences, by subsampling the
alignment, and puts beside it the replica prediction that uses the family's own statistics.

The inputs are those of the multi-class theory (:mod:`replica_mlm.tasks.potts_site`): with ``P`` the
q x K simplex basis (q = 21, K = 20), column ``j != i`` contributes ``x_j = P^T e_{s_j} - mean_j``,
so ``x`` has ``d = (L - 1) K`` components (:func:`replica_mlm.learners.multinomial_pl.reduced_inputs`);
the label is ``y = P^T e_{s_i} - mean_i`` in R^K. ``mean`` and ``Sigma = Cov(x)`` are the plain
(unweighted) mean and covariance over the *pool*: the alignment minus the held-out test rows.
``Sigma`` gets a ridge ``RIDGE * tr(Sigma) / d`` so that it is positive definite (a colour absent
from a column makes it singular).

The estimator and the theory are the *Gaussian reduction* of the multi-class theory: the square loss
(ridge regression of the K label components, ``sum_mu |y_mu - W^T x_mu|^2 / 2 + (lam p / 2)
|W|_F^2``, p = L - 1, no bias) with the gaussian channel. Its theory decouples into K scalar ridge
problems with the same ``Sigma`` (tests/test_multiclass.py checks this against the general K x K
solver), each solved by the exact fast path of the scalar theory (one
:class:`~replica_mlm.tasks.spectrum.Spectrum` per column) at ``alpha = M / d`` and ridge
``lam p / d`` (its own normalisation). The teacher ``W*`` is the same ridge fit on the whole pool and the
noise variance of column ``a`` its mean squared residual there. (The cross-entropy theory at q = 21
needs the general K x K solver, 2K^2 + K = 820 unknowns with 2K-dimensional integrals: out of reach,
see docs/multiclass.md; even its square-loss route through that solver took 160 CPU-s at d = 180,
against well under a second here.)

Beside it, ``mixture`` predicts the same ridge from the class-conditional moments of the pool
(docs/proteins.md, "The class-conditional moments beside the Gaussian reduction"): the site's
colours present in the pool are the classes, with weights, means of the centred inputs, the pooled
within-class covariance ``S`` plus the same ridge as ``Sigma``, and the colours' centred Helmert
components as targets, through :mod:`replica_mlm.theory.solvers.mixture_ridge`. For the square loss
it equals the Gaussian reduction of the same moments up to O(C/d) (docs/multiclass.md, "The square
loss on the mixture").

The held-out test rows are never used for ``Sigma``, the teacher or any training set: the teacher
is fitted on the pool only, the clean variant of "the full-alignment fit as the teacher", so that
its loss on the test rows (``teacher_floor``) is an honest M -> infinity floor on real residues.

**The held-out loss, decomposed** (docs/proteins.md, "The held-out floor as a named
misspecification term"). With ``r = y - W*^T x`` the teacher's residual on a test row and
``D = W - W*``, every fit's held-out loss is exactly

    mean |y - W^T x|^2 / 2 = teacher_floor + mean |D^T x|^2 / 2 - mean r^T D^T x,

the teacher's held-out loss, the fit's *excess* on the test rows and a *cross* term (zero only
when the held-out residual is uncorrelated with ``x``); :func:`heldout_terms` measures the last
two per fit. The theory's ``theory - noise_floor`` predicts the excess, and its ``noise_floor``
is the teacher's residual on the pool, not on the test rows: the prediction for the held-out
loss is ``theory + misspecification`` with ``misspecification = teacher_floor - noise_floor``
(:func:`heldout_prediction`); what is left over is the cross term plus the excess's own miss,
both measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm.learners.multinomial_pl import reduced_inputs
from replica_mlm.tasks.potts_site import simplex_basis
from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.solve import solve
from replica_mlm.theory.solvers.mixture_ridge import MixtureRidgeTheory, mixture_ridge_curve

#: relative ridge added to Sigma (times its mean eigenvalue) to make it positive definite
RIDGE = 1e-6


@dataclass(frozen=True)
class SiteLearningCurve:
    """Measured and predicted test loss of one site against the number of training sequences.

    Attributes
    ----------
    site : int
        The site, an index into ``columns``'s source alignment columns (``msa.columns[site]``).
    columns : ndarray of int
        The alignment columns used (indices into the MSA given), the site among them.
    lam : float
        Ridge (penalty ``(lam p / 2) |W|_F^2``).
    p, d : int
        ``L - 1`` (columns used minus the site) and ``d = p K``.
    M : ndarray of int
        Training-set sizes.
    losses : ndarray, shape (len(M), subsamples)
        Square test loss ``mean |y - W^T x|^2 / 2`` on the held-out rows, per training subsample.
    theory : ndarray, shape (len(M),)
        The replica prediction (expected test loss on labels drawn from the teacher's channel).
    teacher_floor : float
        The teacher's own square loss on the held-out rows (real residues).
    noise_floor : float
        The theory's M -> infinity limit, ``sum_a noise_a / 2`` (the teacher's loss on the pool).
    n_pool, n_test : int
        Rows available for training (and used for Sigma and the teacher) and held-out rows.
    entropy : float
        Entropy (nats) of the site's colour frequencies in the pool (gap included).
    sigma, teacher, noise : ndarray
        The task of the theory: ``Sigma`` (d, d), ``W*`` (d, K) and the noise variance of each
        label component (K,).
    mixture : ndarray, shape (len(M),)
        The prediction of the same ridge from the class-conditional moments of the pool (the site's
        colours present in the pool as classes: :func:`mixture_loss`).
    mixture_floor : float
        Its M -> infinity limit: half the residual of the best linear predictor on the pool.
    classes : ndarray of int
        The colours present at the site in the pool (absent colours are no class).
    smallest_class : int
        Pool rows of the rarest of them (its mean is the noisiest).
    excess, cross : ndarray, shape (len(M), subsamples)
        Each fit's held-out loss split (:func:`heldout_terms`): ``losses = teacher_floor + excess
        + cross`` (to rounding); ``excess = mean |(W - W*)^T x|^2 / 2`` over the test rows, ``cross
        = -mean r^T (W - W*)^T x`` with ``r`` the teacher's held-out residual.
    cross_predicted : ndarray, shape (len(M),)
        The cross term's prediction from the Gaussian theory's mean fit (:func:`cross_theory`).
    excess_pool : ndarray, shape (len(M), subsamples)
        Each fit's excess under the pool's ``Sigma``, ``tr(D^T Sigma D) / 2``: what the theory's
        ``theory - noise_floor`` predicts; ``excess - excess_pool`` is the shift from the pool's
        covariance to the test rows'.
    """

    site: int
    columns: np.ndarray
    lam: float
    p: int
    d: int
    M: np.ndarray
    losses: np.ndarray
    theory: np.ndarray
    teacher_floor: float
    noise_floor: float
    n_pool: int
    n_test: int
    entropy: float
    sigma: np.ndarray = field(repr=False)
    teacher: np.ndarray = field(repr=False)
    noise: np.ndarray = field(repr=False)
    mixture: np.ndarray | None = None
    mixture_floor: float | None = None
    classes: np.ndarray | None = field(default=None, repr=False)
    smallest_class: int | None = None
    excess: np.ndarray | None = field(default=None, repr=False)
    cross: np.ndarray | None = field(default=None, repr=False)
    cross_predicted: np.ndarray | None = None
    excess_pool: np.ndarray | None = field(default=None, repr=False)

    @property
    def mean(self) -> np.ndarray:
        """Mean measured test loss over the subsamples, per M."""
        return self.losses.mean(axis=1)

    @property
    def stderr(self) -> np.ndarray:
        """Its standard error (ddof = 1 over the subsamples)."""
        return self.losses.std(axis=1, ddof=1) / np.sqrt(self.losses.shape[1])

    @property
    def z(self) -> np.ndarray:
        """``(theory - mean) / stderr`` per M."""
        return (self.theory - self.mean) / self.stderr

    @property
    def z_mixture(self) -> np.ndarray:
        """``(mixture - mean) / stderr`` per M."""
        return (self.mixture - self.mean) / self.stderr

    @property
    def misspecification(self) -> float:
        """``teacher_floor - noise_floor``: the teacher's held-out loss above the residual on the
        pool that the theory takes for the noise (docs/proteins.md, "The held-out floor as a named
        misspecification term")."""
        return float(self.teacher_floor - self.noise_floor)

    @property
    def theory_heldout(self) -> np.ndarray:
        """The prediction for the held-out loss, ``theory + misspecification``
        (:func:`heldout_prediction`)."""
        return heldout_prediction(self.theory, teacher_floor=self.teacher_floor,
                                  noise_floor=self.noise_floor)

    @property
    def z_heldout(self) -> np.ndarray:
        """``(theory_heldout - mean) / stderr`` per M."""
        return (self.theory_heldout - self.mean) / self.stderr

    @property
    def theory_cross(self) -> np.ndarray:
        """``theory_heldout + cross_predicted``: the held-out prediction with the cross term too."""
        return self.theory_heldout + self.cross_predicted

    @property
    def z_cross(self) -> np.ndarray:
        """``(theory_cross - mean) / stderr`` per M."""
        return (self.theory_cross - self.mean) / self.stderr

    def table(self) -> str:
        """One markdown row per M: measured (se), theory (z), theory + misspecification (z), that plus
        the predicted cross term (z), the misspecification term, the measured cross term (its
        standard error over the training sets) and its prediction, and the excess's miss (the
        measured mean excess minus ``theory - noise_floor``) split into the shift from the pool's
        covariance to the test rows' (``excess - excess_pool``) and the rest (``excess_pool`` minus
        the prediction)."""
        rows = ["| M | measured | se | theory | z | + misspecification | z | + cross predicted | z "
                "| misspecification | cross | se | cross predicted | excess - predicted | test shift "
                "| pool excess - predicted |", "|---" * 16 + "|"]
        for k, m in enumerate(self.M):
            cross, n = self.cross[k], self.cross.shape[1]
            miss = self.excess[k].mean() - (self.theory[k] - self.noise_floor)
            shift = self.excess[k].mean() - self.excess_pool[k].mean()
            rows.append(f"| {m} | {self.mean[k]:.4f} | {self.stderr[k]:.4f} | {self.theory[k]:.4f} "
                        f"| {self.z[k]:+.1f} | {self.theory_heldout[k]:.4f} | {self.z_heldout[k]:+.1f} "
                        f"| {self.theory_cross[k]:.4f} | {self.z_cross[k]:+.1f} "
                        f"| {self.misspecification:.4f} | {cross.mean():+.4f} "
                        f"| {cross.std(ddof=1) / np.sqrt(n):.4f} | {self.cross_predicted[k]:+.4f} "
                        f"| {miss:+.4f} | {shift:+.4f} | {miss - shift:+.4f} |")
        return "\n".join(rows)

    def to_frame(self):
        """A pandas DataFrame, one row per M: M, alpha (= M / p), measured, se, theory, z,
        teacher_floor, noise_floor, misspecification, theory_heldout, z_heldout, cross (mean over
        the training sets), excess and excess_pool (means), cross_predicted, theory_cross, z_cross,
        site, lam, and (when computed) mixture, z_mixture, mixture_floor."""
        import pandas as pd

        frame = pd.DataFrame({"M": self.M, "alpha": self.M / self.p, "measured": self.mean,
                              "se": self.stderr, "theory": self.theory, "z": self.z,
                              "teacher_floor": self.teacher_floor, "noise_floor": self.noise_floor,
                              "misspecification": self.misspecification,
                              "theory_heldout": self.theory_heldout, "z_heldout": self.z_heldout,
                              "site": self.site, "lam": self.lam})
        if self.cross is not None:
            frame["cross"], frame["excess"] = self.cross.mean(axis=1), self.excess.mean(axis=1)
            frame["cross_predicted"], frame["theory_cross"] = self.cross_predicted, self.theory_cross
            frame["z_cross"], frame["excess_pool"] = self.z_cross, self.excess_pool.mean(axis=1)
        if self.mixture is not None:
            frame["mixture"], frame["z_mixture"] = self.mixture, self.z_mixture
            frame["mixture_floor"] = self.mixture_floor
        return frame


def ridge_fit(x: np.ndarray, y: np.ndarray, lam: float, p: int) -> np.ndarray:
    """``W`` (d, K) minimising ``sum |y - W^T x|^2 / 2 + (lam p / 2) |W|_F^2``."""
    a = x.T @ x
    a[np.diag_indices_from(a)] += lam * p
    return np.linalg.solve(a, x.T @ y)


def _square_loss(x: np.ndarray, y: np.ndarray, W: np.ndarray) -> float:
    return float(np.mean(np.sum((y - x @ W) ** 2, axis=1)) / 2)


def heldout_terms(x: np.ndarray, y: np.ndarray, W: np.ndarray, teacher: np.ndarray) -> tuple[float, float]:
    """``(excess, cross)`` of the fit ``W`` on the rows ``(x, y)`` against the teacher ``W*``:
    ``excess = mean |D^T x|^2 / 2`` and ``cross = -mean r^T D^T x`` with ``D = W - W*`` and
    ``r = y - W*^T x``, so that the loss ``mean |y - W^T x|^2 / 2`` is the teacher's loss plus
    both (docs/proteins.md, "The held-out floor as a named misspecification term")."""
    r, e = y - x @ teacher, x @ (W - teacher)
    return float(np.mean(np.sum(e * e, axis=1)) / 2), float(-np.mean(np.sum(r * e, axis=1)))


def ridge_kappa(eigenvalues: np.ndarray, *, M: int, penalty: float) -> float:
    """The effective ridge ``kappa`` of ridge regression on ``M`` Gaussian rows with covariance of
    the given eigenvalues and the penalty ``(penalty / 2) |W|^2`` on ``sum |y - W^T x|^2 / 2``:
    the root of ``kappa = penalty / M + (kappa / M) sum_i omega_i / (omega_i + kappa)``, taken
    from the theory's own saddle point (``rm.solve`` at ``alpha = M / d``, ridge ``penalty / d``,
    as :func:`theory_loss`; kappa depends on neither the teacher nor the noise). The mean fit is
    then ``E W = Sigma (Sigma + kappa)^-1 W*`` (the deterministic equivalent of the same Gaussian
    theory; its test loss from this ``kappa`` is :func:`theory_loss`'s, tested against a Brent
    root of the equation above)."""
    omega = np.asarray(eigenvalues, dtype=float)
    d = omega.size
    flat = np.full(d, 1.0 / d)
    return float(solve(Spectrum(omega, flat, flat, noise=0.0), alpha=M / d, lam=penalty / d).kappa)


def cross_theory(sigma: np.ndarray, teacher: np.ndarray, coupling: np.ndarray, *, M, lam: float,
                 p: int) -> np.ndarray:
    """The cross term of :func:`heldout_terms` predicted by the Gaussian theory: the mean fit's
    ``D = E W - W* = -kappa (Sigma + kappa)^-1 W*`` (:func:`ridge_kappa`) against the measured
    ``coupling = mean x r^T`` of the teacher's held-out residual ``r`` with the inputs, i.e.
    ``kappa tr(W*^T (Sigma + kappa)^-1 coupling)`` for each ``M`` (docs/proteins.md, "The held-out
    floor as a named misspecification term")."""
    omega, U = np.linalg.eigh(sigma)
    return eigenbasis_cross_theory(omega, U.T @ teacher, U.T @ coupling, M=M, lam=lam, p=p)


def eigenbasis_cross_theory(eigenvalues: np.ndarray, teacher: np.ndarray, coupling: np.ndarray, *, M,
                            lam: float, p: int) -> np.ndarray:
    """:func:`cross_theory` with ``teacher`` and ``coupling`` already in the eigenbasis of
    ``Sigma = diag(eigenvalues)``."""
    omega = np.asarray(eigenvalues, dtype=float)
    overlap = np.sum(teacher * coupling, axis=1)
    out = []
    for m in np.atleast_1d(M):
        kappa = ridge_kappa(omega, M=int(m), penalty=lam * p)
        out.append(kappa * float(np.sum(overlap / (omega + kappa))))
    return np.array(out)


def heldout_prediction(theory, *, teacher_floor: float, noise_floor: float) -> np.ndarray:
    """The prediction for the held-out loss: the theory's excess over its noise floor,
    ``theory - noise_floor``, on top of the noise the test rows carry for this teacher,
    ``teacher_floor``; i.e. ``theory + misspecification`` with ``misspecification =
    teacher_floor - noise_floor``. The cross term of :func:`heldout_terms` is not in it (it is
    measured, not assumed zero; docs/proteins.md, "The held-out floor as a named
    misspecification term")."""
    return np.asarray(theory, dtype=float) + (float(teacher_floor) - float(noise_floor))


def _columns(columns, L: int, site: int) -> np.ndarray:
    if columns is None:
        return np.arange(L)
    cols = np.asarray(columns)
    if cols.ndim != 1 or cols.dtype.kind not in "iu" or cols.size < 2:
        raise TypeError("columns must be a 1-d array of at least 2 column indices")
    if cols.min() < 0 or cols.max() >= L or np.unique(cols).size != cols.size:
        raise ValueError(f"columns must be distinct indices in [0, {L})")
    if site not in cols:
        raise ValueError(f"columns must contain the site {site}")
    return np.sort(cols)


def theory_loss(sigma: np.ndarray, teacher: np.ndarray, noise: np.ndarray, *, M, lam: float,
                p: int) -> np.ndarray:
    """Replica test loss of the square-loss Gaussian reduction: the sum over the K columns of the
    scalar ridge predictions (``rm.solve`` on the spectral data of each column, ``alpha = M / d``,
    ridge ``lam p / d``), for each training-set size in ``M``. Computed in the eigenbasis of
    ``Sigma`` (the prediction is invariant under a rotation of the inputs): one ``eigh``, then
    :func:`eigenbasis_theory_loss`. (A Lanczos rule per column gives the same numbers to 1e-16
    but, on one-hot covariances of d = 400, runs to hundreds of steps: 10 CPU-s against 0.1.)"""
    omega, U = np.linalg.eigh(sigma)
    return eigenbasis_theory_loss(omega, U.T @ teacher, noise, M=M, lam=lam, p=p)


def eigenbasis_theory_loss(eigenvalues: np.ndarray, teacher: np.ndarray, noise: np.ndarray, *, M,
                           lam: float, p: int) -> np.ndarray:
    """:func:`theory_loss` for a task already in the eigenbasis of ``Sigma = diag(eigenvalues)``:
    the teacher's spectral measure of column ``a`` is then ``teacher[:, a]**2`` on the
    eigenvalues themselves, exactly (one mode per eigenvalue, bulk weight ``1/d``), so no Lanczos
    rule is needed (:mod:`replica_mlm.proteins.pool_curve`, whose task is built so)."""
    omega = np.asarray(eigenvalues, dtype=float)
    d = omega.size
    bulk = np.full(d, 1.0 / d)
    tasks = [Spectrum(omega, bulk, teacher[:, a] ** 2, noise=float(noise[a]))
             for a in range(teacher.shape[1])]
    return np.array([sum(solve(t, alpha=m / d, lam=lam * p / d).test_loss for t in tasks)
                     for m in np.atleast_1d(M)])


def class_moments(x: np.ndarray, colours: np.ndarray, ridge: float):
    """The site's colours present in the pool as classes: ``(classes, weights, means, counts, S)`` with
    ``S`` the pooled within-class covariance of the (centred) inputs plus ``ridge`` on its diagonal,
    so that ``S + sum_c pi_c mu_c mu_c^T`` is the pool's ``Sigma`` with the same ridge."""
    classes, inverse, counts = np.unique(colours, return_inverse=True, return_counts=True)
    weights = counts / colours.size
    means = np.zeros((classes.size, x.shape[1]))
    np.add.at(means, inverse, x)
    means /= counts[:, None]
    resid = x - means[inverse]
    S = resid.T @ resid / colours.size
    S[np.diag_indices_from(S)] += ridge
    return classes, weights, means, counts, S


def mixture_loss(weights, means, S, targets, *, M, lam: float, p: int) -> tuple[np.ndarray, float]:
    """Replica test loss of the same ridge on the class-conditional moments (docs/proteins.md,
    "The class-conditional moments beside the Gaussian reduction"):
    :mod:`replica_mlm.theory.solvers.mixture_ridge` with the targets ``t_c`` (C, K), at
    ``alpha = M / d`` and ridge ``lam p / d``; and its M -> infinity limit (half the summed
    residual of the best linear predictor)."""
    d = S.shape[0]
    th = MixtureRidgeTheory(weights=weights, means=means, covariance=S, targets=targets)
    points = mixture_ridge_curve(th, alpha=np.atleast_1d(M) / d, lam=lam * p / d)
    return np.array([pt.test_loss for pt in points]), float(th.gaussian_equivalent()[2].sum() / 2)


def site_learning_curve(msa, site: int, *, M, lam: float, subsamples: int = 5,
                        test_fraction: float = 0.2, rng: _checks.RngLike = 0,
                        columns=None) -> SiteLearningCurve:
    """Test loss of ``site`` against the number of training sequences, measured and predicted.

    Parameters
    ----------
    msa : MSA
        The alignment (:class:`replica_mlm.proteins.msa.MSA`).
    site : int
        Column of ``msa`` whose residue is predicted.
    M : sequence of int
        Training-set sizes, each at most the pool size (``N`` minus the test rows).
    lam : float
        Ridge strength (> 0), the same for the student and the teacher.
    subsamples : int
        Random training sets per M (>= 2: the standard error is their spread).
    test_fraction : float in (0, 1)
        Fraction of the rows held out (drawn once) for testing.
    rng : int, Generator or None
        Draws the test rows and the subsamples.
    columns : sequence of int, optional
        The columns used as inputs and the site (a window around it keeps ``d`` small); default
        all. Theory and measurement use the same ones.

    Returns
    -------
    SiteLearningCurve

    Raises
    ------
    ValueError
        For a site or column outside the alignment, an M larger than the pool, ``subsamples`` < 2
        or ``test_fraction`` outside (0, 1).
    """
    from replica_mlm.proteins.msa import MSA

    if not isinstance(msa, MSA):
        raise TypeError(f"msa must be an MSA, got {type(msa).__name__}")
    site = _checks.site_index(site, msa.L)
    lam = _checks.positive(lam, "lam")
    subsamples = _checks.positive_int(subsamples, "subsamples")
    if subsamples < 2:
        raise ValueError(f"subsamples must be >= 2 (the error bar is their spread), got {subsamples}")
    frac = _checks.as_scalar(test_fraction, "test_fraction")
    if not 0 < frac < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {frac}")
    gen = _checks.as_generator(rng)
    cols = _columns(columns, msa.L, site)
    sizes = np.atleast_1d(np.asarray(M))
    if sizes.ndim != 1 or sizes.dtype.kind not in "iu" or sizes.size == 0:
        raise TypeError("M must be an int or a 1-d sequence of ints")
    seqs = msa.sequences[:, cols].astype(np.intp)
    local = int(np.flatnonzero(cols == site)[0])
    order = gen.permutation(msa.N)
    n_test = max(1, round(frac * msa.N))
    test, pool = seqs[order[:n_test]], seqs[order[n_test:]]
    if sizes.min() < 1 or sizes.max() > pool.shape[0]:
        raise ValueError(f"M must be in [1, {pool.shape[0]}] (the pool: N minus the test rows)")

    P = simplex_basis(msa.q)
    p = cols.size - 1
    mean = P[pool].mean(axis=0)  # (L, K): centres inputs and label alike
    x, xt = reduced_inputs(pool, local, P, mean), reduced_inputs(test, local, P, mean)
    y, yt = P[pool[:, local]] - mean[local], P[test[:, local]] - mean[local]
    d = x.shape[1]
    sigma = x.T @ x / x.shape[0]
    ridge = RIDGE * np.trace(sigma) / d
    sigma[np.diag_indices_from(sigma)] += ridge
    teacher = ridge_fit(x, y, lam, p)
    noise = np.mean((y - x @ teacher) ** 2, axis=0)
    omega, U = np.linalg.eigh(sigma)  # once, for the theory and the cross term's prediction
    rotated = U.T @ teacher
    theory = eigenbasis_theory_loss(omega, rotated, noise, M=sizes, lam=lam, p=p)
    coupling = xt.T @ (yt - xt @ teacher) / xt.shape[0]  # mean x r^T of the held-out residual
    predicted_cross = eigenbasis_cross_theory(omega, rotated, U.T @ coupling, M=sizes, lam=lam, p=p)
    classes, weights, means, counts, S = class_moments(x, pool[:, local], ridge)
    mixture, mixture_floor = mixture_loss(weights, means, S, P[classes] - mean[local], M=sizes, lam=lam,
                                          p=p)

    losses = np.empty((sizes.size, subsamples))
    excess, cross, excess_pool = np.empty_like(losses), np.empty_like(losses), np.empty_like(losses)
    for k, m in enumerate(sizes):
        for s in range(subsamples):
            rows = gen.choice(pool.shape[0], size=int(m), replace=False)
            W = ridge_fit(x[rows], y[rows], lam, p)
            losses[k, s] = _square_loss(xt, yt, W)
            excess[k, s], cross[k, s] = heldout_terms(xt, yt, W, teacher)
            D = W - teacher
            excess_pool[k, s] = float(np.sum(D * (sigma @ D))) / 2
    freq = np.bincount(pool[:, local], minlength=msa.q) / pool.shape[0]
    entropy = float(-np.sum(freq[freq > 0] * np.log(freq[freq > 0])))
    return SiteLearningCurve(site=site, columns=cols, lam=lam, p=p, d=d, M=sizes, losses=losses,
                             theory=theory, teacher_floor=_square_loss(xt, yt, teacher),
                             noise_floor=float(noise.sum() / 2), n_pool=pool.shape[0],
                             n_test=n_test, entropy=entropy, sigma=sigma,
                             teacher=teacher, noise=noise, mixture=mixture, mixture_floor=mixture_floor,
                             classes=classes, smallest_class=int(counts.min()), excess=excess,
                             cross=cross, cross_predicted=predicted_cross, excess_pool=excess_pool)
