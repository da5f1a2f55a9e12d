"""d eg / d alpha along the reduced saddle point (:func:`alpha_derivative`): the slope of a
square-loss learning curve, given the kappa that :func:`.root.solve_reduced` solved; the phase
diagram's interpolation peaks are where it changes sign (:mod:`.phase`)."""

from __future__ import annotations

import numpy as np

from replica_mlm.tasks.spectrum import Spectrum
from replica_mlm.theory.solvers import root
from replica_mlm.theory.symbolic.compiled import compiled


def alpha_derivative(spec: Spectrum, alpha: np.ndarray, lam, kappa: np.ndarray,
                     v_hat: np.ndarray | None = None) -> np.ndarray:
    """d eg / d alpha along the saddle point at each alpha, given the solved ``kappa`` and ``V_hat``.

    ``v_hat`` (the ``V_hat`` of :func:`.root.solve_reduced`) is needed where kappa overflows; without
    it, ``lam / kappa`` (lam > 0) or ``S_1c - delta`` (lam = 0) is used.

    Implicit differentiation of G(kappa; alpha) = 0 (``potentials.reduce``), in the stable form
    ``reduce().deg_dalpha_stable`` (finite for kappa in [0, inf]). Where kappa stays 0 (lam = 0,
    alpha > 1) only the explicit derivative remains; at the interpolation peak (lam = 0,
    alpha = 1) the derivative does not exist and NaN is returned there.
    """
    fns = compiled()
    alpha, lam, kappa = (np.array(x, dtype=float) for x in np.broadcast_arrays(alpha, lam, kappa))
    names = ("R", "S_1c", "S_2", "S_12", "kR_prime", "kS_2c_prime", "S_F")
    sums = root.spectral_sums(spec, names, kappa.ravel())
    sums = {k: v.reshape(alpha.shape) for k, v in sums.items()}
    if v_hat is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            v_hat = np.where(lam > 0, lam / kappa,
                             np.maximum(fns.v_hat_of_kappa(sums["S_1c"], 1.0 - alpha), 0.0))
    v_hat = np.broadcast_to(np.asarray(v_hat, dtype=float), alpha.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # +-inf: true overflow
        d = v_hat + sums["S_12"]
        ratio = alpha / d
        # the bracket B in the form whose terms are smaller (potentials._stable_forms)
        far_terms = sums["S_2"] + ratio * sums["kS_2c_prime"]
        peak_terms = d + ratio * (sums["S_F"] + np.abs(1.0 - alpha))
        b_args = (alpha, 1.0 - alpha, v_hat, sums["S_2"], sums["S_12"], sums["kS_2c_prime"], sums["S_F"])
        bracket = np.where(far_terms <= peak_terms, fns.deg_b["far"](*b_args),
                           fns.deg_b["peak"](*b_args))
        out = fns.deg_dalpha_stable(alpha, spec.noise, v_hat, sums["R"], sums["S_12"],
                                    sums["kR_prime"], bracket)
    return np.where((lam == 0.0) & (alpha == 1.0), np.nan, out)
