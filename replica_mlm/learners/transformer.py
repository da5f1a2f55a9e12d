"""The vanilla transformer baseline of Rende et al. (fig. 2), in PyTorch (optional extra).

The model is the encoder of the UvA deep-learning tutorials (Lippe 2022) as used in the paper
(see docs/figures.md, "Rende et al., fig. 2"):

* token ``x_j = E e_{s_j} + gamma p_j``: a learned colour embedding ``E`` (``q + 1`` rows, the last
  one the mask token that replaces the masked site) plus ``gamma`` times the sinusoidal positional
  encoding of Vaswani et al., ``p_j[2k] = sin(j / 10000^(2k/d))``, ``p_j[2k+1] = cos(j / 10000^(2k/d))``
  (``gamma = 1`` is the vanilla transformer);
* ``layers`` encoder blocks, each multi-head (default single-head) scaled dot-product
  self-attention ``softmax(Q K^T / sqrt(d_k)) V`` with a joint ``qkv`` projection and an output
  projection, then a two-layer ReLU network of width ``d_ff`` (default ``2 d_model`` as in the
  tutorial), each sub-layer with a skip connection followed by LayerNorm (post-norm), dropout 0;
* an output linear map from ``d_model`` to the ``q`` colours and a softmax; cross-entropy on the
  masked spin.

Conventions shared with :class:`replica_mlm.FactoredAttention`:

* :meth:`TransformerMLM.mlm_loss` is ``-(1/n) sum_mu sum_i log P_model(s_i^mu | s_-i^mu)``, every
  site masked in turn (a sum over sites, a mean over sequences): the numbers are directly
  comparable with ``FactoredAttention.mlm_loss`` and ``PottsModel.neg_pseudo_loglikelihood``.
* :meth:`TransformerMLM.conditional` returns ``P_model(s_i = a | s_-i)`` with shape (n, q).

Training (:meth:`TransformerMLM.fit`): SGD on mini-batches of sequences. With ``masking="random"``
(default, the usual MLM) every sequence of a batch has one site, drawn uniformly at each step,
replaced by the mask token; with ``masking="all"`` it is presented ``L`` times, each site masked in
turn (``L`` times the cost per epoch, less gradient noise). The objective is the cross-entropy
averaged over the masked sites of the batch (PyTorch's mean reduction, so ``lr`` has its usual
meaning); its expectation is ``mlm_loss / L`` in both cases. The learning rate is cosine
annealed per step, ``lr_t = lr (1 + cos(pi t / T)) / 2`` over ``T = epochs * ceil(M / batch_size)``
steps, the schedule of ``FactoredAttention.fit(method="sgd")``, optionally times a linear warm-up
``min(1, (t + 1) / warmup)`` (the tutorial's ``CosineWarmupScheduler``).

Attention maps (:meth:`TransformerMLM.attention_maps`): for layer ``l``, row ``i`` of the map is
the attention of the query at position ``i`` **when site i is the masked one**, averaged over heads
and sequences: ``maps[l, i, j]`` is how much the prediction of the masked site ``i`` draws on
position ``j`` (the analogue of factored attention's ``A_ij``). The diagonal is the attention of the
masked position to the mask token itself.

Threads and determinism: every call that computes runs under ``torch.set_num_threads(threads)``
(default 1, the package's convention on shared machines) and restores the previous setting on exit.
Parameters are initialised inside ``torch.random.fork_rng`` from a seed drawn from ``rng`` (the
global torch RNG is left untouched) and mini-batches are drawn from a numpy Generator seeded from
the same ``rng``: the same ``rng`` gives the same numbers, bit for bit, on the same machine.

Install: ``pip install "replica-mlm[transformer]"`` (pins ``torch==2.13.0``; on a machine without
a GPU take the CPU wheel, see the extra's comment in pyproject.toml).
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass, field

import numpy as np

from replica_mlm._base.checks import (
    RngLike,
    allocation,
    as_generator,
    count,
    nonnegative,
    positive,
    positive_int,
    site_index,
    work,
)
from replica_mlm._base.threads import thread_count
from replica_mlm.potts.model import check_sequences

INSTALL_HINT = (
    'TransformerMLM needs PyTorch: pip install "replica-mlm[transformer]" '
    "(or, CPU only: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu)"
)

try:
    import torch
    from torch import nn
except ImportError as exc:  # pragma: no cover - exercised only without torch
    raise ImportError(INSTALL_HINT) from exc

__all__ = ["TrainingHistory", "TransformerMLM", "sinusoidal_encoding"]

SCHEDULES = ("cosine", "constant")
MASKINGS = ("random", "all")
#: sequences per forward pass in evaluation (each expands to L masked copies)
EVAL_CHUNK = 256


@contextlib.contextmanager
def torch_threads(n: int):
    """Run the block with ``torch.set_num_threads(n)``; restore the previous value afterwards."""
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def sinusoidal_encoding(L: int, d: int) -> np.ndarray:
    """Positional encoding of Vaswani et al. (2017): (L, d).

    ``P[j, 2k] = sin(j / 10000^(2k/d))`` and ``P[j, 2k+1] = cos(j / 10000^(2k/d))`` for positions
    ``j = 0..L-1`` (an odd ``d`` ends with a sine column).
    """
    L = positive_int(L, "L")
    d = positive_int(d, "d")
    pos = np.arange(L, dtype=float)[:, None]
    freq = np.exp(np.arange(0, d, 2, dtype=float) * (-math.log(10000.0) / d))
    P = np.zeros((L, d))
    P[:, 0::2] = np.sin(pos * freq)
    P[:, 1::2] = np.cos(pos * freq[: d // 2])
    return P


@dataclass
class TrainingHistory:
    """What :meth:`TransformerMLM.fit` measured, one entry per epoch.

    Behaves as the array of test losses (``len``, indexing, ``np.asarray``) when a test set was
    given, else as the array of training losses.

    Attributes
    ----------
    test_loss : ndarray
        ``mlm_loss(test)`` after the epochs listed in ``test_epochs`` (every epoch by default;
        empty without a test set).
    test_epochs : int ndarray
        Epochs (1-based) at which ``test_loss`` was measured.
    train_loss : ndarray (epochs,)
        Mean over the epoch's mini-batches of ``L`` times the batch objective (an estimate of the
        training MLM loss per sequence while the parameters change during the epoch).
    lr : ndarray (epochs,)
        Learning rate of the epoch's last step.
    seconds : float
        Wall time of the training.
    """

    test_loss: np.ndarray
    test_epochs: np.ndarray
    train_loss: np.ndarray
    lr: np.ndarray
    seconds: float = 0.0
    steps: int = 0
    message: str = field(default="")

    def _main(self) -> np.ndarray:
        return self.test_loss if self.test_loss.size else self.train_loss

    def __len__(self) -> int:
        return int(self._main().size)

    def __getitem__(self, k):
        return self._main()[k]

    def __iter__(self):
        return iter(self._main())

    def __array__(self, dtype=None, copy=None):
        a = self._main()
        return a.astype(dtype) if dtype is not None else a.copy()


class _SelfAttention(nn.Module):
    """Multi-head scaled dot-product attention (the tutorial's MultiheadAttention)."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.d_head = d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        n, L, d = x.shape
        qkv = self.qkv(x).reshape(n, L, self.heads, 3 * self.d_head).permute(0, 2, 1, 3)
        q, k, v = qkv.chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_head), dim=-1)
        o = (att @ v).permute(0, 2, 1, 3).reshape(n, L, d)
        return self.out(o), att


class _EncoderBlock(nn.Module):
    """Self-attention and a two-layer ReLU network, each with skip connection and post-norm."""

    def __init__(self, d: int, heads: int, d_ff: int) -> None:
        super().__init__()
        self.attn = _SelfAttention(d, heads)
        self.mlp = nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Linear(d_ff, d))
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x):
        a, att = self.attn(x)
        x = self.norm1(x + a)
        x = self.norm2(x + self.mlp(x))
        return x, att


class _Net(nn.Module):
    def __init__(self, L, q, layers, d, heads, d_ff, gamma) -> None:
        super().__init__()
        self.q = q
        self.embed = nn.Embedding(q + 1, d)  # row q: the mask token
        self.register_buffer("pe", torch.as_tensor(sinusoidal_encoding(L, d), dtype=torch.float64))
        self.gamma = gamma
        self.blocks = nn.ModuleList(_EncoderBlock(d, heads, d_ff) for _ in range(layers))
        self.readout = nn.Linear(d, q)

    def forward(self, tokens, *, keep_attention: bool = False):
        x = self.embed(tokens) + self.gamma * self.pe
        maps = []
        for block in self.blocks:
            x, att = block(x)
            if keep_attention:
                maps.append(att)
        return self.readout(x), maps


class TransformerMLM:
    """Vanilla transformer encoder trained by masked language modelling (Rende et al., fig. 2).

    Parameters
    ----------
    L, q : int
        Sequence length (>= 2) and number of colours (>= 2).
    layers : int
        Number of encoder blocks.
    d_model : int
        Embedding dimension (paper: 20); must be divisible by ``heads``.
    heads : int
        Attention heads per block (paper: 1).
    gamma : float
        Weight of the positional encoding in the tokens (``>= 0``; 1 = vanilla).
    rng : int or numpy Generator
        Seed of the initialisation and of the mini-batches.
    d_ff : int, optional
        Width of the hidden layer of the two-layer network (default ``2 * d_model``).
    dtype : {"float32", "float64"}
        Floating-point type of the parameters (float64 for gradient checks).
    threads : int
        ``torch.set_num_threads`` during every computation (restored afterwards); 1 to 1024.

    See the module docstring for the architecture, the loss convention and the attention-map
    convention.
    """

    def __init__(self, L: int = 20, q: int = 20, layers: int = 1, d_model: int = 20, heads: int = 1,
                 gamma: float = 1.0, rng: RngLike = 0, *, d_ff: int | None = None,
                 dtype: str = "float32", threads: int = 1) -> None:
        self.L = positive_int(L, "L")
        self.q = positive_int(q, "q")
        if self.L < 2 or self.q < 2:
            raise ValueError(f"L and q must be >= 2, got L={self.L}, q={self.q}")
        self.layers = positive_int(layers, "layers")
        self.d_model = positive_int(d_model, "d_model")
        self.heads = positive_int(heads, "heads")
        if self.d_model % self.heads:
            raise ValueError(f"d_model must be divisible by heads, got d_model={self.d_model}, "
                             f"heads={self.heads}")
        self.gamma = nonnegative(gamma, "gamma")
        self.d_ff = 2 * self.d_model if d_ff is None else positive_int(d_ff, "d_ff")
        if dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
        self.dtype = getattr(torch, dtype)
        self.threads = thread_count(threads)
        # embedding, positional encoding (L x d), and per layer attention (4 d^2) and MLP (2 d d_ff)
        weights = (self.q + 1) * self.d_model + self.L * self.d_model + self.q * self.d_model
        weights += self.layers * (4 * self.d_model**2 + 2 * self.d_model * self.d_ff)
        allocation(8 * weights, f"TransformerMLM(L={self.L}, q={self.q}, layers={self.layers}, "
                                f"d_model={self.d_model}, d_ff={self.d_ff})")
        self._gen = as_generator(rng)
        seed = int(self._gen.integers(2**62))
        with torch_threads(self.threads), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = _Net(self.L, self.q, self.layers, self.d_model, self.heads, self.d_ff,
                            self.gamma).to(self.dtype)
        self.history: TrainingHistory | None = None

    def __repr__(self) -> str:
        return (f"TransformerMLM(L={self.L}, q={self.q}, layers={self.layers}, d_model={self.d_model}, "
                f"heads={self.heads}, gamma={self.gamma:g})")

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.net.parameters())

    # ------------------------------------------------------------------ helpers
    def _check(self, seqs, name: str = "seqs") -> np.ndarray:
        return check_sequences(seqs, L=self.L, q=self.q, name=name)

    def _masked_copies(self, s: np.ndarray):
        """(n L, L) tokens: copy ``mu L + i`` is sequence ``mu`` with site ``i`` masked."""
        n, L = s.shape
        t = np.repeat(s, L, axis=0)
        t[np.arange(n * L), np.tile(np.arange(L), n)] = self.q
        return torch.as_tensor(t)

    def _site_logits(self, s: np.ndarray, *, keep_attention: bool = False):
        """Logits (n, L, q) of every site when it is masked; attention rows if asked."""
        n, L = s.shape
        out, maps = self.net(self._masked_copies(s), keep_attention=keep_attention)
        idx = torch.arange(L).repeat(n)
        z = out[torch.arange(n * L), idx].reshape(n, L, self.q)
        if not keep_attention:
            return z, None
        # row i of the copy where site i is masked, averaged over heads: (layers, n, L, L)
        rows = [a.mean(dim=1)[torch.arange(n * L), idx].reshape(n, L, L) for a in maps]
        return z, torch.stack(rows)

    def _loss_sum(self, s: np.ndarray):
        """Summed cross-entropy over sequences and sites (a tensor, for autograd)."""
        z, _ = self._site_logits(s)
        target = torch.as_tensor(s).reshape(-1)
        return nn.functional.cross_entropy(z.reshape(-1, self.q), target, reduction="sum")

    def _loss_random_site(self, s: np.ndarray, sites: np.ndarray):
        """Mean cross-entropy with site ``sites[mu]`` of sequence ``mu`` masked (a tensor)."""
        n = s.shape[0]
        t = s.copy()
        t[np.arange(n), sites] = self.q
        out, _ = self.net(torch.as_tensor(t))
        z = out[torch.arange(n), torch.as_tensor(sites)]
        return nn.functional.cross_entropy(z, torch.as_tensor(s[np.arange(n), sites]))

    # ------------------------------------------------------------------ predictions
    def conditionals(self, seqs) -> np.ndarray:
        """``P_model(s_i = a | s_-i)`` for every sequence and site, site ``i`` masked: (n, L, q)."""
        s = self._check(seqs)
        parts = []
        with torch_threads(self.threads), torch.no_grad():
            for k in range(0, s.shape[0], EVAL_CHUNK):
                z, _ = self._site_logits(s[k:k + EVAL_CHUNK])
                parts.append(torch.softmax(z.double(), dim=-1).numpy())
        return np.concatenate(parts)

    def conditional(self, seqs, i: int) -> np.ndarray:
        """``P_model(s_i = a | s_-i)`` for masked site ``i``: (n, q), like ``PottsModel.conditional``."""
        s = self._check(seqs)
        i = site_index(i, self.L)
        t = s.copy()
        t[:, i] = self.q
        with torch_threads(self.threads), torch.no_grad():
            out, _ = self.net(torch.as_tensor(t))
            return torch.softmax(out[:, i].double(), dim=-1).numpy()

    def mlm_loss(self, seqs) -> float:
        """``-(1/n) sum_mu sum_i log P_model(s_i^mu | s_-i^mu)``, masking every site in turn.

        Same normalisation as ``FactoredAttention.mlm_loss`` and
        ``PottsModel.neg_pseudo_loglikelihood``.
        """
        return float(self.per_sequence_loss(seqs).mean())

    def per_sequence_loss(self, seqs) -> np.ndarray:
        """``-sum_i log P_model(s_i | s_-i)`` for every sequence: (n,) (for paired errors)."""
        s = self._check(seqs)
        parts = []
        with torch_threads(self.threads), torch.no_grad():
            for k in range(0, s.shape[0], EVAL_CHUNK):
                c = s[k:k + EVAL_CHUNK]
                z, _ = self._site_logits(c)
                logp = torch.log_softmax(z.double(), dim=-1)
                picked = logp.gather(2, torch.as_tensor(c)[:, :, None])[:, :, 0]
                parts.append(-picked.sum(dim=1).numpy())
        return np.concatenate(parts)

    def attention_maps(self, seqs) -> np.ndarray:
        """Attention weights (layers, L, L) averaged over ``seqs`` and heads.

        Row ``i`` of layer ``l`` is the attention of position ``i`` in the forward pass where site
        ``i`` is masked (see the module docstring); every row sums to 1.
        """
        s = self._check(seqs)
        total = torch.zeros(self.layers, self.L, self.L, dtype=torch.float64)
        with torch_threads(self.threads), torch.no_grad():
            for k in range(0, s.shape[0], EVAL_CHUNK):
                _, rows = self._site_logits(s[k:k + EVAL_CHUNK], keep_attention=True)
                total += rows.double().sum(dim=1)
        return (total / s.shape[0]).numpy()

    # ------------------------------------------------------------------ training
    def fit(self, train_seqs, epochs: int = 100, batch_size: int = 100, lr: float = 0.05,
            schedule: str = "cosine", test=None, *, masking: str = "random",
            momentum: float = 0.0, warmup: int = 0, eval_every: int = 1) -> TrainingHistory:
        """Train by SGD on masked-site cross-entropy (see the module docstring).

        Parameters
        ----------
        train_seqs : int array (M, L)
            Training sequences, colours in [0, q).
        epochs, batch_size : int
            Passes over the data and sequences per mini-batch (paper: 100).
        lr : float
            Initial learning rate (paper: between 0.01 and 0.1).
        schedule : {"cosine", "constant"}
            Cosine annealing per step to 0, or a constant rate.
        test : int array (n, L), optional
            Held-out sequences whose :meth:`mlm_loss` is recorded after every epoch.
        masking : {"random", "all"}
            One uniformly drawn masked site per sequence and step, or every site in turn.
        momentum : float
            SGD momentum (paper: plain SGD, 0).
        warmup : int
            Steps of linear warm-up: the rate is multiplied by ``min(1, (t + 1) / warmup)``, as in
            the tutorial's ``CosineWarmupScheduler`` (post-norm layers are unstable without it at
            large rates). 0: none.
        eval_every : int
            Record the test loss every ``eval_every`` epochs and after the last one (evaluation
            masks every test site in turn and can cost more than an epoch of training).

        Returns
        -------
        TrainingHistory
            Also stored as ``self.history``.

        Raises
        ------
        ValueError
            Before any step if ``epochs * ceil(M / batch_size)`` SGD steps (about 2 ms each) and
            the evaluations exceed the package's work limit (``_checks.work``: 1e15 operations).
        """
        s = self._check(train_seqs, "train_seqs")
        te = None if test is None else self._check(test, "test")
        epochs = positive_int(epochs, "epochs")
        batch_size = positive_int(batch_size, "batch_size")
        lr = positive(lr, "lr")
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        if masking not in MASKINGS:
            raise ValueError(f"masking must be one of {MASKINGS}, got {masking!r}")
        momentum = 0.0 if momentum == 0 else positive(momentum, "momentum")
        eval_every = positive_int(eval_every, "eval_every")
        if isinstance(warmup, bool) or not isinstance(warmup, int | np.integer) or warmup < 0:
            raise ValueError(f"warmup must be a non-negative integer number of steps, got {warmup!r}")
        M = s.shape[0]
        per_epoch = math.ceil(M / batch_size)
        T = epochs * per_epoch
        # about 6 flops per weight and token (forward and backward; evaluation: forward only) and,
        # per SGD step, some 100 (layers + 1) torch calls (measured 1.8 ms a step at layers = 1)
        tokens = T * min(batch_size, M) * self.L * (self.L if masking == "all" else 1)
        if te is not None:
            tokens += (epochs // eval_every + 1) * te.shape[0] * self.L * self.L
        work(6 * self.n_parameters * tokens, f"TransformerMLM.fit(epochs={count(epochs)}, batch_size="
             f"{batch_size}): epochs * batches = {count(T)} SGD steps", steps=T * 100 * (self.layers + 1))
        opt = torch.optim.SGD(self.net.parameters(), lr=lr, momentum=momentum)
        hist_test, test_epochs, hist_train, hist_lr = [], [], [], []
        t0 = time.perf_counter()
        step = 0
        with torch_threads(self.threads):
            for epoch in range(1, epochs + 1):
                run, rate, step = self._sgd_epoch(s, opt, step, T, batch_size=batch_size, lr=lr,
                                                  schedule=schedule, warmup=warmup, masking=masking)
                if not all(torch.isfinite(p).all() for p in self.net.parameters()):
                    raise ValueError(f"SGD diverged (non-finite parameters) at lr={lr}: lower lr")
                hist_train.append(run / per_epoch)
                hist_lr.append(rate)
                if te is not None and (epoch % eval_every == 0 or epoch == epochs):
                    hist_test.append(self.mlm_loss(te))
                    test_epochs.append(epoch)
        self.history = TrainingHistory(
            test_loss=np.asarray(hist_test), test_epochs=np.asarray(test_epochs, dtype=int),
            train_loss=np.asarray(hist_train),
            lr=np.asarray(hist_lr), seconds=time.perf_counter() - t0, steps=T,
            message=f"{schedule} schedule, {T} steps of batch {batch_size}, lr {lr:g}, "
                    f"masking {masking}")
        return self.history

    def _sgd_epoch(self, s, opt, step: int, T: int, *, batch_size: int, lr: float, schedule: str,
                   warmup: int, masking: str) -> tuple[float, float, int]:
        """One pass of SGD over ``s`` in a random order, from global step ``step`` of ``T``.

        Returns the summed per-batch training loss (times L), the last learning rate, the next step.
        """
        M = s.shape[0]
        perm = self._gen.permutation(M)
        run = 0.0
        for b in range(math.ceil(M / batch_size)):
            idx = perm[b * batch_size:(b + 1) * batch_size]
            rate = lr * 0.5 * (1.0 + math.cos(math.pi * step / T)) if schedule == "cosine" else lr
            if warmup:
                rate *= min(1.0, (step + 1) / warmup)
            for g in opt.param_groups:
                g["lr"] = rate
            opt.zero_grad()
            if masking == "all":
                loss = self._loss_sum(s[idx]) / (idx.size * self.L)
            else:
                loss = self._loss_random_site(s[idx], self._gen.integers(0, self.L, idx.size))
            loss.backward()
            opt.step()
            run += float(loss.detach()) * self.L
            step += 1
        return run, rate, step
