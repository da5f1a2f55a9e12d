"""The printed equations of the local theory of a two-colour site (``rm.equations(theory="local")``).

docs/discrete.md, sections "Sparse couplings" and "Sampled cluster means". The clusters ``c`` (the
label ``y_c`` and the neighbourhood's configuration) have weights ``pi_c``, and the student's field
on a sample of cluster ``c`` is ``w = M_c + sqrt(Q) xi``. The channel side sums the loss's proximal
``f`` over the clusters (:class:`.local_clusters.LocalClusters`); the prior side is derived here by
sympy from one per-mode potential of the ridge in the cluster means
(:class:`.prior.RidgeMeansPrior`): with ``b_k = sum_c M_hat_c a_kc`` (``a_kc`` the modes of the
means) and ``s = sum_c M_hat_c^2 / n_c`` (the sampled means' noise; zero for exact means),

    phi_k = (b_k^2 - omega_k s + omega_k Q_hat / p) / (2 (lambda + omega_k V_hat)),

``V = 2 sum_k d phi_k / d Q_hat``, ``Q = -2 sum_k d phi_k / d V_hat`` and
``M_c = sum_k d phi_k / d M_hat_c`` (through ``b_k`` and ``s``).
"""

from __future__ import annotations

import sympy as sp

from replica_mlm.theory.symbolic import potentials as P

#: the symbols of the printed equations (indices, per-mode and per-cluster quantities)
k, c = sp.symbols("k c", integer=True, positive=True)
p, C = sp.symbols("p C", integer=True, positive=True)
omega = sp.IndexedBase(r"\omega")
a = sp.IndexedBase("a")
n = sp.IndexedBase("n")
t = sp.IndexedBase("t")
pi = sp.IndexedBase(r"\pi")
labels = sp.IndexedBase("y")
M = sp.IndexedBase("M")
M_hat = sp.IndexedBase(r"\hat{M}")
V, Q, V_hat, Q_hat = sp.symbols(r"V Q \hat{V} \hat{Q}", positive=True)
b, s = sp.symbols("b_k s", real=True)


def prior_potential() -> sp.Expr:
    """``phi_k`` of the module docstring, in ``b_k``, ``s``, the hats and mode ``k``."""
    w = omega[k]
    return (b**2 - w * s + w * Q_hat / p) / (2 * (P.lam + w * V_hat))


def prior_side() -> dict[str, sp.Expr]:
    """The summands over the modes ``k`` of ``V``, ``Q``, ``M_c`` and the estimation error, derived
    from :func:`prior_potential` (``b_k``, ``s`` as symbols: :func:`local_equations` writes them
    out)."""
    phi = prior_potential()
    g = 1 / (P.lam + omega[k] * V_hat)
    return {
        "V": sp.simplify(2 * sp.diff(phi, Q_hat)),
        "Q": sp.simplify(-2 * sp.diff(phi, V_hat)),
        # d phi / d M_hat_c = d phi / d b_k * a_kc + d phi / d s * 2 M_hat_c / n_c
        "M": sp.simplify(sp.diff(phi, b) * a[k, c] + sp.diff(phi, s) * 2 * M_hat[c] / n[c]),
        # the mean's bias against the teacher's mode t_k, and its variance less the means' noise
        "estimation_error": (g * b - t[k]) ** 2 + omega[k] * g**2 * (Q_hat / p - s),
    }


def local_equations(loss_side: dict[str, sp.Eq], f, f_w, *, y, w) -> dict[str, sp.Eq]:
    """The local theory's equations: ``loss_side`` (the loss, its proximal point, ``f = f(y, w, V)``
    and ``d_w f``, as printed for every loss; ``y``, ``w`` its label and field symbols) with the
    clusters' fields, hats and the prior side."""
    xi = sp.Symbol("xi", real=True)
    dxi = sp.exp(-(xi**2) / 2) / sp.sqrt(2 * sp.pi)
    at = {y: labels[c]}

    def average(expr):
        return sp.Integral(dxi * expr.subs(at), (xi, -sp.oo, sp.oo))

    out = dict(loss_side)
    out["fields"] = sp.Eq(w, M[c] + sp.sqrt(Q) * xi)
    out["M_hat"] = sp.Eq(M_hat[c], P.alpha * pi[c] * average(f))
    out["Q_hat"] = sp.Eq(Q_hat, P.alpha * sp.Sum(pi[c] * average(f**2), (c, 1, C)))
    out["V_hat"] = sp.Eq(V_hat, -P.alpha * sp.Sum(pi[c] * average(f_w), (c, 1, C)))
    c2 = sp.Symbol("c'", integer=True, positive=True)
    out["b_k"] = sp.Eq(b, sp.Sum(M_hat[c2] * a[k, c2], (c2, 1, C)))
    out["s"] = sp.Eq(s, sp.Sum(M_hat[c2] ** 2 / n[c2], (c2, 1, C)))
    summands = prior_side()
    out["V"] = sp.Eq(V, sp.Sum(summands["V"], (k, 1, p)))
    out["Q"] = sp.Eq(Q, sp.Sum(summands["Q"], (k, 1, p)))
    out["M"] = sp.Eq(M[c], sp.Sum(summands["M"], (k, 1, p)))
    out["estimation_error"] = sp.Eq(sp.Symbol(r"E|\hat{w} - w^*|^2"),
                                    sp.Sum(summands["estimation_error"], (k, 1, p)))
    return out
