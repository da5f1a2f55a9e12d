"""The equations of one-pass SGD, derived by sympy from the loss's own expression
(docs/dynamics.md, sections "The exact recursion", "The limit" and "Any convex loss").

The drift of the order parameters needs three Gaussian expectations of the loss's derivative
``l'(y, lambda)`` (the sympy derivative the general engine uses): ``E[l' lambda]``,
``E[l' nu]`` and ``E[l'^2]`` over the fields ``lambda = sqrt(Q) g1``,
``nu = (R / sqrt Q) g1 + sqrt(rho - R^2 / Q) g2`` and, for the gaussian channel,
``y = nu + sigma g3``. Where ``l'`` is a polynomial in (y, z) (the square loss) the moments of
the standard normals ``g`` evaluate them in closed form; otherwise they are printed as integrals.
"""

from __future__ import annotations

import sympy as sp

from replica_mlm.theory.sides import channels, losses
from replica_mlm.theory.symbolic import potentials as P

Q, R, lam_, c, s_k, sigma2 = sp.symbols(r"Q R \lambda c_B s_k \sigma^2", positive=True)
alpha_ = sp.Symbol(r"\alpha", positive=True)


def _gaussian_moment(power: int) -> sp.Expr:
    """E g^power for a standard normal g: (power - 1)!! for even powers, 0 for odd."""
    return sp.Integer(0) if power % 2 else sp.factorial2(power - 1)


def _expect(expr: sp.Expr, g: tuple[sp.Symbol, ...]) -> sp.Expr:
    """E[expr] over independent standard normals ``g`` for a polynomial ``expr`` in them."""
    poly = sp.Poly(sp.expand(expr), *g)
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        term = coeff
        for k in powers:
            term *= _gaussian_moment(k)
        total += term
    return sp.expand(total)


def drive(loss, channel) -> dict[str, sp.Expr]:
    """``A``, ``B`` and ``E[l'^2]`` as sympy expressions of (Q, R, rho, sigma^2), or as
    unevaluated integrals where ``l'`` is not a polynomial or the channel not gaussian."""
    loss, channel = losses.resolve(loss), channels.resolve(channel)
    y, z = losses.y, losses.z
    d1 = loss.derivatives[0]
    g = sp.symbols("g1 g2 g3", real=True)
    lam_field = sp.sqrt(Q) * g[0]
    nu = R / sp.sqrt(Q) * g[0] + sp.sqrt(P.rho - R**2 / Q) * g[1]
    if channel.name == "gaussian" and d1.is_polynomial(y, z):
        grad = d1.subs({y: nu + sp.sqrt(sigma2) * g[2], z: lam_field})
        e_lam, e_nu = _expect(grad * lam_field, g), _expect(grad * nu, g)
        e_sq = _expect(grad**2, g)
    else:
        expect = sp.Function(r"\mathbb{E}")  # over the student's field z and the teacher's nu
        e_lam, e_nu, e_sq = expect(d1 * z), expect(d1 * sp.Symbol("nu", real=True)), expect(d1**2)
        det = Q * P.rho - R**2  # printed as they stand: simplify gains nothing on unevaluated integrals
        return {"A": (P.rho * e_lam - R * e_nu) / det, "B": (Q * e_nu - R * e_lam) / det, "E[l'^2]": e_sq}
    det = Q * P.rho - R**2
    return {"A": sp.cancel((P.rho * e_lam - R * e_nu) / det),
            "B": sp.cancel((Q * e_nu - R * e_lam) / det), "E[l'^2]": sp.expand(e_sq)}


def dynamics_equations(loss=None, channel=None) -> dict[str, sp.Eq]:
    """The ODEs of one-pass SGD per eigenmode (and, for the square loss with the gaussian channel,
    the exact finite-p recursion), keyed by name."""
    loss_obj = losses.resolve("square" if loss is None else loss)
    channel_obj = channels.resolve(channel)
    d = drive(loss_obj, channel_obj)
    r_k, n_k = (sp.Function(name)(alpha_) for name in ("r_k", "N_k"))
    t_k, b_k = sp.Symbol("t_k", positive=True), sp.Symbol("b_k", positive=True)
    y, z = losses.y, losses.z
    out = {
        "loss'": sp.Eq(sp.Derivative(sp.Function(r"\ell")(y, z), z), loss_obj.derivatives[0]),
        "A": sp.Eq(sp.Symbol("A"), d["A"]),
        "B": sp.Eq(sp.Symbol("B"), d["B"]),
        "E[l'^2]": sp.Eq(sp.Symbol(r"\mathbb{E}[\ell'^2]"), d["E[l'^2]"]),
        "dr_k": sp.Eq(sp.Derivative(r_k, alpha_), -c * ((d["A"] * s_k + lam_) * r_k + d["B"] * s_k)),
        "dN_k": sp.Eq(sp.Derivative(n_k, alpha_),
                      -2 * c * (d["A"] * s_k + lam_) * n_k + c**2 * s_k * d["E[l'^2]"]),
        "R": sp.Eq(R, sp.Sum(t_k * s_k * r_k, (sp.Symbol("k"), 1, sp.Symbol("K")))),
        "Q": sp.Eq(Q, sp.Sum(t_k * s_k * r_k**2 + b_k * s_k * n_k, (sp.Symbol("k"), 1, sp.Symbol("K")))),
    }
    if loss_obj.is_square and channel_obj.name == "gaussian":
        g, a, big_b = sp.symbols("g a B", positive=True)
        dk, rk, eg = sp.symbols("D_k r_k e_g")
        f = a - g * s_k
        step = ((f**2 + g**2 / big_b * s_k**2) * dk + g**2 / big_b * s_k * eg
                + g * lam_ * t_k * (g * lam_ - 2 * f * rk))
        out["exact D_k"] = sp.Eq(sp.Symbol("D_k'"), step)
        out["exact r_k"] = sp.Eq(sp.Symbol("r_k'"), f * rk - g * lam_)
    return out
