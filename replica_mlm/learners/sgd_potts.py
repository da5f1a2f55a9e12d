"""One-pass SGD with the softmax cross-entropy on a q-colour site, simulated (docs/dynamics.md,
section "A q-colour site").

The weights ``W`` (d x K) move by ``W <- W - (lr / p) ((1/B) sum_b x_b g_b^T + lam W)`` with
``g = P^T (softmax(P W^T x) - e_y)``, from W = 0. Two sources of samples:

* :func:`gaussian_runs`: the Gaussian-equivalent task itself (a
  :class:`~replica_mlm.tasks.potts_site.PottsSite`), inputs drawn in the eigenbasis of Sigma and
  labels from its softmax channel; each run's weights are scored exactly through ``(Q, M)``;
* :func:`potts_runs`: a Potts model's own Boltzmann samples (fresh sequences at every step; the
  inputs the centred reduced colours of the other sites, centred by the site's measured mean),
  scored on fresh test sequences through the exact conditional of the masked site.

The classification error and the test loss of each run's ``(Q, M)`` are integrated by one
scrambled Sobol' rule per run and time (unbiased, so its integration error is part of the runs'
spread) for K >= 2, and by Gauss-Legendre panels at K = 1.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, softmax

from replica_mlm._base import checks as _checks
from replica_mlm._base.progress import bar
from replica_mlm.theory.sides import multiclass_channel as mc
from replica_mlm.theory.sides import sgd_multiclass as sm

#: Sobol' points (2^m) of one run's classification error at one time
RUN_EG_M = 12
MEASURES = ("eg", "test_loss", "estimation_error", "m", "q")


def _score(task, Q: np.ndarray, M: np.ndarray, seed: int) -> tuple[float, float]:
    """eg and the test loss of one run: one scrambled Sobol' rule of seed ``seed`` (Legendre
    panels at K = 1)."""
    rule = sm.eg_rule_1d() if task.K == 1 else mc.sobol_rule(task.K, RUN_EG_M, seed)
    Qf = sm.floor_overlap(Q, task.rho)
    got = mc.test_measures(rule, Q=Qf, M=M, rho=task.rho, bias=task.bias, P=task.basis)
    return got["eg"], got["test_loss"]


def gaussian_runs(task, *, steps: np.ndarray, lr: float, lam: float, batch: int, seeds: int, gen,
                  progress=None) -> dict[str, np.ndarray]:
    """Measures (seeds, k) of ``seeds`` runs on Gaussian inputs of the site, after each of ``steps``."""
    omega, theta = task.modes
    d, K, p = task.d, task.K, task.p
    scale = np.sqrt(np.clip(omega, 0.0, None))
    P, bias = task.basis, task.bias
    last = int(np.max(steps))
    _checks.allocation(8 * 3 * seeds * batch * d, f"simulate_sgd with seeds={seeds}, batch={batch}")
    _checks.work(last * seeds * batch * d * (K + 2), f"simulate_sgd to {last} steps with seeds={seeds}, "
                 f"batch={batch} on d = {d}", steps=last)
    W = np.zeros((seeds, d, K))
    out = {name: np.empty((seeds, steps.size)) for name in MEASURES}
    done, g = 0, lr / p
    with bar(total=last, progress=progress, desc="simulate_sgd", unit="step") as pbar:
        for j in np.argsort(steps, kind="stable"):
            while done < steps[j]:
                x = gen.standard_normal((seeds, batch, d)) * scale  # the eigenbasis of Sigma
                nu = x @ theta + bias
                prob = softmax(nu @ P.T, axis=2)
                y = np.minimum((gen.random((seeds, batch, 1)) > np.cumsum(prob, axis=2)).sum(axis=2), K)
                s = softmax(np.einsum("sbd,sdk->sbk", x, W) @ P.T, axis=2)
                s[np.arange(seeds)[:, None], np.arange(batch)[None], y] -= 1.0
                grad = np.einsum("sbd,sbk->sdk", x, s @ P) / batch + lam * W
                W -= g * grad
                done += 1
                pbar.update(1)
            for r in range(seeds):
                Q = W[r].T @ (omega[:, None] * W[r])
                M = W[r].T @ (omega[:, None] * theta)
                out["eg"][r, j], out["test_loss"][r, j] = _score(task, Q, M, int(gen.integers(2**31)))
                out["m"][r, j], out["q"][r, j] = np.trace(M), np.trace(Q)
                out["estimation_error"][r, j] = float(np.sum((W[r] - theta) ** 2))
    return out


def potts_runs(model, task, *, site: int, steps: np.ndarray, lr: float, lam: float, batch: int, seeds: int,
               rng, n_test: int, progress=None) -> dict[str, np.ndarray]:
    """Measures (seeds, k) of ``seeds`` runs on a q-colour Potts model's own samples at ``site``
    (``task = model.masked_site(site)``, whose mean centres the inputs and whose covariance gives
    ``m`` and ``q``), recorded after each of ``steps``."""
    from replica_mlm.learners.pseudo_likelihood import _sampler

    L, K, p = model.L, task.K, task.p
    keep = np.arange(L) != site
    P = task.basis
    mean = task.input_mean
    last = int(np.max(steps))
    _checks.allocation(8 * seeds * (last * batch + n_test) * L * (K + 1),
                       f"simulate_sgd on a PottsModel with seeds={seeds}, batch={batch}, n_test={n_test}")
    gen, diag = _sampler(model, rng)
    out = {name: np.empty((seeds, steps.size)) for name in MEASURES}
    order = np.argsort(steps, kind="stable")
    runs = bar(gen.spawn(seeds), progress=progress, desc="simulate_sgd: runs", unit="run")
    for k, child in enumerate(runs):
        seqs = model.sample(last * batch + n_test, rng=child, sweeps_between=diag.sweeps_between,
                            burn_in=diag.burn_in, method=diag.method, n_rungs=diag.ladder.size)
        seqs = child.permutation(seqs)  # rows interleave chains: shuffle before splitting
        x = P[seqs[:, keep]].reshape(seqs.shape[0], -1) - mean
        y = seqs[:, site]
        test_x, cond = x[last * batch:], model.conditional(seqs[last * batch:], site)
        W, done = np.zeros((task.d, K)), 0
        for j in order:
            while done < steps[j]:
                xb, yb = x[done * batch:(done + 1) * batch], y[done * batch:(done + 1) * batch]
                s = softmax(xb @ W @ P.T, axis=1)
                s[np.arange(yb.size), yb] -= 1.0
                W = W - (lr / p) * (xb.T @ (s @ P) / batch + lam * W)
                done += 1
            logits = test_x @ W @ P.T
            pick = np.argmax(logits, axis=1)
            out["eg"][k, j] = float(np.mean(1.0 - cond[np.arange(cond.shape[0]), pick]))
            out["test_loss"][k, j] = float(np.mean(np.sum(-cond * log_softmax(logits, axis=1), axis=1)))
            out["m"][k, j] = float(np.trace(W.T @ task.covariance @ task.teacher))
            out["q"][k, j] = float(np.trace(W.T @ task.covariance @ W))
            out["estimation_error"][k, j] = float(np.sum((W - task.teacher) ** 2))
    return out
