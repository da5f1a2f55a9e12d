"""Pseudo-likelihood learning of one Ising site, measured on fresh sequences.

For Ising spins the masked-language-modelling loss of factored attention at site ``i`` is the
negative log pseudo-likelihood of that site, i.e. the logistic loss of ``y = s_i`` given
``x = s_-i``. :func:`fit_site` minimises

    sum_mu log(1 + exp(-y_mu w . x_mu)) + (lam p / 2) |w|^2

with the learners' one logistic fitter (:func:`replica_mlm.learners.logistic.fit_binary`, Newton's
method) and checks the Karush-Kuhn-Tucker residual of the returned weights
itself. :func:`site_measures` evaluates the learnt weights on fresh sequences with the exact
conditional ``P(y | x) = 1 / (1 + exp(-y w* . x))`` averaged analytically over ``y``
(Rao-Blackwellised), which is what the replica theory predicts for the test cross-entropy and the
classification error.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

from replica_mlm.learners import logistic

#: largest KKT residual (max |gradient| of the objective over (lam p)) accepted from the optimiser
KKT_TOL = 1e-7


def fit_site(x: np.ndarray, y: np.ndarray, lam: float, *, warm_start: np.ndarray | None = None
             ) -> tuple[np.ndarray, float]:
    """Weights of l2-penalised logistic regression (penalty ``lam p |w|^2 / 2``) and their KKT residual.

    Fitted by :func:`replica_mlm.learners.logistic.fit_binary` (from ``warm_start`` if given).
    Returns ``(w, kkt)`` where ``kkt = max |grad| / (1 + max |lam p w|)`` of the full objective.
    Raises ValueError if the optimiser stops above :data:`KKT_TOL`.
    """
    p = x.shape[1]
    if lam <= 0:
        raise ValueError("pseudo-likelihood fits need lam > 0 (at lam = 0 the minimiser is infinite "
                         "on separable data)")
    w, _ = logistic.fit_binary(x, y, lam * p, warm_start=warm_start)
    grad = -x.T @ (y * expit(-y * (x @ w))) + lam * p * w
    kkt = float(np.max(np.abs(grad)) / (1.0 + lam * p * np.max(np.abs(w))))
    if kkt > KKT_TOL:
        raise ValueError(f"logistic fit did not converge: KKT residual {kkt:.3g} > {KKT_TOL:g}")
    return w, kkt


def site_measures(x: np.ndarray, teacher: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """Test cross-entropy and error rate of ``weights`` (p, k) on inputs ``x`` (n, p), Rao-Blackwellised.

    With ``nu = w* . x`` and ``z = w . x``: ``test_loss = E_x[P(+|x) log(1 + e^-z) +
    P(-|x) log(1 + e^z)]`` and ``eg = E_x[P(y != sign z | x)]``; the means over ``x`` are returned
    per column of ``weights``.
    """
    nu = x @ teacher
    z = x @ weights
    p_plus = expit(nu)[:, None]
    loss = -(p_plus * log_expit(z) + (1.0 - p_plus) * log_expit(-z))
    wrong = np.where(z > 0, 1.0 - p_plus, np.where(z < 0, p_plus, 0.5))
    return {"test_loss": loss.mean(axis=0), "eg": wrong.mean(axis=0)}


def simulate_sites(model, *, sites, n: int, lam: np.ndarray, seeds: int, rng, n_test: int,
                   progress: bool | None = False) -> dict[str, np.ndarray]:
    """Fit the pseudo-likelihood of ``sites`` of an Ising model on ``seeds`` independent data sets.

    One sampler pilot run (thinning and burn-in from the measured autocorrelation; parallel
    tempering where Gibbs does not mix) serves every seed; seed ``k`` draws ``n`` training and
    ``n_test`` fresh test sequences from the ``k``-th ``SeedSequence`` child of ``rng``, and every
    site is fitted on the same sequences (as factored attention is). Returns arrays of shape
    (seeds, len(sites), len(lam)): ``eg`` and ``test_loss`` (Rao-Blackwellised, see
    :func:`site_measures`), ``train_loss`` (mean logistic loss on the training set) and
    ``estimation_error`` ``|w - w*|^2`` with ``w* = 2 beta J_{i,-i}``; and ``kkt``, the largest
    optimiser residual. ``progress``: a bar on stderr over the seeds (:mod:`replica_mlm._base.progress`).
    """
    from replica_mlm._base.progress import bar
    from replica_mlm.tasks.ising_site import spins

    gen, diag = _sampler(model, rng)
    sites = list(sites)
    shape = (seeds, len(sites), lam.size)
    out = {k: np.empty(shape) for k in MEASURES}
    kkt = 0.0
    for k, child in enumerate(bar(gen.spawn(seeds), progress=progress, desc="pseudo-likelihood: seeds",
                                  unit="training set")):
        seqs = model.sample(n + n_test, rng=child, sweeps_between=diag.sweeps_between,
                            burn_in=diag.burn_in, method=diag.method, n_rungs=diag.ladder.size)
        s = spins(child.permutation(seqs))  # rows interleave chains: shuffle before splitting
        for a, site in enumerate(sites):
            res = _fit_and_measure(model, site, s[:n], s[n:], lam)
            for key in MEASURES:
                out[key][k, a] = res[key]
            kkt = max(kkt, res["kkt"])
    out["kkt"] = np.array(kkt)
    return out


#: measures returned per fit by :func:`simulate_sites` and :func:`simulate_nested`
MEASURES = ("eg", "test_loss", "train_loss", "estimation_error")


def simulate_nested(model, *, site: int, ns, lam: np.ndarray, seeds: int, rng, n_test: int
                    ) -> dict[str, np.ndarray]:
    """Pseudo-likelihood of one site at several training-set sizes from one pool of sequences per seed.

    Seed ``k`` draws ``max(ns) + n_test`` sequences (one sampler pilot run for all seeds, as in
    :func:`simulate_sites`), shuffles them, keeps the last ``n_test`` as the test set and fits the
    site on the first ``n`` sequences for every ``n`` in ``ns`` (nested training sets). Every
    entry is an unbiased draw at its own ``n``; entries of one seed at different ``n`` are
    correlated (shared sequences), entries of different seeds independent, so the standard error
    over seeds of each ``n`` is valid on its own. This costs one sample of ``max(ns) + n_test``
    sequences per seed instead of one per ``n``. Returns arrays of shape
    (seeds, len(ns), len(lam)) named as in :func:`simulate_sites`, and ``kkt``.
    """
    from replica_mlm.tasks.ising_site import spins

    ns = [int(n) for n in ns]
    if not ns or min(ns) < 1:
        raise ValueError(f"ns must be training-set sizes >= 1, got {ns}")
    gen, diag = _sampler(model, rng)
    out = {k: np.empty((seeds, len(ns), lam.size)) for k in MEASURES}
    kkt = 0.0
    top = max(ns)
    for k, child in enumerate(gen.spawn(seeds)):
        seqs = model.sample(top + n_test, rng=child, sweeps_between=diag.sweeps_between,
                            burn_in=diag.burn_in, method=diag.method, n_rungs=diag.ladder.size)
        s = spins(child.permutation(seqs))
        test = s[top:]
        for a, n in enumerate(ns):
            res = _fit_and_measure(model, site, s[:n], test, lam)
            for key in MEASURES:
                out[key][k, a] = res[key]
            kkt = max(kkt, res["kkt"])
    out["kkt"] = np.array(kkt)
    out["sweeps_between"] = np.array(diag.sweeps_between)
    out["method"] = np.array(diag.method)
    out["tau_int"] = np.array(diag.tau_int)
    return out


def _sampler(model, rng):
    """The root generator and the sampler's pilot diagnostics; ValueError if it cannot mix."""
    import warnings

    from replica_mlm._base import checks as _checks

    gen = _checks.as_generator(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        diag = model.gibbs_diagnostics(rng=gen, method="auto")
    if not diag.mixing:
        raise ValueError(f"the sampler does not decorrelate at beta={model.beta:.4g} "
                         f"(tau_int >= {diag.tau_int:.1f}): no Boltzmann samples to fit")
    return gen, diag


def _fit_and_measure(model, site: int, train: np.ndarray, test: np.ndarray, lam: np.ndarray) -> dict:
    """Fit ``site`` on the spins ``train`` for every ``lam`` (warm-started, strong to weak penalty)."""
    keep = np.arange(model.L) != site
    teacher = 2.0 * model.beta * model.couplings[site, keep]
    x, y = train[:, keep], train[:, site]
    w = np.zeros(model.L - 1)
    ws = np.empty((model.L - 1, lam.size))
    kkt = 0.0
    for j in np.argsort(lam)[::-1]:
        w, res = fit_site(x, y, float(lam[j]), warm_start=w)
        ws[:, j] = w
        kkt = max(kkt, res)
    measures = site_measures(test[:, keep], teacher, ws)
    return {"eg": measures["eg"], "test_loss": measures["test_loss"],
            "train_loss": -log_expit(y[:, None] * (x @ ws)).mean(axis=0),
            "estimation_error": ((ws - teacher[:, None]) ** 2).sum(axis=0), "kkt": kkt}
