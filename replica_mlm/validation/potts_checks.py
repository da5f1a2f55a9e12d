"""The sampler and equivalence checks of the Potts section
(:mod:`replica_mlm.validation.potts_section`)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from replica_mlm.learners.attention import FactoredAttention
from replica_mlm.potts.model import PottsModel
from replica_mlm.validation.report import Check, Section

__all__ = ["HAMMING_TOL", "equivalence_check", "sampler_checks"]

#: the data's mean Hamming distance must lie this close to the target (tune_beta's default tol)
HAMMING_TOL = 0.01


def _chi_square_check(rng: np.random.Generator) -> dict:
    """Sampler exactness on an enumerable model (L = 4, q = 3, 81 states)."""
    pm = PottsModel.random(L=4, q=3, seed=rng, beta=2.0)
    p = pm.boltzmann_probabilities()
    n = 40_000
    seqs, diag = pm.sample(n, rng=rng, n_chains=1000, return_diagnostics=True)
    counts = np.bincount(np.ravel_multi_index(seqs.T, (3,) * 4), minlength=81)
    expected = n * p
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    chi2, pval = stats.chisquare(obs, exp)
    return {"chi2": float(chi2), "dof": int(obs.size - 1), "p_value": float(pval), "n": n,
            "tau_int": diag.tau_int, "sweeps_between": diag.sweeps_between}


def sampler_checks(section: Section, *, st, pm, tune, diag, test, hamming: float,
                    gens: list, t_tune: float) -> dict:
    """``potts.sampler.mixing``, ``.target_hamming`` and ``.chi_square``; returns the chi-square."""
    beta = pm.beta
    section.checks.append(Check(
        name="potts.sampler.mixing",
        passed=bool(diag.window_found and diag.equilibrated),
        value={"tau_int": diag.tau_int, "sweeps_between": diag.sweeps_between,
               "burn_in": diag.burn_in, "beta": beta, "mean_hamming": hamming,
               "method": diag.method, "rungs": int(diag.ladder.size),
               "min_swap_acceptance": (float(diag.swap_acceptance.min())
                                       if diag.swap_acceptance.size else None),
               "tuned_hamming": None if tune is None else tune.hamming,
               "tuned_hamming_se": None if tune is None else tune.hamming_se,
               "seconds_tune": t_tune},
        threshold="Sokal window found; energy and Hamming distance of both halves within 4 s.e.",
        detail=f"{diag.method} autocorrelation at beta = {beta:.4g} (mean Hamming {hamming:.3f}, "
               f"target {st.target_hamming}, {diag.ladder.size} rung(s)); samples saved every "
               f"{diag.sweeps_between} sweeps",
    ))
    h_se = _hamming_se(pm, test)
    section.checks.append(Check(
        name="potts.sampler.target_hamming",
        passed=bool(abs(hamming - st.target_hamming) <= HAMMING_TOL),
        value={"mean_hamming": hamming, "stderr": h_se, "target": st.target_hamming,
               "tol": HAMMING_TOL},
        threshold=f"|mean Hamming distance of the test set - target| <= {HAMMING_TOL}",
        detail=f"test set ({st.n_test} sequences): mean Hamming distance {hamming:.4f} +- "
               f"{h_se:.4f} (jackknife over 20 blocks) against the target {st.target_hamming}",
    ))
    chi = _chi_square_check(gens[4])
    section.checks.append(Check(
        name="potts.sampler.chi_square",
        passed=chi["p_value"] > 0.01,
        value=chi["p_value"],
        threshold="p > 0.01",
        detail=f"Gibbs frequencies of all 81 states of an L=4, q=3 model vs exact Boltzmann "
               f"probabilities, n = {chi['n']}: chi2 = {chi['chi2']:.1f} on {chi['dof']} dof",
    ))
    return chi


def equivalence_check(section: Section, pm, train, H: float, n_train: int) -> tuple[float, float]:
    """``potts.pseudolikelihood_equivalence``: A = beta J, V = U is the Potts model's conditionals."""
    beta = pm.beta
    fa_true = FactoredAttention(attention=beta * pm.couplings, value=pm.colours)
    d_loss = abs(fa_true.mlm_loss(train) - pm.neg_pseudo_loglikelihood(train))
    d_cond = float(np.max(np.abs(fa_true.conditionals(train) - pm.conditionals(train))))
    section.checks.append(Check(
        name="potts.pseudolikelihood_equivalence",
        passed=d_loss <= 1e-12 * abs(H) and d_cond <= 1e-12,
        value={"loss_difference": d_loss, "max_conditional_difference": d_cond},
        threshold="<= 1e-12 (relative for the loss)",
        detail="A = beta J, V = U: MLM loss vs negative log pseudo-likelihood and per-site "
               f"predictions vs exact conditionals on {n_train} sequences",
    ))
    return d_loss, d_cond


def _hamming_se(pm: PottsModel, seqs: np.ndarray, blocks: int = 20) -> float:
    """Jackknife standard error of ``pm.mean_hamming(seqs)`` over ``blocks`` blocks of the
    (shuffled) sequences."""
    parts = np.array_split(np.arange(len(seqs)), blocks)
    est = np.array([pm.mean_hamming(np.delete(seqs, p, axis=0)) for p in parts])
    return float(math.sqrt((blocks - 1) / blocks * np.sum((est - est.mean()) ** 2)))
