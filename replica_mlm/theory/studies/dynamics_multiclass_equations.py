"""The equations of one-pass SGD on a q-colour site, derived by sympy from the softmax
cross-entropy (docs/dynamics.md, section "A q-colour site").

The loss is written in the logits ``u = P h`` (``P`` the q x K basis, ``h = W^T x`` the student's
K fields) with the label one-hot ``e``: ``CE(e, u) = log sum_a exp(u_a) - e . u``. Its gradient in
``h`` is ``g = P^T dCE/du`` (sympy's derivative). The label of the teacher's field ``nu`` has the
law ``pi = softmax(P nu)``, and the two averages over it that the drift needs follow from the
one-hot moments ``E e_a = pi_a``, ``E e_a e_b = delta_ab pi_a`` (``g`` is affine in ``e``):
``E_y g`` and ``E_y g g^T``. The rest are the K x K order parameters ``Q = W^T Sigma W``,
``M = W^T Sigma W*``, ``rho = W*^T Sigma W*``, the regression ``[A; B] = C^-1 [E h g^T; E (nu - b*)
g^T]`` over the fields' joint Gaussian (covariance ``C``) and the ODEs per eigenmode of Sigma that
:mod:`..sides.sgd_multiclass` integrates.
"""

from __future__ import annotations

import sympy as sp

alpha_ = sp.Symbol(r"\alpha", positive=True)
c, lam_, s_k = sp.symbols(r"c_B \lambda s_k", positive=True)


def softmax_side(q: int) -> dict[str, object]:
    """The sympy pieces of the softmax cross-entropy with ``q`` colours: the basis ``P`` (q x K),
    the fields ``h`` and ``nu`` (K x 1), the one-hot label ``e``, the student's logits ``u`` and the
    label's law ``pi`` (q x 1 symbols), the loss, ``dCE/du``, the label averages ``E_y dCE/du`` and
    ``E_y dCE/du dCE/du^T`` (in ``u`` and ``pi``), and ``fields``: the substitution ``u = P h``,
    ``pi = softmax(P nu)`` that makes them functions of the fields."""
    K = q - 1
    P = sp.MatrixSymbol("P", q, K)
    h = sp.Matrix(sp.symbols(f"h_1:{q}", real=True))
    nu = sp.Matrix(sp.symbols(f"nu_1:{q}", real=True))
    e = sp.Matrix(sp.symbols(f"e_1:{q + 1}", real=True))
    u = sp.Matrix(sp.symbols(f"u_1:{q + 1}", real=True))
    pi = sp.Matrix(sp.symbols(f"pi_1:{q + 1}", positive=True))
    loss = sp.log(sum(sp.exp(ua) for ua in u)) - (e.T * u)[0, 0]
    d_u = sp.Matrix([sp.diff(loss, ua) for ua in u])  # dCE/du, q x 1
    teacher = P.as_explicit() * nu
    total = sum(sp.exp(t) for t in teacher)
    fields = {**{ua: (P.as_explicit() * h)[a, 0] for a, ua in enumerate(u)},
              **{pa: sp.exp(teacher[a, 0]) / total for a, pa in enumerate(pi)}}
    return {"P": P, "h": h, "nu": nu, "e": e, "u": u, "pi": pi, "loss": loss, "d_u": d_u,
            "mean": d_u.subs(dict(zip(e, pi, strict=True))),  # E_y dCE/du: affine in e
            "outer": (d_u * d_u.T).applyfunc(lambda x: _onehot_moment(x, e, pi)),
            "softmax": sp.Matrix([sp.exp(t) / total for t in teacher]), "fields": fields}


def _onehot_moment(expr: sp.Expr, e, pi) -> sp.Expr:
    """E[expr] over a one-hot ``e`` with P(e = e_a) = pi_a, for ``expr`` of degree <= 2 in ``e``:
    ``E e_a = pi_a``, ``E e_a e_b = delta_ab pi_a``."""
    poly = sp.Poly(expr, *e)
    total = sp.Integer(0)
    for powers, coeff in poly.terms():
        on = [a for a, k in enumerate(powers) if k]
        if not on:
            total += coeff
        elif len(on) == 1:  # e_a^k = e_a for a one-hot e
            total += coeff * pi[on[0]]
        # e_a e_b with a != b vanishes
    return total


def multiclass_dynamics_equations(q: int) -> dict[str, sp.Eq]:
    """The ODEs of one-pass SGD with the softmax cross-entropy on a ``q``-colour site (K = q - 1),
    keyed by name: the loss and its gradient (sympy), the label averages, the fields' covariance,
    the regression coefficients ``A``, ``B``, ``G``, and the per-mode ODEs of ``m_k`` and ``N_k``."""
    side = softmax_side(q)
    K = q - 1
    P, h, u = side["P"], side["h"], side["u"]
    Q, M, rho = (sp.MatrixSymbol(name, K, K) for name in ("Q", "M", r"\rho"))
    A, B, G, F_k, N_k = (sp.MatrixSymbol(name, K, K) for name in ("A", "B", "G", "F_k", "N_k"))
    m_k, theta_k = sp.MatrixSymbol("m_k", 1, K), sp.MatrixSymbol(r"\theta_k", 1, K)
    e_hg, e_nug, e_gg = (sp.MatrixSymbol(name, K, K) for name in
                         (r"\mathbb{E}[h g^T]", r"\mathbb{E}[(\nu - b^*) g^T]", r"\mathbb{E}[g g^T]"))
    C = sp.BlockMatrix([[Q, M], [M.T, rho]])
    ell = sp.Function(r"\ell")(sp.Symbol("e"), sp.Symbol("u"))
    eye = sp.Identity(K)
    k, d = sp.Symbol("k", integer=True, positive=True), sp.Symbol("d", integer=True, positive=True)
    p = sp.Symbol("p", positive=True)
    eq = lambda lhs, rhs: sp.Eq(lhs, rhs, evaluate=False)  # noqa: E731
    return {
        "logits": eq(u, P * h),
        "pi": eq(side["pi"], side["softmax"]),
        "loss": eq(ell, side["loss"]),
        "g": eq(sp.MatrixSymbol("g", K, 1), P.T * side["d_u"]),
        "E_y g": eq(sp.MatrixSymbol(r"\mathbb{E}_y g", K, 1), P.T * side["mean"]),
        "E_y g g^T": eq(sp.MatrixSymbol(r"\mathbb{E}_y g g^T", K, K), P.T * side["outer"] * P),
        "C": eq(sp.MatrixSymbol(r"\operatorname{Cov}(h, \nu)", 2 * K, 2 * K), C),
        "[A; B]": eq(sp.BlockMatrix([[A], [B]]), sp.Inverse(C) * sp.BlockMatrix([[e_hg], [e_nug]])),
        "G": eq(G, e_gg),
        "F_k": eq(F_k, s_k * A + lam_ * eye),
        "dm_k": eq(sp.Derivative(sp.Function("m_k")(alpha_), alpha_),
                      -c * (s_k * (m_k * A + theta_k * B) + lam_ * m_k)),
        "dN_k": eq(sp.Derivative(sp.Function("N_k")(alpha_), alpha_),
                      -c * (F_k.T * N_k + N_k * F_k) + c**2 * s_k * G),
        "M": eq(M, sp.Sum(s_k * m_k.T * theta_k, (k, 1, d))),
        "Q": eq(Q, sp.Sum(s_k * m_k.T * m_k + s_k * N_k / p, (k, 1, d))),
    }
