"""The derived saddle-point equations, for reading: sympy objects or LaTeX."""

from __future__ import annotations

import sympy as sp

from replica_mlm import _checks
from replica_mlm.theory import potentials as P


def equations(*, latex: bool = False) -> dict[str, sp.Eq] | str:
    """The replica-symmetric saddle-point equations, as derived by sympy (THEORY.md section 4).

    The per-mode summands of :func:`.potentials.derive` are shown for a finite instance:
    bulk weight ``1/p`` and teacher weight ``t_k / p`` (``t_k = p theta_k^2``) per mode
    ``omega_k`` of Sigma, summed over ``k = 1..p``.

    Parameters
    ----------
    latex : bool
        Return one LaTeX ``aligned`` block instead of sympy objects.

    Returns
    -------
    dict of sympy.Eq, or str
        Keys ``"V_hat", "q_hat", "m_hat", "V", "q", "m", "eg", "train_loss"``.
    """
    latex = _checks.flag(latex, "latex")
    eqs = P.derive()
    p = sp.Symbol("p", positive=True, integer=True)
    k = sp.Symbol("k", integer=True, positive=True)
    omega_k = sp.IndexedBase(r"\omega")[k]
    t_k = sp.IndexedBase("t")[k]
    finite = {P.b: 1 / p, P.c: t_k / p, P.omega: omega_k}

    out: dict[str, sp.Eq] = {}
    for sym, name in ((P.V_hat, "V_hat"), (P.q_hat, "q_hat"), (P.m_hat, "m_hat")):
        out[name] = sp.Eq(sym, eqs.hat[sym])
    for sym, name in ((P.V, "V"), (P.q, "q"), (P.m, "m")):
        summand = sp.factor(eqs.mode[sym].subs(finite) * p)
        out[name] = sp.Eq(sym, sp.Mul(1 / p, sp.Sum(summand, (k, 1, p)), evaluate=False))
    out["eg"] = sp.Eq(P.eg, P.generalisation_error())
    out["train_loss"] = sp.Eq(sp.Symbol("e_t"), P.training_loss())
    if not latex:
        return out
    rows = [rf"{sp.latex(e.lhs)} &= {sp.latex(e.rhs)}" for e in out.values()]
    return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"
