"""The sympy-derived equations equal the closed forms of docs/theory.md, s. 3 (typed here, independently)."""

import numpy as np
import sympy as sp

import replica_mlm as rm
from replica_mlm.theory.symbolic import potentials as P
from replica_mlm.theory.symbolic.compiled import compiled


def test_hat_equations_match_theory():
    eqs = P.derive()
    E = P.rho + P.noise - 2 * P.m + P.q
    assert sp.simplify(eqs.hat[P.V_hat] - P.alpha / (1 + P.V)) == 0
    assert sp.simplify(eqs.hat[P.m_hat] - P.alpha / (1 + P.V)) == 0
    assert sp.simplify(eqs.hat[P.q_hat] - P.alpha * E / (1 + P.V) ** 2) == 0


def test_conjugate_summands_match_theory():
    # docs/theory.md, s. 3: V = (1/p) sum w/(lam + Vh w); m = (mh/p) sum t w^2/(lam + Vh w);
    # q = (1/p) sum (mh^2 t w^3 + qh w^2)/(lam + Vh w)^2, with b = 1/p and c = t/p per mode
    eqs = P.derive()
    w, b, c, lam, Vh, qh, mh = P.omega, P.b, P.c, P.lam, P.V_hat, P.q_hat, P.m_hat
    assert sp.simplify(eqs.mode[P.V] - b * w / (lam + Vh * w)) == 0
    assert sp.simplify(eqs.mode[P.m] - mh * c * w**2 / (lam + Vh * w)) == 0
    assert sp.simplify(eqs.mode[P.q] - (mh**2 * c * w**3 + qh * b * w**2) / (lam + Vh * w) ** 2) == 0


def test_reduced_scalar_equation_matches_theory():
    # docs/theory.md, s. 4: kappa - lam/alpha = (kappa/(alpha p)) sum w/(w + kappa), i.e. with b = 1/p
    # kappa alpha - lam - kappa sum b w/(w + kappa) = 0; per mode S_1c = b kappa/(kappa + w)
    red = P.reduce()
    k, w, b = P.kappa, P.omega, P.b
    assert sp.simplify(red.sums[P.S1C] - b * k / (k + w)) == 0
    theory = k * P.alpha - P.lam - k * (1 - P.S1C)  # sum b w/(w+k) = 1 - S_1c
    assert sp.simplify(red.root - theory) == 0


def test_reduced_eg_matches_minimum_norm_formula():
    # docs/theory.md, section 5 (lam -> 0, alpha < 1):
    # eg = (sigma^2 + kappa^2 sum w theta^2/(w+kappa)^2) / (1 - (1/(alpha p)) sum w^2/(w+kappa)^2)
    red = P.reduce()
    k, w, c, b = P.kappa, P.omega, P.c, P.b
    assert sp.simplify(red.sums[P.R_SUM] - k**2 * c * w / (w + k) ** 2) == 0
    assert sp.simplify(red.sums[P.S2C] - (b - b * w**2 / (w + k) ** 2)) == 0
    S2 = 1 - P.S2C  # = sum b w^2/(w+k)^2
    theory = (P.noise + P.R_SUM) / (1 - S2 / P.alpha)
    assert sp.simplify(red.values["eg"].subs(P.delta, 1 - P.alpha) - theory) == 0


def test_equations_public_api():
    eqs = rm.equations()
    assert list(eqs) == ["V_hat", "q_hat", "m_hat", "V", "q", "m", "eg", "train_loss"]
    assert all(isinstance(e, sp.Eq) for e in eqs.values())
    tex = rm.equations(latex=True)
    assert tex.startswith("\\begin{aligned}") and tex.rstrip().endswith("\\end{aligned}")
    assert "\\sum_{k=1}^{p}" in tex and "\\hat{V}" in tex
    # the displayed finite-p form evaluates like the compiled per-mode sum
    p, k = sp.Symbol("p", positive=True, integer=True), sp.Symbol("k", integer=True, positive=True)
    rng = np.random.default_rng(0)
    omega, t = rng.uniform(0.2, 2.0, 5), rng.uniform(0, 3, 5)
    vals = {sp.Symbol("lambda", nonnegative=True): 0.3, P.V_hat: 0.7, P.m_hat: 0.7, P.q_hat: 0.2}
    rhs = eqs["q"].rhs.subs(vals).subs(p, 5)
    rhs = rhs.replace(sp.Sum, lambda f, lim: sum(
        f.subs({sp.IndexedBase(r"\omega")[k]: omega[i], sp.IndexedBase("t")[k]: t[i]}) for i in range(5)))
    direct = np.sum(compiled().mode["q"](omega, 1 / 5, t / 5, 0.3, 0.7, 0.2, 0.7))
    assert abs(float(rhs) - direct) < 1e-12 * abs(direct)
