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

Also here: :func:`reconstruction_error`, the gauge-invariant distance between coupling tensors,
and (defined in :mod:`replica_mlm.discrete.plm`, importable from here) :class:`FullCouplingPotts`,
a plmDCA-style asymmetric pseudo-likelihood fit of full ``q x q`` coupling blocks (Ekeberg et al.
2013).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy.special import log_softmax, softmax

from replica_mlm import _checks
from replica_mlm._checks import (
    RngLike,
    as_generator,
    finite_array,
    nonnegative,
    positive,
    positive_int,
    site_index,
    square_matrix,
)
from replica_mlm.discrete.plm import FullCouplingPotts, _onehot_sparse, _PLMProblem  # noqa: F401
from replica_mlm.discrete.potts import check_sequences
from replica_mlm.discrete.potts import nll_from_logits as _nll

__all__ = [
    "FactoredAttention",
    "FitInfo",
    "FullCouplingPotts",
    "reconstruction_error",
    "zero_sum_gauge",
]

VARIANTS = ("linear", "softmax")
METHODS = ("lbfgs", "sgd")


@dataclass
class FitInfo:
    """How a fit went.

    Attributes
    ----------
    variant, method : str
        ``"linear"``/``"softmax"`` and ``"lbfgs"``/``"sgd"``.
    lam : float
        Regularisation strength (see the module docstring for its scaling).
    n_iter : int
        L-BFGS iterations or SGD epochs.
    converged : bool
        L-BFGS's own convergence flag (always True for SGD, which runs a fixed schedule).
    message : str
        The optimiser's message.
    objective : float
        Final value of the penalised objective ``F``.
    train_loss : float
        Unpenalised MLM loss on the training sequences.
    history : ndarray
        Training MLM loss after each iteration (L-BFGS) or epoch (SGD).
    monitor_history : ndarray
        MLM loss on ``monitor`` sequences at the same points (empty if none were given).
    logits : ndarray or None
        Softmax variant: the fitted attention logits ``S`` (L, L).
    """

    variant: str
    method: str
    lam: float
    n_iter: int
    converged: bool
    message: str
    objective: float
    train_loss: float
    history: np.ndarray = field(repr=False)
    monitor_history: np.ndarray = field(repr=False)
    logits: np.ndarray | None = field(default=None, repr=False)


# ---------------------------------------------------------------------- gauge-invariant comparison
def zero_sum_gauge(W) -> np.ndarray:
    """Double-centre every ``q x q`` block of an (L, L, q, q) coupling tensor; zero diagonal blocks.

    ``W_ij[a, b] -> W_ij[a, b] - mean_a - mean_b + mean_ab``. The conditionals are unchanged by
    ``W_ij[a, b] += c_ij[b]`` and by ``W_ij[a, b] += f_ij[a]`` with ``sum_j f_ij[a] = 0``; the
    zero-sum gauge removes both, so it compares couplings and not their gauge.
    """
    W = finite_array(W, "W", ndim=4)
    if W.shape[0] != W.shape[1] or W.shape[2] != W.shape[3]:
        raise ValueError(f"W must have shape (L, L, q, q), got {W.shape}")
    Wc = (
        W
        - W.mean(axis=2, keepdims=True)
        - W.mean(axis=3, keepdims=True)
        + W.mean(axis=(2, 3), keepdims=True)
    )
    idx = np.arange(W.shape[0])
    Wc[idx, idx] = 0.0
    return Wc


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
        """
        variant = _checks.choice(variant, VARIANTS, "variant")
        method = _checks.choice(method, METHODS, "method")
        q = positive_int(q, "q")
        if q < 2:
            raise ValueError(f"q must be >= 2, got {q}")
        lam = nonnegative(lam, "lam")
        arr = _checks.real_array(seqs, "seqs")
        if arr.ndim != 2:
            raise ValueError(f"seqs must have shape (M, L), got shape {arr.shape}")
        L = arr.shape[1]
        if L < 2:
            raise ValueError(f"seqs must have length L >= 2, got L = {L}")
        s = check_sequences(arr, L=L, q=q)
        mon = None if monitor is None else check_sequences(monitor, L=L, q=q, name="monitor")
        gen = as_generator(rng)
        init_scale = positive(init_scale, "init_scale")
        # every option is checked, whichever method uses it
        max_iter = positive_int(max_iter, "max_iter")
        tol = positive(tol, "tol")
        epochs = positive_int(epochs, "epochs")
        batch_size = positive_int(batch_size, "batch_size")
        lr = positive(lr, "lr")
        # the one-hot data and the (M, L, q) logits, probabilities and gradients
        _checks.allocation(8 * 8 * s.size * q, f"FactoredAttention.fit on {s.shape[0]} sequences")
        if method == "sgd":
            _checks.work(epochs * s.size * (L + q) * q, f"FactoredAttention.fit(epochs={epochs})")
            _checks.allocation(8 * 4 * epochs, f"FactoredAttention.fit(epochs={epochs})")
        unseen = np.setdiff1d(np.arange(q), s)
        if unseen.size:
            warnings.warn(
                f"colours {unseen.tolist()} of q = {q} never occur in seqs: their rows and columns "
                "of V are set by the initialisation and the penalty alone, not by the data",
                UserWarning, stacklevel=2,
            )
        problem = _FAProblem(s, q, lam, variant)
        x0 = problem.init(gen, init_scale)
        if method == "lbfgs":
            x, info = _run_lbfgs(problem, x0, max_iter=max_iter, tol=tol, monitor=mon)
        else:
            x, info = _run_sgd(problem, x0, gen, epochs=epochs, batch_size=batch_size, lr=lr,
                               monitor=mon)
        A, V, S = problem.unpack(x)
        info.logits = S
        return cls(attention=A, value=V, fit_info=info)


# ---------------------------------------------------------------------- internals
class _FAProblem:
    """Objective and analytic gradient of factored-attention MLM training.

    Packing: ``x = [off-diagonal entries of A (linear) or S (softmax), V.ravel()]``.
    Gradient of the summed loss with ``G = P_model - onehot`` (n, L, q) and ``Y[n, j] = V e_{s_j}``:
    ``dA = sum_n G_n Y_n^T`` (zero diagonal), ``dV = sum_n (A^T G_n)^T X_n``, and for the softmax
    variant ``dS_ij = A_ij (dA_ij - sum_k A_ik dA_ik)``.
    """

    def __init__(self, s: np.ndarray, q: int, lam: float, variant: str) -> None:
        self.s = s
        self.M, self.L = s.shape
        self.q = q
        self.lam = lam
        self.coef = lam * (self.L - 1)
        self.variant = variant
        self.off = ~np.eye(self.L, dtype=bool)
        self.n_att = self.L * (self.L - 1)
        self.onehot = np.eye(q)[s.ravel()]  # (M L, q)

    def init(self, gen: np.random.Generator, scale: float) -> np.ndarray:
        a = gen.standard_normal(self.n_att) * (scale if self.variant == "softmax" else scale / 2)
        v = gen.standard_normal(self.q * self.q) * scale
        return np.concatenate([a, v])

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        B = np.zeros((self.L, self.L))
        B[self.off] = x[: self.n_att]
        V = x[self.n_att :].reshape(self.q, self.q)
        if self.variant == "linear":
            return B, V, None
        return _row_softmax(B), V, B

    def loss_grad(self, x: np.ndarray, idx: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """Penalised objective F (per training sequence) and its gradient on rows ``idx``.

        On a mini-batch the data term is averaged over the batch, the penalty is the full one
        divided by M, so the expected mini-batch objective is F.
        """
        s = self.s if idx is None else self.s[idx]
        nb = s.shape[0]
        A, V, S = self.unpack(x)
        Y = V.T[s]  # (n, L, q): Y[n, j, a] = V[a, s_j]
        Z = np.matmul(A, Y)
        m = Z.max(axis=2, keepdims=True)
        G = np.exp(Z - m)
        tot = G.sum(axis=2, keepdims=True)
        G /= tot  # P_model
        lse = m + np.log(tot)
        nll = float(lse.sum() - np.take_along_axis(Z, s[:, :, None], axis=2).sum())
        np.put_along_axis(G, s[:, :, None], np.take_along_axis(G, s[:, :, None], axis=2) - 1.0, 2)
        dA = np.tensordot(G, Y, axes=([0, 2], [0, 2]))  # (L, L)
        H = np.matmul(A.T, G).reshape(nb * self.L, self.q)  # H[n, j, a] = sum_i A_ij G[n, i, a]
        X = self.onehot if idx is None else np.eye(self.q)[s.ravel()]
        dV = H.T @ X  # dV[a, b] = sum over (n, j) with s_nj = b of H[n, j, a]
        if self.variant == "softmax":
            dB = A * (dA - np.sum(A * dA, axis=1, keepdims=True))
            B = S
        else:
            dB = dA
            B = A
        pen = 0.5 * self.coef * (float(np.sum(B[self.off] ** 2)) + float(np.sum(V * V)))
        f = nll / nb + pen / self.M
        g = np.concatenate([dB[self.off] / nb + self.coef * B[self.off] / self.M,
                            dV.ravel() / nb + self.coef * V.ravel() / self.M])
        return f, g

    def train_loss(self, x: np.ndarray) -> float:
        A, V, _ = self.unpack(x)
        return _nll(np.matmul(A, V.T[self.s]), self.s)

    def loss_on(self, x: np.ndarray, s: np.ndarray) -> float:
        A, V, _ = self.unpack(x)
        return _nll(np.matmul(A, V.T[s]), s)


def _row_softmax(B: np.ndarray) -> np.ndarray:
    """``softmax_{j != i}(B_ij)`` row by row, zero diagonal."""
    L = B.shape[0]
    Bm = np.where(np.eye(L, dtype=bool), -np.inf, B)
    return softmax(Bm, axis=1)


def _history_recorder(problem: _FAProblem, monitor) -> tuple[list, list, Callable]:
    hist: list[float] = []
    mon: list[float] = []

    def record(x: np.ndarray) -> None:
        hist.append(problem.train_loss(x))
        if monitor is not None:
            mon.append(problem.loss_on(x, monitor))

    return hist, mon, record


def _run_lbfgs(problem: _FAProblem, x0, *, max_iter: int, tol: float, monitor):
    hist, mon, record = _history_recorder(problem, monitor)
    res = optimize.minimize(
        problem.loss_grad,
        x0,
        jac=True,
        method="L-BFGS-B",
        callback=record,
        options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-8, "maxcor": 20},
    )
    info = FitInfo(
        variant=problem.variant,
        method="lbfgs",
        lam=problem.lam,
        n_iter=int(res.nit),
        converged=bool(res.success),
        message=str(res.message),
        objective=float(res.fun),
        train_loss=problem.train_loss(res.x),
        history=np.asarray(hist),
        monitor_history=np.asarray(mon),
    )
    return res.x, info


def _run_sgd(problem: _FAProblem, x0, gen, *, epochs: int, batch_size: int, lr: float, monitor):
    hist, mon, record = _history_recorder(problem, monitor)
    x = x0.copy()
    M = problem.M
    per_epoch = math.ceil(M / batch_size)
    T = epochs * per_epoch
    t = 0
    for _ in range(epochs):
        perm = gen.permutation(M)
        for k in range(per_epoch):
            idx = perm[k * batch_size : (k + 1) * batch_size]
            _, g = problem.loss_grad(x, idx)
            x -= lr * 0.5 * (1.0 + math.cos(math.pi * t / T)) * g
            t += 1
        record(x)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"SGD diverged (non-finite parameters) at lr={lr}: lower lr")
    f, _ = problem.loss_grad(x)
    info = FitInfo(
        variant=problem.variant,
        method="sgd",
        lam=problem.lam,
        n_iter=epochs,
        converged=True,
        message=f"cosine schedule, {T} steps of batch {batch_size}, lr {lr:g}",
        objective=float(f),
        train_loss=problem.train_loss(x),
        history=np.asarray(hist),
        monitor_history=np.asarray(mon),
    )
    return x, info
