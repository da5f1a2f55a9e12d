"""Self-attention as an attractor network (see docs/attractor.md).

D'Amico & Negri 2024, arXiv:2409.16112.

Tokens are vector spins ``x_i`` in R^d, i = 1..N, coupled by matrices ``J_ij`` in R^{d x d}
(``J_ii`` is unused and kept at zero). The local energy of token i is

    e_i(x; J) = -(1/beta) log sum_{j != i} exp(beta x_i^T J_ij x_j)

and its negative gradient with respect to ``x_i`` is a self-attention layer whose value map is the
coupling itself:

    -d e_i / d x_i = sum_{j != i} a_ij J_ij x_j,      a_ij = softmax_{j != i}(beta x_i^T J_ij x_j).

(The scores also depend on ``x_i`` through ``x_i^T J_ij x_j`` only linearly, so the softmax weights
of the log-sum-exp are exactly the attention weights.) The recurrent model iterates

    x_i(t+1) = normalise((1 - gamma) sum_j a_ij J_ij x_j(t) + gamma x_i(t)),

all tokens in parallel. ``sum_i e_i`` is *not* a Lyapunov function of these dynamics
(``J_ij != J_ji^T`` in general and every token descends its own energy), so they need not settle.

Training (:meth:`AttractorNetwork.fit`) uses only the local rule: gradient descent on

    L(J) = (1/M) sum_mu sum_i e_i(x^mu; J) + (lambda / 2) sum_{i != j} ||J_ij||_F^2,
    dL / dJ_ij = -(1/M) sum_mu a_ij^mu x_i^mu (x_j^mu)^T + lambda J_ij,

which needs no backpropagation through the dynamics: each block ``J_ij`` changes by a
(softmax-gated) Hebbian product of the two tokens it connects, plus weight decay. From ``J = 0``
the first step is exactly Hebb's rule (``a_ij = 1/(N-1)``). The weight decay ``lambda > 0`` is what
keeps ``J`` bounded: without it the first term is unbounded below (scaling ``J`` up lowers every
``e_i`` whose largest score is positive), while with it ``L`` is bounded below and coercive
(``e_i >= -max_j ||J_ij||_2 |x_i| |x_j|``), so a minimiser exists.

Shapes: a configuration is ``(N, d)``; every method also accepts a batch ``(M, N, d)`` and works
on it in chunks so that the ``(chunk, N, N, d)`` intermediate stays below ``_CHUNK_ELEMENTS``.
The local energies, attention, cost and gradient are computed in :mod:`replica_mlm.attractor.energy`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import as_generator, finite_array, nonnegative, positive, positive_int
from replica_mlm._base.progress import bar
from replica_mlm.attractor.energy import (
    _attention_kernel,
    _chunks,
    _cost_and_gradient,
    _energies_kernel,
    _fields,
    _offdiag_softmax,
    _scores,
)

__all__ = ["AttractorNetwork", "FitHistory"]

# ----------------------------------------------------------------------------------------------
# input checks, and the normalisation of the tokens in the dynamics
# ----------------------------------------------------------------------------------------------


def _check_couplings(couplings) -> np.ndarray:
    J = finite_array(couplings, "couplings", ndim=4)
    N, N2, d, d2 = J.shape
    if N != N2 or d != d2:
        raise ValueError(
            "couplings must have shape (N, N, d, d) (one d x d block per pair of tokens), "
            f"got {J.shape}"
        )
    if N < 2:
        raise ValueError(f"couplings must couple at least N = 2 tokens, got N = {N}")
    J = np.array(J, dtype=float, copy=True)
    J[np.arange(N), np.arange(N)] = 0.0  # J_ii is unused: keep it at zero
    return J


def _check_gamma(gamma) -> float:
    g = nonnegative(gamma, "gamma")
    if g > 1:
        raise ValueError(f"gamma must be in [0, 1] (weight of the token's own state), got {g}")
    return g


def _check_tokens(x, N: int, d: int, name: str = "x") -> tuple[np.ndarray, bool]:
    """An (N, d) or (M, N, d) finite array; returns it as (M, N, d) and whether it was batched."""
    arr = finite_array(x, name)
    if arr.ndim == 2:
        batched = False
        arr = arr[None]
    elif arr.ndim == 3:
        batched = True
    else:
        raise ValueError(
            f"{name} must have shape (N, d) = ({N}, {d}) or (M, N, d), got {arr.shape}"
        )
    if arr.shape[1:] != (N, d):
        raise ValueError(
            f"{name} must have shape (N, d) = ({N}, {d}) or (M, {N}, {d}) to match the couplings, "
            f"got {arr.shape if batched else arr.shape[1:]}"
        )
    return arr, batched


def _check_normalisation(normalisation) -> str:
    return _checks.choice(normalisation, ("none", "vmf"), "normalisation")


def _normalise(v: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """v / |v| token-wise; a token with |v| = 0 (possible only if gamma = 0) keeps ``fallback``."""
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    tiny = np.finfo(float).tiny
    safe = np.where(norm > tiny, norm, 1.0)
    return np.where(norm > tiny, v / safe, fallback)


# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------


@dataclass
class FitHistory:
    """What :meth:`AttractorNetwork.fit` did.

    Attributes
    ----------
    cost : numpy.ndarray
        Training cost L(J) (module docstring) before the first epoch and after each epoch,
        shape ``(epochs + 1,)``, evaluated on the whole data set.
    lr, weight_decay : float
        Step size and weight decay lambda of the gradient descent.
    batch_size : int
        Mini-batch size (``M`` for full-batch gradient descent).
    seconds_per_epoch : float
        Mean wall time of one epoch: its gradient steps (with mini-batches, the cost evaluation
        after them is excluded; full-batch, one evaluation gives the cost and the next gradient).
    normalisation : str
        ``"none"`` or ``"vmf"`` (see :meth:`AttractorNetwork.fit`).
    """

    cost: np.ndarray
    lr: float
    weight_decay: float
    batch_size: int
    seconds_per_epoch: float
    normalisation: str = "none"
    extra: dict = field(default_factory=dict)


class AttractorNetwork:
    """Recurrent self-attention built from local energies (docs/attractor.md, 'Local energies').

    Parameters
    ----------
    couplings : array_like, shape (N, N, d, d)
        ``couplings[i, j]`` is the d x d block ``J_ij`` (N >= 2). The diagonal blocks are unused
        and set to zero in the stored copy.
    beta : float, keyword-only
        Inverse temperature of the attention softmax, > 0.
    gamma : float, keyword-only
        Weight of a token's own state in the update, in [0, 1].

    Notes
    -----
    Methods accept one configuration ``(N, d)`` or a batch ``(M, N, d)``. The energies and the
    attention are defined for any real ``x`` (the gradient identity holds in all of R^{N x d});
    the dynamics keep tokens on the unit sphere.

    Examples
    --------
    >>> import numpy as np, replica_mlm as rm
    >>> J = np.random.default_rng(0).normal(size=(5, 5, 3, 3))
    >>> net = rm.AttractorNetwork(couplings=J, beta=1.0, gamma=0.5)
    >>> x0 = np.eye(3)[[0, 1, 2, 0, 1]]
    >>> net.run(x0, steps=10).shape
    (11, 5, 3)
    """

    def __init__(self, couplings, *, beta: float = 1.0, gamma: float = 0.5) -> None:
        self.couplings = _check_couplings(couplings)
        self.beta = positive(beta, "beta")
        self.gamma = _check_gamma(gamma)
        self.history: FitHistory | None = None

    @property
    def n_tokens(self) -> int:
        """N, the number of tokens."""
        return self.couplings.shape[0]

    @property
    def dim(self) -> int:
        """d, the dimension of a token."""
        return self.couplings.shape[2]

    def __repr__(self) -> str:
        return (
            f"AttractorNetwork(N={self.n_tokens}, d={self.dim}, beta={self.beta:g}, "
            f"gamma={self.gamma:g})"
        )

    def _tokens(self, x, name: str = "x") -> tuple[np.ndarray, bool]:
        return _check_tokens(x, self.n_tokens, self.dim, name)

    # -- energies and attention --------------------------------------------------------------

    def local_energies(self, x) -> np.ndarray:
        """Local energies ``e_i = -(1/beta) log sum_{j != i} exp(beta x_i^T J_ij x_j)``.

        Parameters
        ----------
        x : array_like, shape (N, d) or (M, N, d)

        Returns
        -------
        numpy.ndarray, shape (N,) or (M, N)
        """
        arr, batched = self._tokens(x)
        e = _energies_kernel(self.couplings, arr, self.beta)
        return e if batched else e[0]

    def attention_weights(self, x) -> np.ndarray:
        """``a_ij = softmax_{j != i}(beta x_i^T J_ij x_j)``, shape (N, N) or (M, N, N).

        The diagonal (j = i) is zero.
        """
        arr, batched = self._tokens(x)
        a = np.concatenate(
            [
                _offdiag_softmax(_scores(arr[sl], _fields(self.couplings, arr[sl])), self.beta)[0]
                for sl in _chunks(*arr.shape)
            ]
        )
        return a if batched else a[0]

    def attention(self, x) -> np.ndarray:
        """Self-attention output ``sum_{j != i} a_ij J_ij x_j`` = ``-grad_{x_i} e_i``.

        Parameters
        ----------
        x : array_like, shape (N, d) or (M, N, d)

        Returns
        -------
        numpy.ndarray, same shape as ``x``
        """
        arr, batched = self._tokens(x)
        att, _ = _attention_kernel(self.couplings, arr, self.beta)
        return att if batched else att[0]

    # -- dynamics -----------------------------------------------------------------------------

    def _step(self, x: np.ndarray) -> np.ndarray:
        att, _ = _attention_kernel(self.couplings, x, self.beta)
        return _normalise((1.0 - self.gamma) * att + self.gamma * x, x)

    def step(self, x) -> np.ndarray:
        """One parallel update ``x_i <- normalise((1 - gamma) attention_i + gamma x_i)``.

        A token whose update is the zero vector (possible only with ``gamma = 0``) keeps its
        previous state instead of becoming NaN.
        """
        arr, batched = self._tokens(x)
        new = self._step(arr)
        return new if batched else new[0]

    def run(self, x0, *, steps: int = 100) -> np.ndarray:
        """Iterate :meth:`step` and return the trajectory.

        Parameters
        ----------
        x0 : array_like, shape (N, d) or (M, N, d)
            Initial state (need not be normalised; ``traj[0]`` is ``x0`` as given).
        steps : int, keyword-only
            Number of updates, >= 1.

        Returns
        -------
        numpy.ndarray, shape (steps + 1, N, d) or (steps + 1, M, N, d)
        """
        arr, batched = self._tokens(x0, "x0")
        steps = positive_int(steps, "steps")
        _checks.allocation(8 * (steps + 1) * arr.size, f"run(steps={steps}) from x0 of shape {np.shape(x0)}")
        traj = np.empty((steps + 1, *arr.shape))
        traj[0] = arr
        for t in range(steps):
            traj[t + 1] = self._step(traj[t])
        return traj if batched else traj[:, 0]

    # -- training -----------------------------------------------------------------------------

    def training_cost(
        self, data, *, weight_decay: float = 0.0, normalisation: str = "none"
    ) -> float:
        """``L(J) = (1/M) sum_mu sum_i e_i(x^mu; J) + (lambda/2) sum_{i != j} ||J_ij||_F^2``.

        With ``normalisation="vmf"`` each ``e_i`` is replaced by the proper negative log
        conditional density (see :meth:`fit`).
        """
        arr, _ = self._tokens(data, "data")
        lam = nonnegative(weight_decay, "weight_decay")
        norm = _check_normalisation(normalisation)
        return _cost_and_gradient(self.couplings, arr, self.beta, lam, norm)[0]

    def training_gradient(
        self, data, *, weight_decay: float = 0.0, normalisation: str = "none"
    ) -> np.ndarray:
        """The local rule ``dL/dJ_ij = -(1/M) sum_mu a_ij x_i x_j^T + lambda J_ij`` (0 for i = j).

        With ``normalisation="vmf"`` the term ``(1/M) sum_mu b_ij A_d(kappa_ij) u_ij x_j^T`` is
        added
        (see :meth:`fit`).
        """
        arr, _ = self._tokens(data, "data")
        lam = nonnegative(weight_decay, "weight_decay")
        norm = _check_normalisation(normalisation)
        return _cost_and_gradient(self.couplings, arr, self.beta, lam, norm)[1]

    @classmethod
    def fit(
        cls,
        data,
        *,
        beta: float = 1.0,
        gamma: float = 0.5,
        lr: float = 0.1,
        epochs: int = 100,
        weight_decay: float = 1e-3,
        batch_size: int | None = None,
        init_scale: float = 0.0,
        normalisation: str = "none",
        rng=0,
    ) -> AttractorNetwork:
        """Train the couplings with the local rule only (no backpropagation through the dynamics).

        Gradient descent on ``L(J)`` (module docstring), i.e. for every pair ``i != j``

            J_ij <- J_ij + lr [ mean_mu a_ij^mu x_i^mu (x_j^mu)^T - lambda J_ij ],

        a softmax-gated Hebbian update with weight decay; ``gamma`` plays no role in training.

        With ``normalisation="vmf"`` the per-site cost is instead the proper negative log
        conditional density of a unit token on the sphere S^{d-1},
        ``-(1/beta) log p(x_i | x_-i)``, with
        ``p = sum_j exp(beta x_i^T J_ij x_j) / sum_j Z_d(kappa_ij)``
        (a mixture of von Mises-Fisher laws, ``kappa_ij = beta |J_ij x_j|``), and the update gains
        the anti-Hebbian term ``- lr mean_mu b_ij A_d(kappa_ij) u_ij x_j^T`` with
        ``b_ij = softmax_j log Z_d(kappa_ij)``, ``u_ij = J_ij x_j / |J_ij x_j|`` and
        ``A_d = I_{d/2} / I_{d/2-1}``: "data minus model prediction", still local (it involves only
        the tokens of site i's own row). Without it the bare cost rewards scaling ``J`` up in the
        direction of the mean of ``x_i x_j^T``, which only the weight decay stops.

        Parameters
        ----------
        data : array_like, shape (M, N, d)
            Training configurations (tokens, normally unit vectors).
        beta, gamma : float
            As in :class:`AttractorNetwork`.
        lr : float
            Step size, > 0.
        epochs : int
            Passes through the data, >= 1 (a progress bar over them on stderr when it is a
            terminal, :mod:`replica_mlm._base.progress`).
        weight_decay : float
            lambda > 0: keeps ``J`` bounded (see module docstring).
        batch_size : int or None
            Mini-batch size; ``None`` means full-batch gradient descent.
        init_scale : float
            Initial couplings are i.i.d. N(0, init_scale^2 / d); 0 (default) starts from J = 0.
        normalisation : {"none", "vmf"}
            ``"none"``: the bare local energies (docs/attractor.md); ``"vmf"``: the proper
            vector-spin normalisation described above.
        rng : int or numpy.random.Generator
            Seeds the initial couplings and the mini-batch order.

        Returns
        -------
        AttractorNetwork
            With ``history`` (:class:`FitHistory`) describing the training.
        """
        arr = finite_array(data, "data", ndim=3)
        M, N, d = arr.shape
        if N < 2:
            raise ValueError(f"data must have at least N = 2 tokens per configuration, got N = {N}")
        beta = positive(beta, "beta")
        gamma = _check_gamma(gamma)
        lr = positive(lr, "lr")
        epochs = positive_int(epochs, "epochs")
        lam = positive(weight_decay, "weight_decay")
        bs = M if batch_size is None else positive_int(batch_size, "batch_size")
        bs = min(bs, M)
        init_scale = nonnegative(init_scale, "init_scale")
        norm = _check_normalisation(normalisation)
        gen = as_generator(rng)
        what = f"AttractorNetwork.fit(epochs={epochs}) on {M} configurations"
        _checks.allocation(8 * (N * N * d * d * 4 + 4 * epochs), what)
        _checks.work(epochs * M * N * N * d * d, what)

        J = init_scale / np.sqrt(d) * gen.normal(size=(N, N, d, d))
        J[np.arange(N), np.arange(N)] = 0.0
        costs, elapsed = _descend(J, arr, beta=beta, lam=lam, norm=norm, lr=lr, epochs=epochs,
                                  bs=bs, gen=gen, init_scale=init_scale)
        net = cls(J, beta=beta, gamma=gamma)
        net.history = FitHistory(
            cost=np.asarray(costs),
            lr=lr,
            weight_decay=lam,
            batch_size=bs,
            seconds_per_epoch=elapsed / epochs,
            normalisation=norm,
        )
        return net


def _descend(J: np.ndarray, arr: np.ndarray, *, beta: float, lam: float, norm: str, lr: float,
             epochs: int, bs: int, gen: np.random.Generator,
             init_scale: float) -> tuple[list, float]:
    """Gradient descent on the couplings ``J`` (in place) for the epochs of :meth:`AttractorNetwork.fit`.

    Returns the training costs (at the initial couplings, then after each epoch) and the seconds
    spent in the steps; an overflow raises ValueError naming the setting to lower.
    """
    M = len(arr)
    # full batch: the cost recorded after a step and the gradient of the next step come from
    # one evaluation at the same J (half the work of evaluating them apart, same numbers)
    with np.errstate(over="raise", invalid="raise"):
        try:
            cost, full_grad = _cost_and_gradient(J, arr, beta, lam, norm)
        except FloatingPointError:
            raise ValueError(f"overflow in the cost at the initial couplings: lower "
                             f"init_scale = {init_scale:g} or beta = {beta:g}") from None
    costs = [cost]
    elapsed = 0.0
    for _ in bar(range(epochs), progress=None, desc="training couplings", unit="epoch"):
        t0 = time.perf_counter()
        with np.errstate(over="raise", invalid="raise"):
            try:
                if bs < M:
                    order = gen.permutation(M)
                    for start in range(0, M, bs):
                        batch = arr[order[start : start + bs]]
                        _, grad = _cost_and_gradient(J, batch, beta, lam, norm)
                        J -= lr * grad
                    elapsed += time.perf_counter() - t0
                    costs.append(_cost_and_gradient(J, arr, beta, lam, norm)[0])
                else:
                    J -= lr * full_grad
                    cost, full_grad = _cost_and_gradient(J, arr, beta, lam, norm)
                    elapsed += time.perf_counter() - t0
                    costs.append(cost)
            except FloatingPointError:
                raise ValueError(
                    f"training diverged (overflow in the couplings) at epoch {len(costs)}: "
                    f"lower lr = {lr:g}"
                ) from None
    return costs, elapsed
