"""Experiments with the attractor network (docs/attractor.md): transient memories.

The digits experiment (:func:`digits_experiment`): train the network on 8 x 8 digits, corrupt
training and held-out images and measure the transients of the dynamics. Tokens and corruptions
are defined in :mod:`replica_mlm.attractor.encoding` (the encoding is binding for every attractor
experiment), the measurements and the corruption tasks in :mod:`replica_mlm.attractor.measurements`,
the Gaussian Potts experiment in :mod:`replica_mlm.attractor.potts_sequences`.

The tests for a transient and the lifetimes of transients are in
:mod:`replica_mlm.attractor.transients`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replica_mlm._base.checks import as_generator, positive_int
from replica_mlm.attractor.encoding import (
    corrupt,
    decode_values,
    encode_values,
    image_tokens,
    tokens_image,
)
from replica_mlm.attractor.measurements import AttractorSettings, run_corruption_tasks
from replica_mlm.attractor.network import AttractorNetwork
from replica_mlm.attractor.transients import _mean_sem

__all__ = ["DigitsExperiment", "digits_experiment", "load_digits"]


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
    settings = settings or AttractorSettings()
    gen = as_generator(rng)
    train, test = load_digits(n_train=n_train, n_test=n_test, rng=gen)
    n_eval = min(positive_int(n_eval, "n_eval"), n_train, n_test)
    patch = tuple(settings.patch)
    vtr, vte = image_tokens(train, patch=patch), image_tokens(test, patch=patch)
    xtr, xte = encode_values(vtr), encode_values(vte)
    net = _fit(xtr, settings, gen) if network is None else _checked_network(network, xtr)
    control = None if control_rng is None else _structureless_control(train, settings, control_rng)
    values = {"train": vtr[:n_eval], "test": vte[:n_eval]}
    mean_image = train.mean(axis=0)
    baselines = {
        "train": np.mean((train[:n_eval] - mean_image) ** 2, axis=(1, 2)),
        "test": np.mean((test[:n_eval] - mean_image) ** 2, axis=(1, 2)),
    }
    shrink = _shrinkage(vtr, settings, gen)
    curves, memory, recall, life, trajs = run_corruption_tasks(
        net, values, (xtr, xte), settings, gen, baselines=baselines, train_values=vtr,
        shrink=shrink, control=control,
    )
    return DigitsExperiment(
        curves=curves,
        memory=memory,
        recall=recall,
        lifetimes=life,
        baseline={k: _mean_sem(b) for k, b in baselines.items()},
        shrink={task: k for task, (k, _) in shrink.items()},
        examples=_examples(values, trajs, patch),
        cost=None if net.history is None else net.history.cost,
        seconds_per_epoch=None if net.history is None else net.history.seconds_per_epoch,
        baseline_mean_image=float(baselines["test"].mean()),
        settings=settings,
        sizes={"n_train": n_train, "n_test": n_test, "n_eval": n_eval, "N": vtr.shape[1],
               "d": 2 * vtr.shape[2]},
        network=net,
    )


def _fit(x: np.ndarray, settings: AttractorSettings, gen: np.random.Generator) -> AttractorNetwork:
    """An attractor network trained on the encoded patches ``x`` with the settings' hyperparameters."""
    return AttractorNetwork.fit(
        x, beta=settings.beta, gamma=settings.gamma, lr=settings.lr, epochs=settings.epochs,
        weight_decay=settings.weight_decay, normalisation=settings.normalisation, rng=gen,
    )


def _checked_network(network, xtr: np.ndarray) -> AttractorNetwork:
    """The given network, checked to be an AttractorNetwork with the (N, d) of the patches."""
    if not isinstance(network, AttractorNetwork):
        raise TypeError(f"network must be an AttractorNetwork or None, got {type(network).__name__}")
    if (network.n_tokens, network.dim) != xtr.shape[1:]:
        raise ValueError(f"network must have (N, d) = {xtr.shape[1:]} (the patches), got "
                         f"({network.n_tokens}, {network.dim})")
    return network


def _structureless_control(train: np.ndarray, settings: AttractorSettings,
                           control_rng) -> tuple[AttractorNetwork, np.random.Generator]:
    """The control network, trained on the images with each pixel shuffled across images, and its rng."""
    cgen = as_generator(control_rng)
    flat = train.reshape(len(train), -1)
    shuffled = np.column_stack([cgen.permutation(col) for col in flat.T]).reshape(train.shape)
    patch = tuple(settings.patch)
    return _fit(encode_values(image_tokens(shuffled, patch=patch)), settings, cgen), cgen


def _shrinkage(vtr: np.ndarray, settings: AttractorSettings, gen: np.random.Generator) -> dict:
    """Per task, the shrinkage factor k and the mean training image of the trivial competitor.

    The competitor shrinks the decoded corrupted input toward the mean training image,
    ``v_hat = vbar + k (v0 - vbar)``, with k fitted by least squares on corrupted training images.
    """
    shrink = {}
    for task in ("masked", "noise"):
        x0, _ = corrupt(vtr, kind=task, n_masked=max(1, settings.n_masked * vtr.shape[1] // 16),
                        p_noise=settings.p_noise, rng=gen)
        a, b = (decode_values(x0) - vtr.mean(axis=0)).ravel(), (vtr - vtr.mean(axis=0)).ravel()
        shrink[task] = (float(a @ b / (a @ a)), vtr.mean(axis=0))
    return shrink


def _examples(values: dict, trajs: dict, patch: tuple) -> dict:
    """Per task and split, the first four clean images and their states along the dynamics."""
    return {
        task: {
            split: {
                "clean": tokens_image(values[split][:4], patch=patch),
                "states": tokens_image(decode_values(trajs[task][split][:, :4]), patch=patch),
            }
            for split in values
        }
        for task in trajs
    }
