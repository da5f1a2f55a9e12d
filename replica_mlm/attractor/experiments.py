"""Experiments with the attractor network (docs/attractor.md): transient memories.

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
``correlation_train``: the largest *centred* correlation ``cos(v_hat - vbar, y - vbar)`` of the
decoded values with any training configuration ``y`` (``vbar``: the mean training
configuration; 0 for a state that decodes to ``vbar`` itself). The token overlap is dominated by
the blank background that all digits share (the blurry end state of the dynamics has token overlap
~0.95 with some training digit), so only the centred correlation says whether a state resembles
one particular stored image more than the average one does.

The tests for a transient and the lifetimes of transients are in
:mod:`replica_mlm.attractor.transients`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replica_mlm._checks import as_generator, finite_array, nonnegative, positive_int
from replica_mlm.attractor.transients import (
    Lifetimes,
    TransientMemory,
    _mean_sem,
    transient_lifetimes,
    transient_memory,
)
from replica_mlm.stats import mean_stderr

__all__ = [
    "AttractorSettings",
    "DigitsExperiment",
    "Lifetimes",
    "PottsExperiment",  # noqa: F822 (served by __getattr__)
    "TransientCurves",
    "TransientMemory",
    "corrupt",
    "decode_values",
    "digits_experiment",
    "encode_values",
    "gaussian_potts_sequences",
    "image_tokens",
    "load_digits",
    "masked_site_comparison",  # noqa: F822 (served by __getattr__)
    "potts_experiment",  # noqa: F822 (served by __getattr__)
    "tokens_image",
    "transient_curves",
    "transient_lifetimes",
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


def _check_patch(patch, H: int, W: int) -> tuple[int, int]:
    if (not isinstance(patch, tuple | list) or len(patch) != 2
            or not all(isinstance(p, int | np.integer) and not isinstance(p, bool) for p in patch)):
        raise TypeError(f"patch must be a pair of ints (height, width), got {patch!r}")
    ph, pw = int(patch[0]), int(patch[1])
    if ph < 1 or pw < 1 or H % ph or W % pw:
        raise ValueError(
            f"patch (height, width) must be positive and divide the image size {H} x {W}, "
            f"got {(ph, pw)}"
        )
    return ph, pw


def image_tokens(images, *, patch: tuple[int, int] = (2, 2)) -> np.ndarray:
    """(M, H, W) images -> (M, N, k) values: ``patch`` blocks in row-major block order.

    With the default 2 x 2 patches an 8 x 8 digit gives N = 16 tokens of k = 4 values.
    """
    im = finite_array(images, "images", ndim=3)
    M, H, W = im.shape
    ph, pw = _check_patch(patch, H, W)
    p = im.reshape(M, H // ph, ph, W // pw, pw).transpose(0, 1, 3, 2, 4)
    return p.reshape(M, (H // ph) * (W // pw), ph * pw)


def tokens_image(
    values, shape: tuple[int, int] = (8, 8), *, patch: tuple[int, int] = (2, 2)
) -> np.ndarray:
    """Inverse of :func:`image_tokens`: (..., N, k) values -> (..., H, W) images."""
    v = finite_array(values, "values")
    H, W = shape
    ph, pw = _check_patch(patch, H, W)
    lead = v.shape[:-2]
    p = v.reshape(*lead, H // ph, W // pw, ph, pw)
    p = np.moveaxis(p, -2, -3)  # (..., H/ph, ph, W/pw, pw)
    return p.reshape(*lead, H, W)


def gaussian_potts_sequences(
    precision: np.ndarray, *, n: int, rng=0
) -> tuple[np.ndarray, np.ndarray]:
    """Samples x ~ N(0, C), C = precision^{-1} (docs/theory.md, section 1), and their CDF values.

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
    correlation_train : numpy.ndarray, shape (M, steps + 1), or None
        Centred correlation with the nearest training configuration (module docstring), if the
        training values were given to :func:`transient_curves`.
    """

    error: np.ndarray
    overlap_target: np.ndarray
    overlap_train: np.ndarray
    overlap_test: np.ndarray
    correlation_train: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """Mean and standard error over inputs of every curve, as lists (for JSON)."""
        out = {}
        for name in ("error", "overlap_target", "overlap_train", "overlap_test",
                     "correlation_train"):
            a = getattr(self, name)
            if a is None:
                continue
            out[name] = {
                "mean": a.mean(axis=0).tolist(),
                "sem": mean_stderr(a, axis=0).stderr.tolist(),
            }
        return out


def _max_overlap(x: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """max over reference configurations of (1/N) sum_i x_i . y_i, for x (M, N, d)."""
    N = x.shape[1]
    return (x.reshape(len(x), -1) @ refs.reshape(len(refs), -1).T).max(axis=1) / N


def _max_correlation(values: np.ndarray, ref_unit: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """max over references of the cosine between ``values - centre`` and the (unit) references."""
    v = values.reshape(len(values), -1) - centre
    norm = np.linalg.norm(v, axis=1)
    best = (v @ ref_unit.T).max(axis=1)
    return np.where(norm > 1e-12, best / np.where(norm > 1e-12, norm, 1.0), 0.0)


def transient_curves(
    traj: np.ndarray, clean_values: np.ndarray, train_tokens: np.ndarray, test_tokens: np.ndarray,
    *, train_values: np.ndarray | None = None,
) -> TransientCurves:
    """Measurements along a batched trajectory (steps + 1, M, N, d) against the clean values.

    With ``train_values`` (M_train, N, k) the centred correlation with the nearest training
    configuration is measured too (module docstring).
    """
    T = traj.shape[0]
    clean_tokens = encode_values(clean_values)
    N = traj.shape[2]
    err = np.empty((traj.shape[1], T))
    ov_t, ov_tr, ov_te = np.empty_like(err), np.empty_like(err), np.empty_like(err)
    corr = None
    if train_values is not None:
        flat = np.asarray(train_values, dtype=float).reshape(len(train_values), -1)
        centre = flat.mean(axis=0)
        refs = flat - centre
        refs /= np.maximum(np.linalg.norm(refs, axis=1, keepdims=True), 1e-12)
        corr = np.empty_like(err)
    for t in range(T):
        x = traj[t]
        dec = decode_values(x)
        err[:, t] = np.mean((dec - clean_values) ** 2, axis=(1, 2))
        ov_t[:, t] = np.einsum("mia,mia->m", x, clean_tokens) / N
        ov_tr[:, t] = _max_overlap(x, train_tokens)
        ov_te[:, t] = _max_overlap(x, test_tokens)
        if corr is not None:
            corr[:, t] = _max_correlation(dec, refs, centre)
    return TransientCurves(err, ov_t, ov_tr, ov_te, corr)


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
    normalisation: str = "none"  # training cost: "none" or "vmf" (AttractorNetwork.fit)
    patch: tuple[int, int] = (2, 2)  # digits only: pixels per token (height, width)
    window: tuple[int, int] = (1, 20)  # steps among which transient_memory chooses t*


@dataclass
class DigitsExperiment:
    """Results of :func:`digits_experiment`, indexed [task][split].

    ``memory``: the held-out error test (:func:`transient_memory` with the per-image error of
    predicting the mean training image as baseline); ``curves[task][split].extra`` holds the
    per-image error of shrinking the corrupted input toward the mean training image
    (``"shrinkage_error"``, factor fitted on corrupted training images, ``shrink[task]``) and the
    held-out test of the dynamics against it (``"shrinkage_test"``); ``recall``: the same test on the centred
    correlation with the nearest training image (higher is better); ``lifetimes``:
    :func:`transient_lifetimes` of the error curves against the same baseline; ``network``: the
    network that ran (trained here, or the one given); ``cost`` and ``seconds_per_epoch`` are None
    for a given network without a training history.
    """

    curves: dict
    memory: dict
    recall: dict
    lifetimes: dict
    baseline: dict
    shrink: dict
    examples: dict
    cost: np.ndarray | None
    seconds_per_epoch: float | None
    baseline_mean_image: float
    settings: AttractorSettings
    sizes: dict
    network: object = None


def _run_tasks(net, values: dict, refs: tuple, settings: AttractorSettings, gen, mask_value=None,
               baselines: dict | None = None, train_values=None, shrink: dict | None = None,
               control=None):
    curves, memory, recall, life, trajs = {}, {}, {}, {}, {}
    for task in ("masked", "noise"):
        curves[task], memory[task], recall[task], life[task], trajs[task] = {}, {}, {}, {}, {}
        for split, v in values.items():
            x0, _ = corrupt(
                v, kind=task, n_masked=max(1, settings.n_masked * v.shape[1] // 16),
                p_noise=settings.p_noise, mask_value=mask_value, rng=gen,
            )
            traj = net.run(x0, steps=settings.steps)
            c = transient_curves(traj, v, *refs, train_values=train_values)
            curves[task][split] = c
            b = None if baselines is None else baselines[split]
            win = tuple(settings.window)
            memory[task][split] = transient_memory(c.error, baseline=b, window=win, rng=gen)
            if shrink is not None:
                # the corrupted input pulled toward the mean training configuration by the
                # factor fitted on corrupted training inputs (see digits_experiment)
                keep, centre = shrink[task]
                guess = centre + keep * (decode_values(traj[0]) - centre)
                c.extra["shrinkage_error"] = np.mean((guess - v) ** 2, axis=(1, 2))
                c.extra["shrinkage_test"] = transient_memory(
                    c.error, baseline=c.extra["shrinkage_error"], window=win, rng=gen
                )
            if control is not None:
                # the control network on the same corrupted inputs; its best step is chosen on
                # all inputs (in its favour), the trained network's on the selection half only
                net_c, gen_c = control  # its own generator: the other draws stay as without it
                err_c = np.mean((decode_values(net_c.run(x0, steps=settings.steps)) - v) ** 2,
                                axis=(2, 3)).T
                lo, hi = win
                t_c = lo + int(np.argmin(err_c[:, lo:hi + 1].mean(axis=0)))
                c.extra["control_error"] = err_c
                c.extra["control_step"] = t_c
                c.extra["control_test"] = transient_memory(
                    c.error, baseline=err_c[:, t_c], window=win, rng=gen_c
                )
            if c.correlation_train is not None:
                recall[task][split] = transient_memory(
                    c.correlation_train, maximise=True, window=win, rng=gen
                )
            if b is not None:
                life[task][split] = transient_lifetimes(c.error, b)
            trajs[task][split] = traj
    return curves, memory, recall, life, trajs


def digits_experiment(
    *, n_train: int = 600, n_test: int = 200, n_eval: int = 100,
    settings: AttractorSettings | None = None, rng=0, network=None, control_rng=None,
) -> DigitsExperiment:
    """Train on digits, then run both corruption tasks on training and held-out test images.

    ``n_eval`` corrupted inputs per split (the first ``n_eval`` images of each split). With
    ``network`` (an :class:`~replica_mlm.AttractorNetwork` with N and d of the patches) that
    network runs instead of one trained here (the data split is the same for the same ``rng``):
    how the tests feed a network without the effect (couplings zero or shuffled) through the
    same measurements. With ``control_rng`` (a seed) a *structureless control* is trained as well:
    the same training, on the training images with every pixel shuffled independently across
    images (each pixel's distribution kept, every correlation between pixels lost), and run on the
    same corrupted inputs; ``curves[task][split].extra`` then holds its error curves
    (``"control_error"``), its best step (``"control_step"``) and the held-out test of the
    trained network against it (``"control_test"``): is the transient more than what the pixel
    marginals alone give?
    """
    from replica_mlm.attractor.network import AttractorNetwork

    settings = settings or AttractorSettings()
    gen = as_generator(rng)
    train, test = load_digits(n_train=n_train, n_test=n_test, rng=gen)
    n_eval = min(positive_int(n_eval, "n_eval"), n_train, n_test)
    patch = tuple(settings.patch)
    vtr, vte = image_tokens(train, patch=patch), image_tokens(test, patch=patch)
    xtr, xte = encode_values(vtr), encode_values(vte)
    if network is None:
        net = AttractorNetwork.fit(
            xtr, beta=settings.beta, gamma=settings.gamma, lr=settings.lr, epochs=settings.epochs,
            weight_decay=settings.weight_decay, normalisation=settings.normalisation, rng=gen,
        )
    elif not isinstance(network, AttractorNetwork):
        raise TypeError(f"network must be an AttractorNetwork or None, got {type(network).__name__}")
    elif (network.n_tokens, network.dim) != xtr.shape[1:]:
        raise ValueError(f"network must have (N, d) = {xtr.shape[1:]} (the patches), got "
                         f"({network.n_tokens}, {network.dim})")
    else:
        net = network
    control = None
    if control_rng is not None:
        cgen = as_generator(control_rng)
        flat = train.reshape(len(train), -1)
        shuffled = np.column_stack([cgen.permutation(col) for col in flat.T]).reshape(train.shape)
        control = AttractorNetwork.fit(
            encode_values(image_tokens(shuffled, patch=patch)), beta=settings.beta,
            gamma=settings.gamma, lr=settings.lr, epochs=settings.epochs,
            weight_decay=settings.weight_decay, normalisation=settings.normalisation, rng=cgen,
        )
    values = {"train": vtr[:n_eval], "test": vte[:n_eval]}
    mean_image = train.mean(axis=0)
    baselines = {
        "train": np.mean((train[:n_eval] - mean_image) ** 2, axis=(1, 2)),
        "test": np.mean((test[:n_eval] - mean_image) ** 2, axis=(1, 2)),
    }
    # a trivial competitor: shrink the decoded corrupted input toward the mean training image,
    # v_hat = vbar + k (v0 - vbar), with k fitted by least squares on corrupted training images
    shrink = {}
    for task in ("masked", "noise"):
        x0, _ = corrupt(vtr, kind=task, n_masked=max(1, settings.n_masked * vtr.shape[1] // 16),
                        p_noise=settings.p_noise, rng=gen)
        a, b = (decode_values(x0) - vtr.mean(axis=0)).ravel(), (vtr - vtr.mean(axis=0)).ravel()
        shrink[task] = (float(a @ b / (a @ a)), vtr.mean(axis=0))
    curves, memory, recall, life, trajs = _run_tasks(
        net, values, (xtr, xte), settings, gen, baselines=baselines, train_values=vtr,
        shrink=shrink, control=None if control is None else (control, cgen),
    )
    examples = {
        task: {
            split: {
                "clean": tokens_image(values[split][:4], patch=patch),
                "states": tokens_image(decode_values(trajs[task][split][:, :4]), patch=patch),
            }
            for split in values
        }
        for task in trajs
    }
    return DigitsExperiment(
        curves=curves,
        memory=memory,
        recall=recall,
        lifetimes=life,
        baseline={k: _mean_sem(b) for k, b in baselines.items()},
        shrink={task: k for task, (k, _) in shrink.items()},
        examples=examples,
        cost=None if net.history is None else net.history.cost,
        seconds_per_epoch=None if net.history is None else net.history.seconds_per_epoch,
        baseline_mean_image=float(baselines["test"].mean()),
        settings=settings,
        sizes={"n_train": n_train, "n_test": n_test, "n_eval": n_eval, "N": vtr.shape[1],
               "d": 2 * vtr.shape[2]},
        network=net,
    )


_GAUSSIAN_POTTS = ("PottsExperiment", "masked_site_comparison", "potts_experiment")


def __getattr__(name: str):
    """The Gaussian Potts experiment lives in :mod:`replica_mlm.attractor.potts_sequences` (which
    imports this module); its names are served from here too, on first use."""
    if name in _GAUSSIAN_POTTS:
        from replica_mlm.attractor import potts_sequences as gaussian_potts
        return getattr(gaussian_potts, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
