"""Factored self-attention trained by masked language modelling (docs/potts.md).

Factored attention decouples positions from colours. With the identity embedding and the mask token
equal to 0, the output at a masked site ``i`` is

    z_i = sum_{j != i} A_ij V e_{s_j},        P_model(s_i = a | s_-i) = softmax_a(z_i)      (docs/potts.md)

and the MLM loss ``-(1/n) sum_mu sum_i log P_model(s_i^mu | s_-i^mu)`` (every site masked in turn)
is the negative log pseudo-likelihood of a generalised Potts model with couplings ``W_ij = A_ij V``.
With ``A = beta J`` and ``V = U`` the layer reproduces the Potts conditional exactly.

Training (:meth:`FactoredAttention.fit`) minimises, for ``M`` training sequences and ``p = L - 1``,

    F(A, V) = (1/M) [ sum_mu sum_i -log P_model(s_i^mu | s_-i^mu) + (lam p / 2)(|A|^2 + |V|^2) ]

(Frobenius norms; for the softmax variant ``|A|^2`` is replaced by ``|S|^2``, the attention logits).
The loss is a *sum* over sequences and the penalty is fixed, so, as for the ridge estimator of
docs/theory.md, s. 1 (penalty ``lam p |w|^2 / 2``), the regularisation fades as ``lam p / M = lam / alpha``
with ``alpha = M / p`` and the estimator is consistent at any fixed ``lam``. Because only
``W = A V`` is identifiable, at any minimiser ``|A| = |V|`` and the penalty equals
``lam p |W|_F`` with ``|W|_F^2 = sum_ij |W_ij|_F^2``: a norm (not squared-norm) penalty on the
coupling tensor.

Two variants:

* ``"linear"``: ``A`` is a free L x L matrix with zero diagonal, the exact Potts form.
* ``"softmax"``: the transformer's positional attention ``A_ij = softmax_{j != i}(S_ij)`` with
  ``S_ij = p_i^T Q K^T p_j``. For an embedding dimension ``d >= L`` the logits ``S`` are an
  arbitrary L x L matrix, so we fit ``S`` directly. **Restriction**: every row of ``A`` is positive
  and sums to one, so ``W_ij = A_ij V`` has the same sign pattern as ``V`` for every pair and the
  total coupling ``sum_j A_ij`` of every site is 1. Couplings ``beta J_ij U`` with ``J`` of mixed
  sign, or rows of ``J`` with different sums, are not representable: the softmax layer cannot reach
  the conditional entropy on such data (the validation entry measures the gap).

Also here: :func:`reconstruction_error`, the gauge-invariant distance between coupling tensors.
The plmDCA-style fit of full ``q x q`` coupling blocks that factored attention is compared with
(Ekeberg et al. 2013) is :class:`replica_mlm.learners.plm.FullCouplingPotts`.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import log_softmax

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import (
    RngLike,
    as_generator,
    finite_array,
    nonnegative,
    positive,
    positive_int,
    site_index,
    square_matrix,
)
from replica_mlm.learners.attention_fit import FactoredAttentionProblem, _run_sgd, fit_lbfgs
from replica_mlm.learners.fit_info import FitInfo
from replica_mlm.learners.gauge import double_centre_in_place
from replica_mlm.potts.model import check_sequences
from replica_mlm.potts.model import nll_from_logits as _nll

__all__ = [
    "FactoredAttention",
    "FitInfo",
    "reconstruction_error",
    "zero_sum_gauge",
]

VARIANTS = ("linear", "softmax")
METHODS = ("lbfgs", "sgd")
INITS = ("random", "mean-field")


# ---------------------------------------------------------------------- gauge-invariant comparison
def zero_sum_gauge(W) -> np.ndarray:
    """Double-centre every ``q x q`` block of an (L, L, q, q) coupling tensor; zero diagonal blocks.

    ``W_ij[a, b] -> W_ij[a, b] - mean_a - mean_b + mean_ab``. The conditionals are unchanged by
    ``W_ij[a, b] += c_ij[b]`` and by ``W_ij[a, b] += f_ij[a]`` with ``sum_j f_ij[a] = 0``; the
    zero-sum gauge removes both, so it compares couplings and not their gauge.
    """
    Wc = finite_array(W, "W", ndim=4)  # a new array: centred in place, no (L q)^2 temporaries
    if Wc.shape[0] != Wc.shape[1] or Wc.shape[2] != Wc.shape[3]:
        raise ValueError(f"W must have shape (L, L, q, q), got {Wc.shape}")
    return zero_sum_in_place(Wc)


def zero_sum_in_place(W: np.ndarray) -> np.ndarray:
    """:func:`zero_sum_gauge` written over ``W`` (a float64 (L, L, q, q) array of the caller's,
    unchecked), which is returned."""
    double_centre_in_place(W)
    idx = np.arange(W.shape[0])
    W[idx, idx] = 0.0
    return W


def reconstruction_error(W, W_true, *, symmetrise: bool = False) -> float:
    """Relative Frobenius error ``|W - W_true| / |W_true|`` in the zero-sum gauge.

    Parameters
    ----------
    W, W_true : arrays (L, L, q, q)
        Estimated and true couplings (e.g. ``fa.couplings()`` and ``pm.coupling_tensor()``).
    symmetrise : bool
        Replace the estimate by ``(W_ij + W_ji^T) / 2`` first (the plmDCA symmetrisation).
    """
    W = finite_array(W, "W", ndim=4)
    W_true = finite_array(W_true, "W_true", ndim=4)
    symmetrise = _checks.flag(symmetrise, "symmetrise")
    if W.shape != W_true.shape:
        raise ValueError(f"W and W_true must have the same shape, got {W.shape} and {W_true.shape}")
    if symmetrise:
        W = 0.5 * (W + W.transpose(1, 0, 3, 2))
    Wc, Tc = zero_sum_gauge(W), zero_sum_gauge(W_true)
    norm = float(np.linalg.norm(Tc))
    if norm == 0.0:
        raise ValueError("W_true has no coupling in the zero-sum gauge: relative error undefined")
    return float(np.linalg.norm(Wc - Tc) / norm)


# ---------------------------------------------------------------------- factored attention
class FactoredAttention:
    """One layer of factored self-attention for masked language modelling (docs/potts.md).

    Parameters
    ----------
    attention : array (L, L)
        ``A``; its diagonal must be zero (a masked site does not attend to itself). Any real
        matrix otherwise (the softmax variant's rows are positive and sum to one).
    value : array (q, q)
        ``V``, the value map acting on one-hot colours.

    Notes
    -----
    ``P_model(s_i = a | s_-i) = softmax_a( sum_{j != i} A_ij V_{a s_j} )``; with ``A = beta J``,
    ``V = U`` this is the Potts conditional. Only ``W_ij = A_ij V`` (:meth:`couplings`) is
    identifiable.
    """

    def __init__(self, attention, value, *, fit_info: FitInfo | None = None) -> None:
        A = square_matrix(attention, "attention A")
        V = square_matrix(value, "value V")
        if A.shape[0] < 2:
            raise ValueError(f"attention A must be at least 2 x 2 (L >= 2), got shape {A.shape}")
        if V.shape[0] < 2:
            raise ValueError(f"value V must be at least 2 x 2 (q >= 2), got shape {V.shape}")
        d = float(np.max(np.abs(np.diag(A))))
        if d != 0.0:
            raise ValueError(
                "attention A must have a zero diagonal (a masked site does not attend to itself), "
                f"got max |A_ii| = {d:.3g}"
            )
        if fit_info is not None and not isinstance(fit_info, FitInfo):
            raise TypeError(f"fit_info must be a FitInfo or None, got {type(fit_info).__name__}")
        self._A = A
        self._V = V
        self._A.flags.writeable = False
        self._V.flags.writeable = False
        self.fit_info = fit_info

    @property
    def attention(self) -> np.ndarray:
        return self._A

    @property
    def value(self) -> np.ndarray:
        return self._V

    @property
    def L(self) -> int:
        return self._A.shape[0]

    @property
    def q(self) -> int:
        return self._V.shape[0]

    def __repr__(self) -> str:
        v = f", variant={self.fit_info.variant!r}" if self.fit_info else ""
        return f"FactoredAttention(L={self.L}, q={self.q}{v})"

    def couplings(self) -> np.ndarray:
        """The identifiable coupling tensor ``W_ij = A_ij V``, shape (L, L, q, q)."""
        return self._A[:, :, None, None] * self._V[None, None, :, :]

    def _check(self, seqs) -> np.ndarray:
        return check_sequences(seqs, L=self.L, q=self.q)

    def logits(self, seqs) -> np.ndarray:
        """``z_i = sum_{j != i} A_ij V e_{s_j}`` for every sequence and site: (n, L, q)."""
        s = self._check(seqs)
        return np.matmul(self._A, self._V.T[s])

    def conditionals(self, seqs) -> np.ndarray:
        """Per-site predictions ``P_model(s_i = a | s_-i)`` for all sites: (n, L, q)."""
        return np.exp(log_softmax(self.logits(seqs), axis=2))

    def conditional(self, seqs, i: int) -> np.ndarray:
        """Prediction for masked site ``i``: (n, q), comparable with ``PottsModel.conditional``."""
        s = self._check(seqs)
        i = site_index(i, self.L)
        z = np.einsum("j,nja->na", self._A[i], self._V.T[s])
        return np.exp(log_softmax(z, axis=1))

    def mlm_loss(self, seqs) -> float:
        """``-(1/n) sum_mu sum_i log P_model(s_i^mu | s_-i^mu)``, masking every site in turn.

        Same normalisation as :meth:`PottsModel.neg_pseudo_loglikelihood`.
        """
        s = self._check(seqs)
        return _nll(np.matmul(self._A, self._V.T[s]), s)

    # ------------------------------------------------------------------ training
    @classmethod
    def fit(
        cls,
        seqs,
        q: int,
        lam: float = 1e-3,
        variant: str = "linear",
        rng: RngLike = 0,
        *,
        method: str = "lbfgs",
        max_iter: int = 1000,
        tol: float = 1e-9,
        epochs: int = 200,
        batch_size: int = 64,
        lr: float = 0.05,
        init_scale: float = 0.1,
        monitor=None,
        init: str = "random",
        gtol: float = 1e-7,
        newton_iter: int = 20,
    ) -> FactoredAttention:
        """Train by masked language modelling on ``seqs`` (n, L) with colours in [0, q).

        Parameters
        ----------
        seqs : int array (M, L)
            Training sequences.
        q : int
            Number of colours (>= 2).
        lam : float
            Regularisation ``>= 0``; objective ``F`` of the module docstring (penalty
            ``(lam p / 2)(|A|^2 + |V|^2)`` added to the *summed* loss, ``p = L - 1``).
        variant : {"linear", "softmax"}
            Free attention matrix, or row-softmax positional attention (positive rows summing to 1).
        rng : int or Generator
            Seed of the random initialisation (``A`` or ``S`` and ``V`` i.i.d. normal times
            ``init_scale``) and of SGD's mini-batches.
        method : {"lbfgs", "sgd"}
            L-BFGS on the full objective with analytic gradients (scipy, default), or mini-batch
            SGD with a cosine learning-rate schedule ``lr_t = lr (1 + cos(pi t / T)) / 2``.
        max_iter, tol
            L-BFGS iteration limit and relative tolerance on the objective (``ftol``).
        epochs, batch_size, lr
            SGD schedule (``T = epochs * ceil(M / batch_size)`` steps).
        monitor : int array (n, L), optional
            Held-out sequences whose MLM loss is recorded after every iteration / epoch.
        init : {"random", "mean-field"}
            Start from the random initialisation above, or (deterministic, ``rng`` then only
            seeds SGD's mini-batches) from the nearest ``A (x) V`` to the mean-field couplings
            (:meth:`replica_mlm.learners.attention_fit.FactoredAttentionProblem.mean_field_init`). ``F`` is
            not convex: from small random starts L-BFGS can end in a worse local minimum (on
            ``L = 6, q = 4`` data, 2 of 4 seeds stopped 0.027 nats per sequence above the
            minimum that the mean-field start reaches).
        gtol : float
            Stationarity target: ``converged`` is True when ``|grad F| max(|x|, 1) <= gtol``
            (nats per sequence, ``x`` all parameters). If L-BFGS stops above it, the linear
            variant is rebalanced (``|A| = |V|``) and polished by up to ``newton_iter``
            trust-region Newton-CG iterations with the exact Hessian-vector product.
        newton_iter : int
            Limit of those Newton iterations (0: L-BFGS only).
        """
        variant = _checks.choice(variant, VARIANTS, "variant")
        method = _checks.choice(method, METHODS, "method")
        q = positive_int(q, "q")
        if q < 2:
            raise ValueError(f"q must be >= 2, got {q}")
        lam = nonnegative(lam, "lam")
        s = _training_sequences(seqs, q)
        mon = None if monitor is None else check_sequences(monitor, L=s.shape[1], q=q, name="monitor")
        gen = as_generator(rng)
        init_scale = positive(init_scale, "init_scale")
        max_iter, tol, epochs, batch_size, lr, init, gtol, newton_iter = _fit_options(
            max_iter, tol, epochs, batch_size, lr, init, gtol, newton_iter)
        _check_fit_cost(s, q, method, epochs, init)
        _warn_unseen(s, q)
        problem = FactoredAttentionProblem(s, q, lam, variant)
        x0 = problem.init(gen, init_scale) if init == "random" else problem.mean_field_init()
        if method == "lbfgs":
            x, info = fit_lbfgs(problem, x0, max_iter=max_iter, tol=tol, monitor=mon, gtol=gtol,
                                 newton_iter=newton_iter, init=init)
        else:
            x, info = _run_sgd(problem, x0, gen, epochs=epochs, batch_size=batch_size, lr=lr,
                               monitor=mon, gtol=gtol, init=init)
        A, V, S = problem.unpack(x)
        info.logits = S
        return cls(attention=A, value=V, fit_info=info)


def _training_sequences(seqs, q: int) -> np.ndarray:
    """The training sequences of :meth:`FactoredAttention.fit`, checked: shape (M, L) with
    L >= 2, colours in [0, q)."""
    arr = _checks.real_array(seqs, "seqs")
    if arr.ndim != 2:
        raise ValueError(f"seqs must have shape (M, L), got shape {arr.shape}")
    L = arr.shape[1]
    if L < 2:
        raise ValueError(f"seqs must have length L >= 2, got L = {L}")
    return check_sequences(arr, L=L, q=q)


def _fit_options(max_iter, tol, epochs, batch_size, lr, init, gtol, newton_iter) -> tuple:
    """The solver options of :meth:`FactoredAttention.fit`, checked in this order: every one,
    whichever method uses it."""
    max_iter = positive_int(max_iter, "max_iter")
    tol = positive(tol, "tol")
    epochs = positive_int(epochs, "epochs")
    batch_size = positive_int(batch_size, "batch_size")
    lr = positive(lr, "lr")
    init = _checks.choice(init, INITS, "init")
    gtol = positive(gtol, "gtol")
    newton_iter = _checks.nonnegative_int(newton_iter, "newton_iter")
    return max_iter, tol, epochs, batch_size, lr, init, gtol, newton_iter


def _check_fit_cost(s: np.ndarray, q: int, method: str, epochs: int, init: str) -> None:
    """Refuse a fit whose memory or work is out of reach, before any of it is spent: the one-hot
    data and the (M, L, q) logits, probabilities and gradients; SGD's epochs; the mean-field start."""
    L = s.shape[1]
    # the one-hot data and the (M, L, q) logits, probabilities and gradients
    _checks.allocation(8 * 8 * s.size * q, f"FactoredAttention.fit on {s.shape[0]} sequences")
    if method == "sgd":
        _checks.work(epochs * s.size * (L + q) * q, f"FactoredAttention.fit(epochs={epochs})")
        _checks.allocation(8 * 4 * epochs, f"FactoredAttention.fit(epochs={epochs})")
    if init == "mean-field":  # covariance, its inverse and the SVD of (L q)^2 matrices
        _checks.allocation(8 * 4 * (L * q) ** 2, f"FactoredAttention.fit(init='mean-field') "
                                                 f"at L q = {L * q}")
        _checks.work((L * q) ** 3 + s.shape[0] * (L * q) ** 2,
                     f"FactoredAttention.fit(init='mean-field') at L q = {L * q}")


def _warn_unseen(s: np.ndarray, q: int) -> None:
    """UserWarning (at the caller of :meth:`FactoredAttention.fit`) if a colour never occurs in
    the training sequences."""
    unseen = np.setdiff1d(np.arange(q), s)
    if unseen.size:
        warnings.warn(
            f"colours {unseen.tolist()} of q = {q} never occur in seqs: their rows and columns "
            "of V are set by the initialisation and the penalty alone, not by the data",
            UserWarning, stacklevel=3,
        )
