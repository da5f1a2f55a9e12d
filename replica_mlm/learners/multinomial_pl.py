"""Multinomial pseudo-likelihood of one Potts site (q colours), measured on fresh sequences.

Masked language modelling with factored attention at site ``i`` is multinomial logistic regression
of ``s_i`` on the other colours. In the reduced coordinates of :mod:`.potts_site` (centred inputs
``x = P^T e_{s_-i} - E[...]`` of dimension ``d = p K``, logits ``P W^T x``, no bias) :func:`fit`
minimises

    sum_mu CE(y_mu, P W^T x_mu) + (lam p / 2) |W|_F^2

by the learners' one logistic fitter (:func:`replica_mlm.learners.logistic.fit`: Newton's method
with backtracking on the ``d K`` unknowns) and certifies the result by its Karush-Kuhn-Tucker
residual. (The unreduced q-class fit of scikit-learn,
``LogisticRegression(C = 1 / (lam p), fit_intercept=False)``, is the same estimator:
``W = coef_^T P``; the tests check it.) :func:`simulate_site` draws Boltzmann sequences and
measures the test cross-entropy and error rate with the exact conditional of the model averaged
analytically over the masked colour (Rao-Blackwellised), and ``|W - W*|_F^2``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax

from replica_mlm._base import checks as _checks
from replica_mlm.learners import logistic

#: largest KKT residual ``max |grad| / (1 + lam p max |W|)`` accepted
KKT_TOL = 1e-9


def fit(x: np.ndarray, y: np.ndarray, P: np.ndarray, lam: float, p: int, *,
        warm_start: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """``W`` (d, K) of the penalised multinomial fit (:func:`replica_mlm.learners.logistic.fit`,
    penalty ``lam p``) and its KKT residual; ValueError above KKT_TOL."""
    W, kkt = logistic.fit(x, y, P, lam * p, warm_start=warm_start)
    if kkt > KKT_TOL:
        raise ValueError(f"multinomial fit did not converge: KKT residual {kkt:.3g} > {KKT_TOL:g}")
    return W, kkt


def reduced_inputs(seqs: np.ndarray, site: int, P: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """``x = P^T e_{s_j} - mean_j`` for ``j != site``, site-major: (n, (L - 1) K)."""
    L = seqs.shape[1]
    keep = np.arange(L) != site
    x = P[seqs[:, keep]] - mean[keep][None]
    return x.reshape(seqs.shape[0], -1)


def simulate_site(model, *, site: int, n: int, lam: np.ndarray, seeds: int, rng: _checks.RngLike,
                  n_test: int, mean: np.ndarray, progress: bool | None = False) -> dict[str, np.ndarray]:
    """Fit site ``site`` on ``n`` Boltzmann sequences, ``seeds`` times; arrays of shape (seeds, len(lam)).

    ``mean`` (L, K) centres the inputs (the task's own mean, so that the fit is exactly the model
    of the theory). Returns ``test_loss``, ``eg`` (Rao-Blackwellised), ``train_loss``,
    ``estimation_error`` and ``kkt`` (the largest residual). ``progress``: a bar on stderr over
    the seeds (:mod:`replica_mlm._base.progress`).
    """
    from replica_mlm._base.progress import bar
    from replica_mlm.learners.pseudo_likelihood import _sampler
    from replica_mlm.tasks.potts_site import simplex_basis, teacher_of

    P = simplex_basis(model.q)
    W_star, _ = teacher_of(model, site)
    gen, diag = _sampler(model, rng)  # the Ising route's pilot run and mixing refusal
    p = model.L - 1
    out = {k: np.empty((seeds, lam.size)) for k in ("eg", "test_loss", "train_loss", "estimation_error")}
    kkt = 0.0
    order = np.argsort(lam)[::-1]
    for k, child in enumerate(bar(gen.spawn(seeds), progress=progress, desc="pseudo-likelihood: seeds",
                                  unit="training set")):
        seqs = model.sample(n + n_test, rng=child, sweeps_between=diag.sweeps_between,
                            burn_in=diag.burn_in, method=diag.method, n_rungs=diag.ladder.size)
        seqs = child.permutation(seqs)
        train, test = seqs[:n], seqs[n:]
        x = reduced_inputs(train, site, P, mean)
        y = train[:, site]
        xt = reduced_inputs(test, site, P, mean)
        truth = model.conditional(test, site)  # exact P(s_i = a | s_-i), (n_test, q)
        W = None
        for j in order:
            W, res = fit(x, y, P, float(lam[j]), p, warm_start=W)
            kkt = max(kkt, res)
            logits = xt @ W @ P.T
            ce = -log_softmax(logits, axis=1)
            out["test_loss"][k, j] = float(np.mean(np.sum(truth * ce, axis=1)))
            pick = np.argmax(logits, axis=1)
            out["eg"][k, j] = float(np.mean(1.0 - truth[np.arange(truth.shape[0]), pick]))
            out["train_loss"][k, j] = float(np.mean(-log_softmax(x @ W @ P.T, axis=1)[np.arange(n), y]))
            out["estimation_error"][k, j] = float(np.sum((W - W_star) ** 2))
    out["kkt"] = np.array(kkt)
    return out
