"""Experiments with the attractor network (THEORY.md section 7): transient memories.

Encoding (binding for this module)
----------------------------------
A value ``v`` in [0, 1] (a pixel intensity, or a Gaussian Potts coordinate mapped through its
marginal CDF) is the unit vector ``(cos(pi v / 2), sin(pi v / 2))`` in R^2: a quarter circle.
A token groups ``k`` values (a 2 x 2 patch of an 8 x 8 digit: k = 4; one Potts site: k = 1) and is
the concatenation of their 2-vectors divided by sqrt(k), a unit vector in R^{2k}. Decoding reads
the angle of each 2-vector and projects it onto the quarter circle (angles past an end of the arc
go to the nearer end), so any state of the dynamics decodes to values in [0, 1].

Corruptions
-----------
``masked``: ``n_masked`` tokens chosen at random are replaced by independent uniformly random
unit vectors (the mask carries no information). ``noise``: each value is replaced, with
probability ``p_noise``, by an independent uniform value in [0, 1].

Measurements, at every step t of the dynamics started from a corrupted input
-----------------------------------------------------------------------------
``error``: mean squared error of the decoded values against the clean input (for images, the
mean over the 64 pixels of (v_hat - v)^2 with v in [0, 1]). ``overlap_target``: the token overlap
``q(x, y) = (1/N) sum_i x_i . y_i`` with the clean input. ``overlap_train`` / ``overlap_test``:
the largest overlap with any training / any test configuration (the clean input itself is one of
them: the nearest image to a good reconstruction of a test image is that image).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replica_mlm._checks import as_generator, finite_array, nonnegative, positive_int

__all__ = [
    "AttractorSettings",
    "DigitsExperiment",
    "PottsExperiment",
    "TransientCurves",
    "TransientMemory",
    "corrupt",
    "decode_values",
    "digits_experiment",
    "encode_values",
    "gaussian_potts_sequences",
    "image_tokens",
    "load_digits",
    "potts_experiment",
    "tokens_image",
    "transient_curves",
    "transient_memory",
]

_HALF_PI = 0.5 * np.pi


# ----------------------------------------------------------------------------------------------
# encoding
# ----------------------------------------------------------------------------------------------


def encode_values(values) -> np.ndarray:
    """Values in [0, 1] of shape (..., N, k) -> unit tokens in R^{2k}, shape (..., N, 2k)."""
    v = finite_array(values, "values")
    if v.ndim < 2:
        raise ValueError(f"values must have shape (..., N, k), got {v.shape}")
    if v.min() < 0 or v.max() > 1:
        raise ValueError(f"values must lie in [0, 1], got range [{v.min():g}, {v.max():g}]")
    k = v.shape[-1]
    theta = _HALF_PI * v
    pairs = np.stack([np.cos(theta), np.sin(theta)], axis=-1)  # (..., N, k, 2)
    return pairs.reshape(*v.shape[:-1], 2 * k) / np.sqrt(k)


def decode_values(tokens) -> np.ndarray:
    """Tokens (..., N, 2k) -> values in [0, 1], shape (..., N, k) (angle projected onto the arc)."""
    x = finite_array(tokens, "tokens")
    if x.ndim < 2 or x.shape[-1] % 2:
        raise ValueError(f"tokens must have shape (..., N, 2k), got {x.shape}")
    pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    theta = np.arctan2(pairs[..., 1], pairs[..., 0])  # (-pi, pi]
    # the arc is [0, pi/2]; the point opposite its middle is at -3 pi / 4
    v = np.where(theta < -0.75 * np.pi, 1.0, np.clip(theta / _HALF_PI, 0.0, 1.0))
    return v


# ----------------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------------


def load_digits(*, n_train: int, n_test: int, rng=0) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 8 x 8 digits (1797 images) as values in [0, 1], split at random.

    Returns ``(train, test)`` of shapes (n_train, 8, 8) and (n_test, 8, 8), disjoint.
    Needs scikit-learn (``pip install 'replica-mlm[digits]'``).
    """
    try:
        from sklearn.datasets import load_digits as _load
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the digits experiments need scikit-learn: pip install 'replica-mlm[digits]'"
        ) from None
    n_train = positive_int(n_train, "n_train")
    n_test = positive_int(n_test, "n_test")
    images = _load().images / 16.0
    if n_train + n_test > len(images):
        raise ValueError(
            f"n_train + n_test must be <= {len(images)} (the digits set), got {n_train + n_test}"
        )
    order = as_generator(rng).permutation(len(images))
    return images[order[:n_train]], images[order[n_train : n_train + n_test]]


def image_tokens(images) -> np.ndarray:
    """(M, 8, 8) images -> (M, 16, 4) values: 2 x 2 patches in row-major patch order."""
    im = finite_array(images, "images", ndim=3)
    M, H, W = im.shape
    if H % 2 or W % 2:
        raise ValueError(f"images must have even height and width, got {H} x {W}")
    p = im.reshape(M, H // 2, 2, W // 2, 2).transpose(0, 1, 3, 2, 4)
    return p.reshape(M, (H // 2) * (W // 2), 4)


def tokens_image(values, shape: tuple[int, int] = (8, 8)) -> np.ndarray:
    """Inverse of :func:`image_tokens`: (..., 16, 4) values -> (..., 8, 8) images."""
    v = finite_array(values, "values")
    H, W = shape
    lead = v.shape[:-2]
    p = v.reshape(*lead, H // 2, W // 2, 2, 2)
    p = np.moveaxis(p, -2, -3)  # (..., H/2, 2, W/2, 2)
    return p.reshape(*lead, H, W)


def gaussian_potts_sequences(
    precision: np.ndarray, *, n: int, rng=0
) -> tuple[np.ndarray, np.ndarray]:
    """Samples x ~ N(0, C), C = precision^{-1} (THEORY.md section 3), and their CDF values.

    Returns ``(x, v)``: x of shape (n, L), and v = Phi(x_i / sqrt(C_ii)) in (0, 1), shape (n, L, 1),
    ready for :func:`encode_values` (one token per site, d = 2).
    """
    from scipy.special import ndtr

    P = finite_array(precision, "precision", ndim=2)
    C = np.linalg.inv(P)
    C = 0.5 * (C + C.T)
    chol = np.linalg.cholesky(C)
    z = as_generator(rng).standard_normal((positive_int(n, "n"), P.shape[0]))
    x = z @ chol.T
    v = ndtr(x / np.sqrt(np.diag(C)))
    return x, v[..., None]


# ----------------------------------------------------------------------------------------------
# corruption
# ----------------------------------------------------------------------------------------------


def corrupt(
    values, *, kind: str, n_masked: int = 4, p_noise: float = 0.25,
    mask_value: float | None = None, rng=0,
) -> tuple[np.ndarray, np.ndarray]:
    """Corrupted tokens from clean values (M, N, k); see the module docstring.

    With ``mask_value`` given, masked tokens are the encoding of that value (in [0, 1]) instead of
    random unit vectors (used for Potts sequences: 0.5 encodes the marginal median x_i = 0).

    Returns ``(tokens, corrupted)``: the corrupted tokens (M, N, 2k) and a boolean mask (M, N)
    of the tokens that were changed (masked tokens, or tokens with at least one noisy value).
    """
    v = finite_array(values, "values", ndim=3)
    gen = as_generator(rng)
    M, N, k = v.shape
    if kind == "masked":
        n_masked = positive_int(n_masked, "n_masked")
        if n_masked >= N:
            raise ValueError(f"n_masked must be < N = {N}, got {n_masked}")
        x = encode_values(v)
        mask = np.zeros((M, N), dtype=bool)
        for m in range(M):
            mask[m, gen.choice(N, size=n_masked, replace=False)] = True
        if mask_value is None:
            r = gen.standard_normal((int(mask.sum()), 2 * k))
            x[mask] = r / np.linalg.norm(r, axis=-1, keepdims=True)
        else:
            x[mask] = encode_values(np.full((1, k), nonnegative(mask_value, "mask_value")))[0]
        return x, mask
    if kind == "noise":
        p = nonnegative(p_noise, "p_noise")
        if p > 1:
            raise ValueError(f"p_noise must be in [0, 1], got {p}")
        hit = gen.random(v.shape) < p
        noisy = np.where(hit, gen.random(v.shape), v)
        return encode_values(noisy), hit.any(axis=-1)
    raise ValueError(f"kind must be 'masked' or 'noise', got {kind!r}")


# ----------------------------------------------------------------------------------------------
# measurements
# ----------------------------------------------------------------------------------------------


@dataclass
class TransientCurves:
    """Per-step measurements of the dynamics from corrupted inputs (one row per input).

    Attributes
    ----------
    error, overlap_target, overlap_train, overlap_test : numpy.ndarray, shape (M, steps + 1)
        See the module docstring.
    """

    error: np.ndarray
    overlap_target: np.ndarray
    overlap_train: np.ndarray
    overlap_test: np.ndarray
    extra: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """Mean and standard error over inputs of every curve, as lists (for JSON)."""
        out = {}
        for name in ("error", "overlap_target", "overlap_train", "overlap_test"):
            a = getattr(self, name)
            out[name] = {
                "mean": a.mean(axis=0).tolist(),
                "sem": (a.std(axis=0, ddof=1) / np.sqrt(a.shape[0])).tolist(),
            }
        return out


def _max_overlap(x: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """max over reference configurations of (1/N) sum_i x_i . y_i, for x (M, N, d)."""
    N = x.shape[1]
    return (x.reshape(len(x), -1) @ refs.reshape(len(refs), -1).T).max(axis=1) / N


def transient_curves(
    traj: np.ndarray, clean_values: np.ndarray, train_tokens: np.ndarray, test_tokens: np.ndarray
) -> TransientCurves:
    """Measurements along a batched trajectory (steps + 1, M, N, d) against the clean values."""
    T = traj.shape[0]
    clean_tokens = encode_values(clean_values)
    N = traj.shape[2]
    err = np.empty((traj.shape[1], T))
    ov_t, ov_tr, ov_te = np.empty_like(err), np.empty_like(err), np.empty_like(err)
    for t in range(T):
        x = traj[t]
        err[:, t] = np.mean((decode_values(x) - clean_values) ** 2, axis=(1, 2))
        ov_t[:, t] = np.einsum("mia,mia->m", x, clean_tokens) / N
        ov_tr[:, t] = _max_overlap(x, train_tokens)
        ov_te[:, t] = _max_overlap(x, test_tokens)
    return TransientCurves(err, ov_t, ov_tr, ov_te)


@dataclass
class TransientMemory:
    """The transient-memory test on per-input error curves (held-out selection of the best step).

    The inputs are split at random in two halves. The best step ``t_best`` is the step in
    ``window`` with the lowest mean error on the *selection* half; on the other (*evaluation*)
    half the paired differences ``error(0) - error(t_best)`` and ``error(T) - error(t_best)`` are
    averaged over inputs, and the effect is declared when both means exceed ``z`` standard errors.
    Choosing the step on one half and measuring on the other avoids the optimistic bias of
    reporting the minimum of a noisy curve.
    """

    t_best: int
    t_last: int
    error_t0: tuple[float, float]
    error_best: tuple[float, float]
    error_last: tuple[float, float]
    gain_vs_t0: tuple[float, float]
    gain_vs_last: tuple[float, float]
    z: float
    n_eval: int
    passed: bool

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _mean_sem(a: np.ndarray) -> tuple[float, float]:
    return float(a.mean()), float(a.std(ddof=1) / np.sqrt(len(a)))


def transient_memory(
    error: np.ndarray, *, window: tuple[int, int] = (1, 20), z: float = 3.0, rng=0
) -> TransientMemory:
    """Test for a transient minimum of per-input error curves ``error`` (M, T + 1); see the class."""
    err = finite_array(error, "error", ndim=2)
    M, T1 = err.shape
    lo, hi = window
    if not 1 <= lo <= hi < T1 - 1:
        raise ValueError(f"window must satisfy 1 <= lo <= hi < T = {T1 - 1}, got {window}")
    if M < 4:
        raise ValueError(f"need at least 4 inputs for the split test, got {M}")
    order = as_generator(rng).permutation(M)
    sel, ev = err[order[: M // 2]], err[order[M // 2 :]]
    t_best = lo + int(np.argmin(sel[:, lo : hi + 1].mean(axis=0)))
    g0 = ev[:, 0] - ev[:, t_best]
    gl = ev[:, -1] - ev[:, t_best]
    m0, s0 = _mean_sem(g0)
    ml, sl = _mean_sem(gl)
    return TransientMemory(
        t_best=t_best,
        t_last=T1 - 1,
        error_t0=_mean_sem(ev[:, 0]),
        error_best=_mean_sem(ev[:, t_best]),
        error_last=_mean_sem(ev[:, -1]),
        gain_vs_t0=(m0, s0),
        gain_vs_last=(ml, sl),
        z=float(z),
        n_eval=len(ev),
        passed=bool(m0 > z * s0 and ml > z * sl),
    )


# ----------------------------------------------------------------------------------------------
# the two experiments
# ----------------------------------------------------------------------------------------------


@dataclass
class AttractorSettings:
    """Hyper-parameters shared by the experiments (the same for digits and Potts sequences)."""

    beta: float = 1.0
    gamma: float = 0.5
    lr: float = 0.5
    epochs: int = 50
    weight_decay: float = 1e-3
    steps: int = 100
    n_masked: int = 4  # per 16 tokens (scaled with N: L = 20 Potts sites -> 5)
    p_noise: float = 0.25


@dataclass
class DigitsExperiment:
    """Results of :func:`digits_experiment`: curves[task][split] and the trained network."""

    curves: dict
    memory: dict
    examples: dict
    cost: np.ndarray
    seconds_per_epoch: float
    baseline_mean_image: float
    settings: AttractorSettings
    sizes: dict


def _run_tasks(net, values: dict, refs: tuple, settings: AttractorSettings, gen, mask_value=None):
    curves, memory, trajs = {}, {}, {}
    for task in ("masked", "noise"):
        curves[task], memory[task], trajs[task] = {}, {}, {}
        for split, v in values.items():
            x0, _ = corrupt(
                v, kind=task, n_masked=max(1, settings.n_masked * v.shape[1] // 16),
                p_noise=settings.p_noise, mask_value=mask_value, rng=gen,
            )
            traj = net.run(x0, steps=settings.steps)
            c = transient_curves(traj, v, *refs)
            curves[task][split] = c
            memory[task][split] = transient_memory(c.error, rng=gen)
            trajs[task][split] = traj
    return curves, memory, trajs


def digits_experiment(
    *, n_train: int = 600, n_test: int = 200, n_eval: int = 100,
    settings: AttractorSettings | None = None, rng=0,
) -> DigitsExperiment:
    """Train on digits, then run both corruption tasks on training and held-out test images.

    ``n_eval`` corrupted inputs per split (the first ``n_eval`` images of each split).
    """
    from replica_mlm.attractor import AttractorNetwork

    settings = settings or AttractorSettings()
    gen = as_generator(rng)
    train, test = load_digits(n_train=n_train, n_test=n_test, rng=gen)
    n_eval = min(positive_int(n_eval, "n_eval"), n_train, n_test)
    vtr, vte = image_tokens(train), image_tokens(test)
    xtr, xte = encode_values(vtr), encode_values(vte)
    net = AttractorNetwork.fit(
        xtr, beta=settings.beta, gamma=settings.gamma, lr=settings.lr, epochs=settings.epochs,
        weight_decay=settings.weight_decay, rng=gen,
    )
    values = {"train": vtr[:n_eval], "test": vte[:n_eval]}
    curves, memory, trajs = _run_tasks(net, values, (xtr, xte), settings, gen)
    examples = {
        task: {
            split: {
                "clean": tokens_image(values[split][:4]),
                "states": tokens_image(decode_values(trajs[task][split][:, :4])),
            }
            for split in values
        }
        for task in trajs
    }
    return DigitsExperiment(
        curves=curves,
        memory=memory,
        examples=examples,
        cost=net.history.cost,
        seconds_per_epoch=net.history.seconds_per_epoch,
        baseline_mean_image=float(np.mean((test[:n_eval] - train.mean(axis=0)) ** 2)),
        settings=settings,
        sizes={"n_train": n_train, "n_test": n_test, "n_eval": n_eval, "N": 16, "d": 8},
    )


@dataclass
class PottsExperiment:
    """Results of :func:`potts_experiment`.

    ``masked_site_mse`` compares, on the same held-out sequences with one masked site each, the
    squared error (in the units of x) of the attractor dynamics at t = 1, at the best step and at
    the last step with one step of linear factored attention: the Bayes-optimal ``w* . x_-i``
    (``w* = -P_{-i,i} / P_ii``, expected error ``1 / P_ii``), the same layer fitted by least
    squares on the training sequences (MLM training of linear factored attention), and the
    trivial prediction 0 (expected error ``C_ii``).
    """

    curves: dict
    memory: dict
    masked_site_mse: dict
    cost: np.ndarray
    settings: AttractorSettings
    sizes: dict


def _value_to_x(v: np.ndarray, sd: np.ndarray) -> np.ndarray:
    from scipy.special import ndtri

    eps = 1e-6
    return sd * ndtri(np.clip(v, eps, 1 - eps))


def potts_experiment(
    *, L: int = 20, shift: float = 3.0, n_train: int = 2000, n_test: int = 400, n_eval: int = 200,
    settings: AttractorSettings | None = None, rng=0,
) -> PottsExperiment:
    """The same experiment on Gaussian Potts sequences (THEORY.md section 3), one token per site.

    Each site's value ``x_i`` is mapped to ``v = Phi(x_i / sqrt(C_ii))`` in (0, 1) and encoded as
    a unit vector of R^2 (module docstring), so N = L and d = 2. Masked sites are set to the
    encoding of v = 0.5 (x_i = 0, the marginal mean), so the state at t = 0 predicts the mean.
    """
    import replica_mlm as rm
    from replica_mlm.attractor import AttractorNetwork

    settings = settings or AttractorSettings()
    gen = as_generator(rng)
    model = rm.GaussianPotts.random(L=positive_int(L, "L"), shift=shift, seed=gen)
    P, C = model.precision, model.covariance
    xs_tr, v_tr = gaussian_potts_sequences(P, n=n_train, rng=gen)
    xs_te, v_te = gaussian_potts_sequences(P, n=n_test, rng=gen)
    n_eval = min(positive_int(n_eval, "n_eval"), n_train, n_test)
    tok_tr, tok_te = encode_values(v_tr), encode_values(v_te)
    net = AttractorNetwork.fit(
        tok_tr, beta=settings.beta, gamma=settings.gamma, lr=settings.lr, epochs=settings.epochs,
        weight_decay=settings.weight_decay, rng=gen,
    )
    values = {"train": v_tr[:n_eval], "test": v_te[:n_eval]}
    curves, memory, _ = _run_tasks(net, values, (tok_tr, tok_te), settings, gen, mask_value=0.5)

    # masked-site comparison on held-out sequences, one masked site per sequence
    sd = np.sqrt(np.diag(C))
    x_clean = xs_te[:n_eval]
    x0, mask = corrupt(v_te[:n_eval], kind="masked", n_masked=1, mask_value=0.5, rng=gen)
    site = np.argmax(mask, axis=1)
    traj = net.run(x0, steps=settings.steps)
    x_hat = _value_to_x(decode_values(traj)[..., 0], sd)  # (T + 1, n_eval, L)
    rows = np.arange(n_eval)
    sq = (x_hat[:, rows, site] - x_clean[rows, site]) ** 2  # (T + 1, n_eval)
    w_star = -P / np.diag(P)[:, None]
    np.fill_diagonal(w_star, 0.0)
    w_fit = np.zeros_like(P)
    for i in range(L):
        others = np.delete(np.arange(L), i)
        coef, *_ = np.linalg.lstsq(xs_tr[:, others], xs_tr[:, i], rcond=None)
        w_fit[i, others] = coef
    oracle = (np.einsum("mj,mj->m", w_star[site], x_clean) - x_clean[rows, site]) ** 2
    fitted = (np.einsum("mj,mj->m", w_fit[site], x_clean) - x_clean[rows, site]) ** 2
    zero = x_clean[rows, site] ** 2
    mean_curve = sq.mean(axis=1)
    t_best = 1 + int(np.argmin(mean_curve[1:]))
    masked = {
        "attractor_t0": _mean_sem(sq[0]),
        "attractor_t1": _mean_sem(sq[1]),
        "attractor_best": _mean_sem(sq[t_best]),
        "attractor_best_step": t_best,
        "attractor_last": _mean_sem(sq[-1]),
        "factored_attention_oracle": _mean_sem(oracle),
        "factored_attention_fitted": _mean_sem(fitted),
        "predict_zero": _mean_sem(zero),
        "theory_oracle_mean_1_over_Pii": float(np.mean(1.0 / np.diag(P)[site])),
        "theory_zero_mean_Cii": float(np.mean(np.diag(C)[site])),
        "curve_mean": mean_curve.tolist(),
        "curve_sem": (sq.std(axis=1, ddof=1) / np.sqrt(n_eval)).tolist(),
    }
    return PottsExperiment(
        curves=curves, memory=memory, masked_site_mse=masked, cost=net.history.cost,
        settings=settings,
        sizes={"L": L, "shift": shift, "n_train": n_train, "n_test": n_test, "n_eval": n_eval},
    )
