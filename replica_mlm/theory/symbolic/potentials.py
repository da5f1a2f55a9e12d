"""Replica-symmetric potentials of ridge MLM and the saddle-point equations they imply.

This module is the one place where the maths of docs/theory.md, sections 2-4, lives. Everything the
numerical solvers use is obtained here by sympy from two potentials:

* the entropic potential of the l2-penalised weights with Gaussian covariates, written per
  spectral mode ``k`` of the covariance Sigma of the unmasked sites,

  .. math:: \\psi_w^{(k)} = \\frac{\\hat m^2 c_k \\omega_k^2 + \\hat q\\, b_k \\omega_k}
            {2(\\lambda + \\hat V \\omega_k)},\\qquad \\Psi_w = \\sum_k \\psi_w^{(k)},

  where ``omega_k`` is an eigenvalue of Sigma, ``b_k`` the weight of the mode in the bulk
  measure (``1/p`` for a finite instance; the weights sum to one) and ``c_k = theta_k^2`` the
  teacher weight (``theta_k = u_k . w*``, so ``rho = sum_k c_k omega_k``). With ``b_k = 1/p``
  and ``c_k = t_k / p`` this is the ``Psi_w`` of docs/theory.md, section 2;

* the energetic potential of the square loss with intrinsic label noise ``sigma^2``,

  .. math:: \\Psi_y = -\\frac{\\alpha(\\rho + \\sigma^2 - 2m + q)}{2(1 + V)};

and the coupling ``(V_hat q - q_hat V)/2 - m m_hat`` of the free energy

.. math:: \\Phi = \\mathrm{extr}\\; \\tfrac12(\\hat V q - \\hat q V) - m\\hat m + \\Psi_w + \\Psi_y.

:func:`derive` differentiates ``Phi`` with respect to the six order parameters
(:attr:`SaddlePointEquations.hat` and :attr:`SaddlePointEquations.mode`), and :func:`reduce`
eliminates the explicit variables to a single scalar equation for ``kappa = lam / V_hat``
(docs/theory.md, section 4), with every remaining quantity a rational function of a
few spectral sums. :func:`compiled` turns both into numpy (or mpmath) functions, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sympy as sp

# --- symbols -----------------------------------------------------------------------------
V, q, m = sp.symbols("V q m", real=True)
V_hat, q_hat, m_hat = sp.symbols(r"\hat{V} \hat{q} \hat{m}", real=True)
alpha = sp.Symbol("alpha", positive=True)
lam = sp.Symbol("lambda", nonnegative=True)
rho = sp.Symbol("rho", nonnegative=True)
noise = sp.Symbol("sigma^2", nonnegative=True)
kappa = sp.Symbol("kappa", nonnegative=True)
#: 1 - alpha, passed separately: it is exact near alpha = 1, where alpha - 1 + (small sum) would
#: lose the small sum to rounding if evaluated as (alpha + small) - 1
delta = sp.Symbol("delta", real=True)
#: one spectral mode: eigenvalue of Sigma, bulk weight, teacher weight
omega, b, c = sp.symbols("omega b c", positive=True)
#: the generalisation error, used as an unknown while eliminating q
eg = sp.Symbol("e_g", positive=True)

ORDER = (V, q, m)
HATS = (V_hat, q_hat, m_hat)
#: which conjugate each stationarity condition is solved for: d Phi / d hat -> variable
CONJUGATE = {V_hat: q, q_hat: V, m_hat: m}


def coupling() -> sp.Expr:
    """The bilinear term ``(V_hat q - q_hat V)/2 - m m_hat`` of the free energy."""
    return (V_hat * q - q_hat * V) / 2 - m * m_hat


def entropic_mode() -> sp.Expr:
    """Per-mode entropic potential psi_w^(k) (l2 penalty, Gaussian covariates)."""
    return (m_hat**2 * c * omega**2 + q_hat * b * omega) / (2 * (lam + V_hat * omega))


def energetic() -> sp.Expr:
    """Energetic potential Psi_y (square loss, intrinsic label noise sigma^2)."""
    return -alpha * (rho + noise - 2 * m + q) / (2 * (1 + V))


def generalisation_error() -> sp.Expr:
    """eg = E (y - w_hat . x)^2 = rho + sigma^2 - 2 m + q (docs/theory.md, section 1, no factor 1/2)."""
    return rho + noise - 2 * m + q


def training_loss() -> sp.Expr:
    """et = eg / (1 + V)^2: at the saddle point the training residual is (y - w.x) / (1 + V)."""
    return generalisation_error() / (1 + V) ** 2


def estimation_mode() -> sp.Expr:
    """Per-mode summand of the Euclidean estimation error E |w_hat - w*|^2.

    In the eigenbasis of Sigma the estimator is Gaussian mode by mode,
    ``w_hat_k = (m_hat omega_k theta_k + sqrt(q_hat b_k omega_k) z_k) / (lam + V_hat omega_k)``
    (``z_k ~ N(0, 1)``), so the k-th term of ``sum_k (w_hat_k - theta_k)^2`` has mean
    ``c_k (m_hat omega_k / (lam + V_hat omega_k) - 1)^2 + b_k q_hat omega_k / (lam + V_hat omega_k)^2``.
    Weighting each term by ``omega_k`` gives the summand of ``rho - 2 m + q`` (checked in
    :func:`estimation`).
    """
    return (c * (m_hat * omega / (lam + V_hat * omega) - 1) ** 2
            + b * q_hat * omega / (lam + V_hat * omega) ** 2)


@cache
def estimation() -> tuple[sp.Expr, sp.Expr]:
    """The estimation-error summand in the hats, and in the reduced variables of :func:`reduce`.

    The second form substitutes ``lam = kappa V_hat``, ``m_hat = V_hat`` and
    ``q_hat = V_hat^2 e_g / alpha`` (square loss, gaussian channel): it depends on
    ``(omega, b, c, kappa, e_g, alpha)`` only and stays finite at lam = 0.
    """
    eqs = derive()
    est = estimation_mode()
    teacher_error = c * omega - 2 * eqs.mode[m] + eqs.mode[q]
    if sp.simplify(omega * est - teacher_error) != 0:
        raise AssertionError("omega-weighted estimation error differs from rho - 2m + q")
    reduced = sp.factor(sp.simplify(est.subs({lam: kappa * V_hat, m_hat: V_hat,
                                              q_hat: V_hat**2 * eg / alpha})))
    if reduced.has(V_hat):
        raise AssertionError(f"reduced estimation error still depends on V_hat: {reduced}")
    return est, reduced


@dataclass(frozen=True)
class SaddlePointEquations:
    """The stationarity conditions of Phi.

    Attributes
    ----------
    hat : dict
        ``{V_hat: ..., q_hat: ..., m_hat: ...}`` as functions of (alpha, V, q, m, rho, sigma^2),
        from ``d Phi / d (V, q, m) = 0``.
    mode : dict
        ``{V: ..., q: ..., m: ...}``: per-mode summands; the conjugate order parameter is the
        sum over modes, from ``d Phi / d (V_hat, q_hat, m_hat) = 0``.
    """

    hat: dict
    mode: dict


@cache
def derive() -> SaddlePointEquations:
    """Differentiate Phi and solve each stationarity condition for its variable.

    ``d Phi / d x = 0`` for ``x`` in (V, q, m) is solved for the matching hat variable
    (Psi_w does not depend on V, q, m). ``d Phi / d x_hat = 0`` involves the sum over modes of
    ``d psi_w^(k) / d x_hat``: we solve it with that sum standing as a placeholder symbol and
    check that the solution is proportional to it, so the per-mode summand is well defined.
    """
    phi_y = coupling() + energetic()
    hat = {}
    for x, x_hat in zip(ORDER, (q_hat, V_hat, m_hat), strict=True):
        # d/dV fixes q_hat, d/dq fixes V_hat, d/dm fixes m_hat
        (sol,) = sp.solve(sp.diff(phi_y, x), x_hat)
        hat[x_hat] = sp.factor(sol)

    mode = {}
    placeholder = sp.Dummy("S")
    psi = entropic_mode()
    for x_hat, x in CONJUGATE.items():
        (sol,) = sp.solve(sp.diff(coupling(), x_hat) + placeholder, x)
        factor = sp.simplify(sol / placeholder)
        if factor.has(placeholder) or not factor.is_number:
            raise AssertionError(f"stationarity in {x_hat} is not linear in the mode sum: {sol}")
        mode[x] = sp.factor(factor * sp.diff(psi, x_hat))
    return SaddlePointEquations(hat=hat, mode=mode)


# --- reduction to one scalar equation --------------------------------------------------

#: names of the spectral sums the reduced system needs; each is sum_k of a per-mode summand
SUMS = sp.symbols("S_1 S_1c S_2 S_2c Q_T M R P_rho S_12")
S1, S1C, S2, S2C, QT_SUM, M_SUM, R_SUM, RHO_SUM, S12 = SUMS
S1C_PRIME = sp.Symbol("S_1c'")
R_PRIME, S2C_PRIME = sp.symbols("R' S_2c'")
#: kappa times R' and S_2c' (finite where kappa -> infinity, used by the stable d eg / d alpha)
KR_PRIME, KS2C_PRIME = sp.symbols("kR' kS_2c'")
#: S_F = sum b x^2 (1 + 2y) = S_1c + S_12 - kS_2c' (for d eg / d alpha at the peak)
SF = sp.Symbol("S_F")
#: per-mode ratios x = kappa / (kappa + omega) and y = omega / (kappa + omega) (x + y = 1, each
#: computed directly, so neither loses digits when the other is close to 1)
X, Y = sp.symbols("x y", nonnegative=True)
#: the denominator alpha - S_2 = S_2c - delta of eg written as a sum of positive terms,
#: V_hat + S_12 (V_hat = S_1c - delta, S_12 = S_2c - S_1c = sum b kappa omega / (kappa + omega)^2)
D = sp.Symbol("D", positive=True)


@dataclass(frozen=True)
class ReducedSystem:
    """The saddle point as one scalar equation in ``kappa = lam / V_hat``.

    Attributes
    ----------
    sums : dict
        ``{symbol: per-mode summand in (omega, b, c, kappa)}`` for the spectral sums
        ``S_1 = sum b omega/(kappa+omega)`` (``V V_hat = S_1``), ``S_2`` (the q_hat-coefficient
        of q times V_hat^2), ``Q_T`` (the part of q without q_hat), ``M`` (= m), ``R`` (the
        teacher part of eg: rho - 2m + q at q_hat = 0) and ``P_rho`` (= rho), and the
        complements ``S_1c = 1 - S_1``, ``S_2c = 1 - S_2`` (bulk weights sum to one). Every
        summand is positive, and each quantity is computed from the sums in which it does
        not cancel: complements where kappa -> 0 (near the interpolation peak), direct sums
        where kappa -> infinity (strong ridge).
    root : sympy.Expr
        ``F(kappa)`` whose root in ``kappa >= 0`` is the saddle point:
        ``kappa * V_hat(kappa) - lam`` with ``V_hat(kappa) = alpha - 1 + S_1c``.
    v_hat_of_kappa : sympy.Expr
        ``V_hat`` from the V- and V_hat-equations, ``S_1c - delta`` (used at lam = 0).
    v_hat_from_root : sympy.Expr
        ``V_hat`` from the root equation, ``lam / kappa`` (used for lam > 0, where it is
        exact given kappa while ``alpha - 1 + S_1c`` cancels). ``m_hat = V_hat`` (step 1).
    values : dict
        Closed forms of eg, train loss, m, q, V and q_hat in terms of the sums, alpha,
        delta = 1 - alpha, kappa, sigma^2 and V_hat.

    Every ``alpha - 1`` in ``newton``, ``v_hat_of_kappa`` and ``values`` is written with the
    symbol ``delta = 1 - alpha``, which the solvers compute once and exactly (Sterbenz) near
    alpha = 1.
    newton, newton_slope : sympy.Expr
        ``G(kappa) = -F(kappa)/kappa = lam/kappa - S_1c + delta`` (convex, decreasing) and
        ``dG/dkappa`` in terms of ``S_1c'`` (summand ``d/dkappa`` of that of ``S_1c``, stored
        in ``sums`` under ``S_1c'``), for Newton's method.
    deg_dalpha : sympy.Expr
        d eg / d alpha along the solution (implicit differentiation of G(kappa) = 0), in terms of
        the sums and their kappa-derivatives ``R'``, ``S_2c'``, ``S_1c'``.
    deg_dalpha_fixed_kappa : sympy.Expr
        Its explicit part, the whole derivative where kappa stays 0 (lam = 0, alpha > 1).
    stable_sums : dict
        The summands of ``sums`` written with ``x = kappa/(kappa+omega)``, ``y = omega/(kappa+
        omega)`` and omega (no kappa): what the solvers evaluate (see :func:`_stable_forms`).
    stable : dict
        eg, train loss, q, q_hat, m, V at the saddle point without cancellation or spurious
        overflow: functions of the sums (including ``S_12 = S_1 - S_2``), alpha and V_hat.
    newton_direct, newton_scale, v_hat_direct : sympy.Expr
        ``G = lam/kappa + S_1 - alpha`` (for alpha < 1/2), ``-kappa dG/dkappa = lam/kappa +
        S_12`` and ``V_hat = alpha - S_1``.
    deg_dalpha_stable : sympy.Expr
        d eg / d alpha in terms of ``D = V_hat + S_12``, ``kR' = kappa R'`` (finite as kappa ->
        infinity) and a bracket ``B``, given by ``deg_b``: ``"far"`` (small terms where kappa
        -> infinity) or ``"peak"`` (small terms at the peak); see :func:`_stable_forms`.
    """

    sums: dict
    root: sp.Expr
    v_hat_of_kappa: sp.Expr
    v_hat_from_root: sp.Expr
    values: dict
    newton: sp.Expr
    newton_slope: sp.Expr
    deg_dalpha: sp.Expr
    deg_dalpha_fixed_kappa: sp.Expr
    stable_sums: dict
    stable: dict
    newton_direct: sp.Expr
    newton_scale: sp.Expr
    v_hat_direct: sp.Expr
    deg_dalpha_stable: sp.Expr
    deg_b: dict


def _free_of(expr: sp.Expr, *symbols: sp.Symbol) -> sp.Expr:
    expr = sp.factor(sp.simplify(expr))
    if expr.has(*symbols):
        raise AssertionError(f"reduction failed: {expr} still depends on {symbols}")
    return expr


@cache
def reduce() -> ReducedSystem:
    """Eliminate the explicit variables of :func:`derive` (docs/theory.md, section 4).

    Steps, each done and checked by sympy:

    1. the m_hat- and V_hat-equations coincide, so ``m_hat = V_hat``;
    2. substitute ``lam = kappa V_hat``: each per-mode summand becomes a power of V_hat
       times a function of kappa alone, which defines the spectral sums;
    3. the V-equation then reads ``V V_hat = S_1 = 1 - S_1c`` and the V_hat-equation
       ``V_hat = alpha/(1 + V)`` gives ``V_hat = alpha - 1 + S_1c``, hence
       ``F(kappa) = kappa V_hat(kappa) - lam = 0``;
    4. q enters eg linearly through q_hat: solve that linear equation for eg, then q.
    """
    eqs = derive()
    sums = _spectral_sums(eqs)

    # V from its equation, V_hat from its own: V_hat = alpha / (1 + (1 - S1c)/V_hat)
    v_of_vhat = S1 / V_hat
    (v_hat_k,) = [
        s for s in sp.solve(sp.Eq(V_hat, eqs.hat[V_hat].subs(V, v_of_vhat).subs(S1, 1 - S1C)), V_hat)
        if s != 0
    ]
    root = kappa * v_hat_k - lam
    values = _saddle_values(eqs, v_of_vhat, v_hat_k)
    eg_sol = values["eg"]
    # for lam > 0 the root equation solved for V_hat is exact given kappa (no cancellation)
    (v_hat_from_root,) = sp.solve(root.subs(v_hat_k, V_hat), V_hat)

    # the root equation divided by -kappa, G = lam/kappa - S_1c + 1 - alpha, is convex and
    # decreasing in kappa (S_1c is concave increasing): Newton's method started left of the root
    # climbs to it monotonically. Its derivative needs d S_1c / d kappa, one more spectral sum.
    newton = sp.expand(-root / kappa)
    s1c_of_kappa = sp.Function("S_1c")(kappa)
    newton_slope = sp.diff(newton.subs(S1C, s1c_of_kappa), kappa).subs(
        sp.Derivative(s1c_of_kappa, kappa), S1C_PRIME)
    sums[S1C_PRIME] = sp.factor(sp.diff(sums[S1C], kappa))
    deg_dalpha, partial_stable = _deg_dalpha(eg_sol, newton, newton_slope, sums)
    sums[S12] = _free_of(sums[S2C] - sums[S1C])
    sums[KR_PRIME] = sp.factor(kappa * sums[R_PRIME])
    sums[KS2C_PRIME] = sp.factor(kappa * sums[S2C_PRIME])
    sums[SF] = _free_of(sums[S1C] + sums[S12] - sums[KS2C_PRIME])
    values = {k: _with_delta(v) for k, v in values.items()}
    newton = _with_delta(newton)
    deg_dalpha = _with_delta(deg_dalpha)
    return ReducedSystem(
        sums=sums, root=root, v_hat_of_kappa=_with_delta(v_hat_k),
        v_hat_from_root=v_hat_from_root, values=values,
        newton=newton, newton_slope=newton_slope,
        deg_dalpha=deg_dalpha, deg_dalpha_fixed_kappa=_with_delta(partial_stable),
        **_stable_forms(sums, values, newton, newton_slope, deg_dalpha),
    )


def _spectral_sums(eqs: SaddlePointEquations) -> dict:
    """Steps 1-2 of :func:`reduce`: the per-mode summands of the spectral sums, checked free of V_hat."""
    if sp.simplify(eqs.hat[m_hat] - eqs.hat[V_hat]) != 0:
        raise AssertionError("the m_hat and V_hat equations differ: the reduction does not apply")
    at_kappa = {lam: kappa * V_hat, m_hat: V_hat}

    v_mode = eqs.mode[V].subs(at_kappa)
    q_mode = sp.expand(eqs.mode[q].subs(at_kappa))
    m_mode = eqs.mode[m].subs(at_kappa)
    q_teacher = q_mode.coeff(q_hat, 0)  # part of q independent of q_hat
    q_noise = q_mode.coeff(q_hat, 1)  # coefficient of q_hat
    rho_mode = c * omega  # rho = w*^T Sigma w* = sum_k theta_k^2 omega_k
    return {
        S1: _free_of(V_hat * v_mode, V_hat),
        S1C: _free_of(b - V_hat * v_mode, V_hat),
        S2: _free_of(V_hat**2 * q_noise, V_hat),
        S2C: _free_of(b - V_hat**2 * q_noise, V_hat),
        QT_SUM: _free_of(q_teacher, V_hat),
        M_SUM: _free_of(m_mode, V_hat),
        R_SUM: _free_of(rho_mode - 2 * m_mode + q_teacher, V_hat),
        RHO_SUM: rho_mode,
    }


def _saddle_values(eqs: SaddlePointEquations, v_of_vhat: sp.Expr, v_hat_k: sp.Expr) -> dict:
    """Step 4 of :func:`reduce`: eg, m, q, V, q_hat and the train loss in terms of the sums."""
    # q = Q_T + q_hat S_2 / V_hat^2, with q_hat from its equation where rho + sigma^2 - 2m + q
    # is written as eg; eg then solves a linear equation, written with R and S_2c
    q_hat_of_eg = eqs.hat[q_hat].subs(q, eg - rho - noise + 2 * m).subs(V, v_of_vhat)
    q_of_eg = QT_SUM + q_hat_of_eg * S2 / V_hat**2
    stable = {QT_SUM: R_SUM - RHO_SUM + 2 * M_SUM, S2: 1 - S2C, S1: 1 - S1C}
    (eg_sol,) = sp.solve(
        sp.Eq(eg, generalisation_error().subs({q: q_of_eg, rho: RHO_SUM, m: M_SUM}).subs(stable)), eg
    )
    eg_sol = sp.factor(sp.simplify(eg_sol.subs(V_hat, v_hat_k)))
    if eg_sol.has(V_hat):
        raise AssertionError(f"eg still depends on V_hat: {eg_sol}")
    q_sol = sp.simplify(q_of_eg.subs(S1, 1 - S1C).subs(V_hat, v_hat_k)).subs(eg, eg_sol)

    # q_hat and the train loss carry 1/(1 + V)^2: write 1 + V = alpha / V_hat (the V_hat
    # equation solved for V) so that they stay finite where V_hat -> 0 and V -> infinity
    (v_of_vhat_hat_eq,) = sp.solve(sp.Eq(V_hat, eqs.hat[V_hat]), V)
    at_saddle = {q: eg - rho - noise + 2 * m}
    return {
        "eg": eg_sol,
        "m": M_SUM,
        "q": q_sol,
        "V": v_of_vhat,
        "q_hat": _free_of(
            eqs.hat[q_hat].subs(at_saddle).subs(V, v_of_vhat_hat_eq), V, q, m
        ).subs(eg, eg_sol),
        "train_loss": _free_of(
            training_loss().subs(at_saddle).subs(V, v_of_vhat_hat_eq), V, q, m
        ).subs(eg, eg_sol),
    }


def _deg_dalpha(eg_sol: sp.Expr, newton: sp.Expr, newton_slope: sp.Expr,
                sums: dict) -> tuple[sp.Expr, sp.Expr]:
    """d eg / d alpha along the saddle point and its fixed-kappa part; adds R', S_2c' to ``sums``."""
    # d eg / d alpha along the saddle point: implicit function theorem on G(kappa; alpha) = 0,
    # d kappa / d alpha = -(dG/dalpha) / (dG/dkappa); the sums R and S_2c move with kappa
    sums[R_PRIME] = sp.factor(sp.diff(sums[R_SUM], kappa))
    sums[S2C_PRIME] = sp.factor(sp.diff(sums[S2C], kappa))
    kappa_prime = -sp.diff(newton, alpha) / newton_slope
    # the explicit alpha-derivative contains S_2c - 1 = -S_2: use the direct sum (no cancellation)
    partial = sp.factor(sp.together(sp.diff(eg_sol, alpha)))
    num, den = sp.fraction(partial)
    partial_stable = num.subs(S2C - 1, -S2) / den
    if (sp.simplify(partial_stable.subs(S2, 1 - S2C) - partial) != 0
            or sp.fraction(partial_stable)[0].has(S2C)):
        raise AssertionError(f"could not write d eg / d alpha with S_2: {partial}")
    deg_dalpha = partial_stable + kappa_prime * (
        sp.diff(eg_sol, R_SUM) * R_PRIME + sp.diff(eg_sol, S2C) * S2C_PRIME)
    return deg_dalpha, partial_stable


def ratio_form(summand: sp.Expr) -> sp.Expr:
    """A per-mode summand written with x = kappa/(kappa+omega), y = omega/(kappa+omega), checked.

    Every summand is homogeneous in (kappa, omega), so it is a polynomial in x and y times a
    power of omega: no power of kappa or of kappa + omega is left to overflow or underflow.
    """
    out = sp.factor(sp.cancel(summand.subs(kappa, omega * X / Y))).subs(X + Y, 1)
    back = out.subs({X: kappa / (kappa + omega), Y: omega / (kappa + omega)})
    if out.has(kappa) or not _is_zero(back - summand):
        raise AssertionError(f"could not write {summand} with x and y: {out}")
    return out


def _stable_forms(sums: dict, values: dict, newton: sp.Expr, newton_slope: sp.Expr,
                  deg_dalpha: sp.Expr) -> dict:
    """Cancellation-free and overflow-free forms of the reduced system, each checked by sympy.

    * ``alpha - S_2 = S_2c - delta``, the denominator of eg, is a difference of two numbers
      close to 1 at small alpha (relative error ~eps/alpha) and of two numbers close to
      alpha at the peak; at the saddle point it equals ``D = V_hat + S_12``, a sum of positive
      terms (``V_hat = lam/kappa`` for lam > 0, ``S_1c - delta`` for lam = 0).
    * Products are grouped (``sympy.UnevaluatedExpr``) so that each factor is a ratio of
      comparable numbers: ``eg = (R + sigma^2) (alpha/D)``, ``train_loss = (R + sigma^2)
      (V_hat/D) (V_hat/alpha)``, ...; nothing overflows or underflows that is not itself out of
      the float range.
    * ``G = lam/kappa - S_1c + delta`` (exact near alpha = 1) and ``G = lam/kappa + S_1 - alpha``
      (exact at small alpha: no 1 - alpha); the Newton step is ``kappa G / (lam/kappa + S_12)``
      (``kappa dG/dkappa = -(lam/kappa + S_12)``), free of ``lam / kappa^2``.
    """
    U = sp.UnevaluatedExpr
    noise_r = R_SUM + noise
    den = V_hat + S12
    at_saddle = {V_hat: S1C - delta}
    defs = {S12: S2C - S1C}
    stable = {
        "eg": noise_r * U(alpha / den),
        "train_loss": noise_r * U(V_hat / den) * U(V_hat / alpha),
        "q_hat": noise_r * U(V_hat / den) * V_hat,
        "q": QT_SUM + U(S2 / den) * noise_r,
        "m": M_SUM,
        "V": S1 / V_hat,
    }
    for name, expr in stable.items():
        lhs = expr.doit().subs(defs).subs(at_saddle)
        if not _is_zero(lhs - values[name].subs(at_saddle)):
            raise AssertionError(f"the stable form of {name} differs: {expr} vs {values[name]}")
    newton_direct = lam / kappa + S1 - alpha
    if not _is_zero(newton_direct.subs(S1, 1 - S1C) - newton.subs(delta, 1 - alpha)):
        raise AssertionError("the direct form of G differs")
    newton_scale = lam / kappa + S12  # -kappa dG/dkappa, with kappa S_1c' = S_12
    if (not _is_zero(sums[S12] - kappa * sums[S1C_PRIME])
            or not _is_zero(-kappa * newton_slope.subs(S1C_PRIME, S12 / kappa) - newton_scale)):
        raise AssertionError("-kappa G' is not lam/kappa + S_12")
    # d eg / d alpha = (N/D^2) B - alpha kR'/D^2 with N = R + sigma^2, B = D - alpha F / D and
    # F = D dD/dalpha = D - kS_2c' (dkappa/dalpha = -kappa/D). B has two forms: "far",
    # -S_2 + (alpha/D) kS_2c' (small terms where kappa -> infinity or alpha -> 0), and "peak",
    # D - (alpha/D)(S_F - delta), with S_F = S_1c + S_12 - kS_2c' = sum b x^2 (1 + 2y) at the
    # saddle point: at alpha = 1, lam -> 0 the terms of the far form are ~1 and cancel to O(kappa),
    # those of the peak form are O(kappa). The solver uses the form with the smaller terms.
    bracket = sp.Symbol("B")
    deg_stable = (U(U(noise_r / den) / den) * bracket - U(alpha / den) * U(KR_PRIME / den))
    exact_b = den - alpha * (den - KS2C_PRIME) / den
    forms = {"far": -S2 + U(alpha / den) * KS2C_PRIME,
             "peak": den - U(alpha / den) * (SF - delta)}
    full = {**defs, S2: 1 - S2C, SF: S1C + S12 - KS2C_PRIME}
    for name, form in forms.items():
        diff = (form.doit() - exact_b).subs(full).subs(defs).subs(at_saddle).subs(delta, 1 - alpha)
        if not _is_zero(diff):
            raise AssertionError(f"the {name} form of B differs")
    lhs = deg_stable.doit().subs(bracket, exact_b).subs(
        {**defs, KR_PRIME: kappa * R_PRIME, KS2C_PRIME: kappa * S2C_PRIME})
    rhs = deg_dalpha.subs({lam: kappa * V_hat, S1C_PRIME: S12 / kappa}).subs({**defs, S2: 1 - S2C})
    if not _is_zero((lhs - rhs).subs(at_saddle).subs(delta, 1 - alpha)):
        raise AssertionError("the stable form of d eg / d alpha differs")
    return dict(
        stable_sums={k: ratio_form(v) for k, v in sums.items()},
        stable=stable, newton_direct=newton_direct, newton_scale=newton_scale,
        v_hat_direct=alpha - S1, deg_dalpha_stable=deg_stable,
        deg_b=forms,
    )


def _is_zero(expr: sp.Expr) -> bool:
    """Whether a rational function is identically zero (``cancel`` is canonical for them)."""
    return sp.cancel(sp.together(expr)) == 0


def _with_delta(expr: sp.Expr) -> sp.Expr:
    """Write every ``alpha - 1`` of ``expr`` as ``-delta`` (see :data:`delta`)."""
    out = expr.subs(alpha - 1, -delta)
    if sp.simplify(out.subs(delta, 1 - alpha) - expr) != 0:
        raise AssertionError(f"rewriting {expr} with delta = 1 - alpha changed it")
    return out
