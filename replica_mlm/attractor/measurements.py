"""Measurements of the attractor dynamics from corrupted inputs, and the corruption tasks.

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

:func:`run_corruption_tasks` runs both corruptions (:func:`~replica_mlm.attractor.encoding.corrupt`)
on every split and measures the transients
(:mod:`replica_mlm.attractor.transients`); the digits experiment
(:mod:`replica_mlm.attractor.experiments`) and the Gaussian Potts experiment
(:mod:`replica_mlm.attractor.potts_sequences`) share it, with the :class:`AttractorSettings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replica_mlm._base.stats import mean_stderr
from replica_mlm.attractor.encoding import corrupt, decode_values, encode_values
from replica_mlm.attractor.transients import transient_lifetimes, transient_memory

__all__ = ["AttractorSettings", "TransientCurves", "run_corruption_tasks", "transient_curves"]

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


def run_corruption_tasks(
    net, values: dict, refs: tuple, settings: AttractorSettings, gen: np.random.Generator, *,
    mask_value: float | None = None, baselines: dict | None = None, train_values=None,
    shrink: dict | None = None, control: tuple | None = None,
) -> tuple[dict, dict, dict, dict, dict]:
    """Both corruption tasks (``masked``, ``noise``) on every split, measured along the dynamics.

    Parameters
    ----------
    net : AttractorNetwork
        The network whose dynamics run (``settings.steps`` steps).
    values : dict
        Clean values (M, N, k) per split (``"train"``, ``"test"``).
    refs : tuple (train_tokens, test_tokens)
        The configurations of the overlaps (:func:`transient_curves`).
    settings : AttractorSettings
        Masked tokens (``n_masked`` per 16 tokens), noise level, steps and the window of t*.
    gen : numpy.random.Generator
        Draws the corruptions and the held-out halves, in this order for every task and split.
    mask_value : float, optional
        Masked tokens are the encoding of this value instead of random unit vectors.
    baselines : dict, optional
        Per-input error of a baseline per split: :func:`transient_memory` against it and
        :func:`transient_lifetimes`.
    train_values : array, optional
        Training values: the centred correlation with the nearest one is measured and tested.
    shrink : dict, optional
        ``shrink[task] = (factor, centre)``: the corrupted input pulled toward ``centre``, as a
        competitor (``extra["shrinkage_error"]``, ``extra["shrinkage_test"]``).
    control : tuple (network, generator), optional
        A control network run on the same corrupted inputs (``extra["control_*"]``).

    Returns
    -------
    curves, memory, recall, lifetimes, trajectories : dict
        Each indexed ``[task][split]``.
    """
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
