"""The attractor network on Gaussian Potts sequences (docs/attractor.md), one token per site.

:func:`potts_experiment` trains the network on sequences of a :class:`replica_mlm.GaussianPotts`
model and runs the corruption tasks of :mod:`replica_mlm.attractor.measurements`;
:func:`masked_site_comparison` compares, on held-out sequences with one masked site each, the
squared error of the dynamics with one step of linear factored attention (exact error ``1/P_ii``)
and with predicting the mean (exact error ``C_ii``). It takes the sequences as arguments, so the
same comparison can be fed sequences that do not come from the model (tests/test_attractor_checks.py:
with the sites shuffled independently across sequences the factored-attention prediction is no
longer ``1/P_ii``, and sequences of another model miss ``C_ii`` as well).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replica_mlm._base.checks import as_generator, finite_array, positive_int
from replica_mlm._base.stats import mean_stderr
from replica_mlm.attractor.encoding import (
    corrupt,
    decode_values,
    encode_values,
    gaussian_potts_sequences,
)
from replica_mlm.attractor.measurements import AttractorSettings, run_corruption_tasks
from replica_mlm.attractor.network import AttractorNetwork
from replica_mlm.attractor.transients import _mean_sem, transient_memory
from replica_mlm.tasks.gaussian_potts import GaussianPotts

__all__ = ["PottsExperiment", "masked_site_comparison", "potts_experiment"]


@dataclass
class PottsExperiment:
    """Results of :func:`potts_experiment`.

    ``masked_site_mse`` is the dictionary of :func:`masked_site_comparison` on the held-out
    sequences.
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


def masked_site_comparison(
    net, precision, x_train, x_test, *, steps: int = 100, window: tuple[int, int] = (1, 50),
    rng=0,
) -> dict:
    """Squared error at one masked site per held-out sequence: the attractor dynamics against one
    step of linear factored attention and against predicting the mean.

    Each test sequence ``x`` (in the units of the model) is encoded site by site as
    ``v = Phi(x_i / sqrt(C_ii))`` (``C = precision^{-1}``), one site chosen at random is set to the
    encoding of v = 0.5 (x_i = 0: the state at t = 0 predicts the mean), and the network runs
    ``steps`` steps. References on the same sequences and sites: the Bayes-optimal layer
    ``w* . x_-i`` with ``w* = -P_{-i,i} / P_ii`` (expected squared error ``1 / P_ii`` for
    sequences of the model), the same layer fitted by least squares on ``x_train`` (MLM training
    of linear factored attention), and the prediction 0 (expected error ``C_ii``).

    Parameters
    ----------
    net : AttractorNetwork
        With N = L tokens of dimension 2.
    precision : array_like, shape (L, L)
        The model's precision matrix P (defines w*, 1/P_ii, C_ii and the encoding).
    x_train, x_test : array_like, shapes (M_train, L) and (M_test, L)
        Training sequences (for the fitted layer) and the held-out sequences, M_test >= 4.
    steps, window, rng
        Steps of the dynamics; steps among which the held-out test chooses t*; seed.

    Returns
    -------
    dict
        Mean and standard error (over sequences) of each error; the exact means
        ``theory_oracle_mean_1_over_Pii`` and ``theory_zero_mean_Cii``; the paired differences
        ``oracle_minus_exact_1_over_Pii`` and ``zero_minus_exact_Cii`` (what the validation
        checks); ``oracle_shift_if_sites_independent``, the exact excess of the oracle's mean
        error over ``1/P_ii`` on sequences whose sites are independent with the same marginals
        (the size of the effect the first check detects); the attractor's error curve;
        ``attractor_vs_zero``, the held-out test of
        :func:`~replica_mlm.attractor.transients.transient_memory` against predicting the mean.
    """
    gen = as_generator(rng)
    P, xs_tr, x_clean = _checked_sequences(precision, x_train, x_test)
    C = np.linalg.inv(P)
    sd = np.sqrt(np.diag(C))
    sq, site = _attractor_errors(net, x_clean, sd, steps, gen)
    rows = np.arange(x_clean.shape[0])
    w_star, w_fit = _factored_attention(P, xs_tr)
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
        "curve_sem": mean_stderr(sq, axis=1).stderr.tolist(),
        # paired comparisons (mean, s.e. over sequences)
        "oracle_minus_exact_1_over_Pii": _mean_sem(oracle - 1.0 / np.diag(P)[site]),
        "zero_minus_exact_Cii": _mean_sem(zero - np.diag(C)[site]),
        # what the oracle's error would exceed 1/P_ii by if the sites were independent with the
        # same marginals (no structure): C_ii + sum_j w*_ij^2 C_jj - 1/P_ii, exact
        "oracle_shift_if_sites_independent": float(np.mean(
            (np.diag(C) + (w_star**2) @ np.diag(C) - 1.0 / np.diag(P))[site])),
        # held-out test: t* chosen on half of the sequences, gains over predicting the mean
        # (x_i = 0, which is also the state at t = 0) measured on the other half
        "attractor_vs_zero": transient_memory(
            sq.T, baseline=zero, window=tuple(window), rng=gen
        ).as_dict(),
    }
    t_sel = masked["attractor_vs_zero"]["t_best"]
    masked["attractor_heldout_minus_oracle"] = _mean_sem(sq[t_sel] - oracle)
    return masked


def _checked_sequences(precision, x_train, x_test) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The precision matrix and the training and held-out sequences, checked against each other."""
    P = finite_array(precision, "precision", ndim=2)
    L = P.shape[0]
    xs_tr = finite_array(x_train, "x_train", ndim=2)
    x_clean = finite_array(x_test, "x_test", ndim=2)
    for name, x in (("x_train", xs_tr), ("x_test", x_clean)):
        if x.shape[1] != L:
            raise ValueError(f"{name} must have L = {L} columns (the precision's size), "
                             f"got shape {x.shape}")
    n_eval = x_clean.shape[0]
    if n_eval < 4:
        raise ValueError(f"x_test needs at least 4 sequences for the split test, got {n_eval}")
    return P, xs_tr, x_clean


def _attractor_errors(net, x_clean: np.ndarray, sd: np.ndarray, steps,
                      gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Squared error (T + 1, n_eval) of the dynamics at one random masked site per sequence, and the sites."""
    from scipy.special import ndtr

    v_clean = ndtr(x_clean / sd)[..., None]
    x0, mask = corrupt(v_clean, kind="masked", n_masked=1, mask_value=0.5, rng=gen)
    site = np.argmax(mask, axis=1)
    traj = net.run(x0, steps=positive_int(steps, "steps"))
    x_hat = _value_to_x(decode_values(traj)[..., 0], sd)  # (T + 1, n_eval, L)
    rows = np.arange(x_clean.shape[0])
    sq = (x_hat[:, rows, site] - x_clean[rows, site]) ** 2  # (T + 1, n_eval)
    return sq, site


def _factored_attention(P: np.ndarray, xs_tr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Bayes-optimal layer ``w*_ij = -P_ij / P_ii`` and the same layer fitted by least squares.

    Row i predicts site i from the others (zero diagonal); the fitted one regresses each site of
    the training sequences ``xs_tr`` on the other sites.
    """
    L = P.shape[0]
    w_star = -P / np.diag(P)[:, None]
    np.fill_diagonal(w_star, 0.0)
    w_fit = np.zeros_like(P)
    for i in range(L):
        others = np.delete(np.arange(L), i)
        coef, *_ = np.linalg.lstsq(xs_tr[:, others], xs_tr[:, i], rcond=None)
        w_fit[i, others] = coef
    return w_star, w_fit


def potts_experiment(
    *, L: int = 20, shift: float = 3.0, n_train: int = 2000, n_test: int = 400, n_eval: int = 200,
    n_masked_site: int | None = None, settings: AttractorSettings | None = None, rng=0,
) -> PottsExperiment:
    """The same experiment on Gaussian Potts sequences (docs/theory.md, section 1), one token per site.

    Each site's value ``x_i`` is mapped to ``v = Phi(x_i / sqrt(C_ii))`` in (0, 1) and encoded as
    a unit vector of R^2 (module docstring of :mod:`replica_mlm.attractor.encoding`), so N = L
    and d = 2. Masked sites are set to the encoding of v = 0.5 (x_i = 0, the marginal mean), so
    the state at t = 0 predicts the mean. The masked-site comparison is
    :func:`masked_site_comparison` on the first ``n_masked_site`` test sequences (default: all
    ``n_test``; the corruption tasks use the first ``n_eval``).
    """
    settings = settings or AttractorSettings()
    gen = as_generator(rng)
    model = GaussianPotts.random(L=positive_int(L, "L"), shift=shift, seed=gen)
    P = model.precision
    xs_tr, v_tr = gaussian_potts_sequences(P, n=n_train, rng=gen)
    xs_te, v_te = gaussian_potts_sequences(P, n=n_test, rng=gen)
    n_eval = min(positive_int(n_eval, "n_eval"), n_train, n_test)
    tok_tr, tok_te = encode_values(v_tr), encode_values(v_te)
    net = AttractorNetwork.fit(
        tok_tr, beta=settings.beta, gamma=settings.gamma, lr=settings.lr, epochs=settings.epochs,
        weight_decay=settings.weight_decay, normalisation=settings.normalisation, rng=gen,
    )
    values = {"train": v_tr[:n_eval], "test": v_te[:n_eval]}
    curves, memory, _, _, _ = run_corruption_tasks(
        net, values, (tok_tr, tok_te), settings, gen, mask_value=0.5
    )
    n_site = n_test if n_masked_site is None else min(positive_int(n_masked_site, "n_masked_site"),
                                                     n_test)
    masked = masked_site_comparison(net, P, xs_tr, xs_te[:n_site], steps=settings.steps,
                                    window=tuple(settings.window), rng=gen)
    return PottsExperiment(
        curves=curves, memory=memory, masked_site_mse=masked, cost=net.history.cost,
        settings=settings,
        sizes={"L": L, "shift": shift, "n_train": n_train, "n_test": n_test, "n_eval": n_eval,
               "n_masked_site": n_site},
    )
