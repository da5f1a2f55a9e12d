"""The derived saddle-point equations, for reading: sympy objects or LaTeX."""

from __future__ import annotations

import re

import sympy as sp

from replica_mlm._base import checks as _checks
from replica_mlm._base.keywords import keywords
from replica_mlm.theory import routes
from replica_mlm.theory.studies.bayes_equations import bayes_equations, channel_partition_equations
from replica_mlm.theory.symbolic import potentials as P

#: the first line of printed equations (the dynamics': :data:`DYNAMICS_TITLE`)
TITLE = "replica-symmetric saddle-point equations (docs/theory.md):"
DYNAMICS_TITLE = "one-pass SGD per eigenmode of Sigma (docs/dynamics.md):"


class Equations(dict):
    """The equations by name (a dict of ``sympy.Eq``) that prints as plain text, one per line.

    ``print(rm.equations())`` shows ``lhs = rhs`` lines (with the key where it is not the
    left-hand side) (sympy's text form, LaTeX names such as
    ``\\hat{V}`` written ``V_hat``); ``eqs["V"]`` and every other dict access work as on a dict.
    """

    def __str__(self) -> str:
        lines = []
        for key, eq in self.items():
            lhs = _plain(eq.lhs)
            lines.append(f"  {lhs} = {_plain(eq.rhs)}" + ("" if lhs == key else f"    [{key!r}]"))
        return "\n".join([getattr(self, "title", TITLE), *lines])


def _plain(expr) -> str:
    """``expr`` as one line of text, LaTeX symbol names made plain (``\\hat{V}`` -> ``V_hat``)."""
    text = sp.sstr(expr)
    text = re.sub(r"\\hat\{([^{}]+)\}", r"\1_hat", text)
    return re.sub(r"\\([A-Za-z]+)", r"\1", text).replace("**", "^")


def _no_colours(q) -> None:
    """Refuse ``q=`` where the equations printed are not the q-colour site's SGD equations."""
    if q is not None:
        raise ValueError("q= is the number of colours of the q-colour site's SGD equations: it needs "
                         "dynamics=True and loss='cross_entropy'")


@keywords
def equations(*, latex: bool = False, loss=None, channel=None, bayes_optimal: bool = False,
              theory: str = "gaussian", dynamics: bool = False, q: int | None = None) -> Equations | str:
    """The replica-symmetric saddle-point equations, as derived by sympy.

    Without ``loss`` and ``channel``: the equations of ridge MLM (square loss, gaussian channel)
    that the fast path solves (docs/theory.md, section 3). The per-mode summands of
    :func:`.potentials.derive` are shown for a finite instance: bulk weight ``1/p`` and teacher
    weight ``t_k / p`` (``t_k = p theta_k^2``) per mode ``omega_k`` of Sigma, summed over
    ``k = 1..p``.

    With ``loss`` and/or ``channel`` (as in :func:`solve`): the equations the general engine
    solves (docs/theory.md, section "The general engine"): the loss and its proximal point, ``f``
    and ``d_w f`` (derivatives by sympy), the channel's ``P_out``, ``Z`` and ``dZ``, the hat
    integrals, and the same prior-side equations for ``V``, ``q``, ``m``.

    Parameters
    ----------
    latex : bool
        Return one LaTeX ``aligned`` block instead of sympy objects.
    loss : str or rm.losses.Loss, optional
    channel : str or rm.channels.Channel, optional
    bayes_optimal : bool
        The Bayes-optimal equations of ``channel`` instead (docs/bayes_optimal.md, "The
        equations"): ``P_out``, ``Z``, ``dZ``, the fields, ``q_hat``, ``q``, ``V``, ``m`` and the
        estimation error (no loss: ``loss`` must then be None).
    theory : {"gaussian", "mixture", "local"}
        ``"mixture"``: the equations of ERM on a two-cluster Gaussian mixture (docs/discrete.md,
        section "The replica theory of the mixture"), with ``loss`` (default logistic): the loss, its
        proximal point, ``f`` and ``d_w f``, the field ``omega = y m + sqrt(q) xi`` of class ``y``, the
        hats averaged over the classes with weights ``pi_y``, and the ridge prior on the modes of
        ``S`` with ``theta = S^{-1} mu`` (``t_k = p (u_k . theta)^2``). No ``channel``: the label is
        the cluster. ``"local"``: the local theory of a two-colour site (docs/discrete.md, "Sparse
        couplings"; :mod:`.local_equations`): the same loss side, the field ``M_c + sqrt(Q) xi`` of
        cluster ``c``, the hats summed over the clusters, and the ridge prior in the clusters' means
        (modes ``a_kc``, samples ``n_c``: "Sampled cluster means") derived from its per-mode
        potential.
    dynamics : bool
        The equations of one-pass SGD instead (docs/dynamics.md): the loss's derivative (sympy),
        the drift coefficients ``A``, ``B`` and ``E[l'^2]`` (in closed form where the derivative is
        a polynomial and the channel gaussian, else as expectations), the ODEs of the per-mode mean
        ratio ``r_k`` and fluctuation ``N_k`` (``c_B = lr / B``), the overlaps ``R`` and ``Q``, and
        for the square loss with the gaussian channel the exact finite-p recursion of ``D_k``,
        ``r_k`` (``g = lr / p``, ``a = 1 - g lam``). With ``loss="cross_entropy"``: one-pass SGD
        on a q-colour site (docs/dynamics.md, section "A q-colour site"): the softmax
        cross-entropy in the logits ``u = P h``, its gradient ``g`` (sympy), the label averages
        ``E_y g`` and ``E_y g g^T`` under ``pi = softmax(P nu)``, the fields' covariance ``C`` of
        the K x K order parameters ``Q``, ``M``, ``rho``, the regression ``[A; B]`` and ``G``, and
        the ODEs of the per-mode mean row ``m_k`` and fluctuation ``N_k``.
    q : int, optional
        The number of colours (>= 3) of ``dynamics=True, loss="cross_entropy"`` (None: 3); no
        other equations take it.

    Returns
    -------
    Equations (a dict of sympy.Eq that prints as text), or str
        Keys ``"V_hat", "q_hat", "m_hat", "V", "q", "m", "eg", "train_loss"`` (ridge MLM), or
        ``"loss", "prox", "f", "d_w f", "P_out", "Z", "dZ", "fields", "m_hat", "q_hat", "V_hat",
        "V", "q", "m", "estimation_error"`` (general engine), or for ``dynamics=True,
        loss="cross_entropy"`` ``"logits", "pi", "loss", "g", "E_y g", "E_y g g^T", "C", "[A; B]",
        "G", "F_k", "dm_k", "dN_k", "M", "Q"``.
    """
    latex = _checks.flag(latex, "latex")
    theory = _checks.choice(theory, routes.THEORIES, "theory")
    if _checks.flag(dynamics, "dynamics"):
        from replica_mlm.theory.studies.dynamics_equations import dynamics_equations

        if bayes_optimal:
            raise ValueError("dynamics=True prints the equations of SGD with a loss; bayes_optimal=True "
                             "takes none")
        plan = routes.plan(None, entry="online_sgd", loss=loss, channel=channel, theory=theory)
        if plan.loss == "cross_entropy":
            from replica_mlm.theory.studies.dynamics_multiclass_equations import multiclass_dynamics_equations

            colours = 3 if q is None else _checks.positive_int(q, "q")
            if colours < 3:
                raise ValueError(f"q must be >= 3 colours for the softmax cross-entropy's equations (two "
                                 f"colours are the logistic loss: loss='logistic'), got {colours}")
            eqs = multiclass_dynamics_equations(colours)
        else:
            _no_colours(q)
            eqs = dynamics_equations(plan.loss, plan.channel)
        out = _render(eqs, latex)
        if not latex:
            out.title = DYNAMICS_TITLE
        return out
    _no_colours(q)
    if _checks.flag(bayes_optimal, "bayes_optimal"):
        if loss is not None:
            raise ValueError("bayes_optimal=True takes no loss: the Bayes-optimal estimator has none")
        if theory != "gaussian":
            raise ValueError(f"bayes_optimal=True is derived for theory='gaussian' only, got "
                             f"theory={theory!r} (docs/bayes_optimal.md)")
        routes.plan(None, entry="equations", channel=channel, bayes=True)
        return _render(bayes_equations(channel), latex)
    if theory == "mixture" and channel is not None:
        raise ValueError("theory='mixture' has no channel (the label is the cluster): leave channel=None")
    # the route that would solve (loss, channel) decides which equations are printed
    default = "logistic" if loss is None and theory in ("mixture", "local") else loss  # a site's loss
    route = routes.plan(None, entry="equations", loss=default, channel=channel, theory=theory).route
    if route == "local":
        return _render(Equations(_local(default)), latex)
    eqs = P.derive()
    p = sp.Symbol("p", positive=True, integer=True)
    k = sp.Symbol("k", integer=True, positive=True)
    omega_k = sp.IndexedBase(r"\omega")[k]
    t_k = sp.IndexedBase("t")[k]
    finite = {P.b: 1 / p, P.c: t_k / p, P.omega: omega_k}

    def mode_sum(expr):
        summand = sp.factor(expr.subs(finite) * p)
        return sp.Mul(1 / p, sp.Sum(summand, (k, 1, p)), evaluate=False)

    out = Equations()
    if theory == "mixture":
        out.update(_mixture(default))
        for sym, name in ((P.V, "V"), (P.q, "q"), (P.m, "m")):
            out[name] = sp.Eq(sym, mode_sum(eqs.mode[sym]))
    elif route == "root":
        for sym, name in ((P.V_hat, "V_hat"), (P.q_hat, "q_hat"), (P.m_hat, "m_hat")):
            out[name] = sp.Eq(sym, eqs.hat[sym])
        for sym, name in ((P.V, "V"), (P.q, "q"), (P.m, "m")):
            out[name] = sp.Eq(sym, mode_sum(eqs.mode[sym]))
        out["eg"] = sp.Eq(P.eg, P.generalisation_error())
        out["train_loss"] = sp.Eq(sp.Symbol("e_t"), P.training_loss())
    else:
        out.update(_general(loss, channel))
        for sym, name in ((P.V, "V"), (P.q, "q"), (P.m, "m")):
            out[name] = sp.Eq(sym, mode_sum(eqs.mode[sym]))
        out["estimation_error"] = sp.Eq(sp.Symbol(r"E|\hat{w} - w^*|^2"), mode_sum(P.estimation()[0]))
    return _render(out, latex)


def _render(out: dict[str, sp.Eq], latex: bool) -> Equations | str:
    if not latex:
        return Equations(out)
    rows = [rf"{sp.latex(e.lhs)} &= {sp.latex(e.rhs)}" for e in out.values()]
    return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"


def _loss_side(loss) -> tuple[dict[str, sp.Eq], sp.Expr]:
    """The loss, its proximal point, ``f`` and ``d_w f`` from the loss's sympy form (every route that
    learns with a loss prints these), and ``f(y, w, V)`` itself."""
    from replica_mlm.theory.sides import losses
    loss = losses.resolve(loss)
    y, z, w, V = losses.y, losses.z, losses.w, losses.V
    zstar = sp.Symbol("z^*", real=True)
    d1, d2 = loss.derivatives
    f = sp.Function("f")(y, w, V)
    return {
        "loss": sp.Eq(sp.Function(r"\ell")(y, z), loss.expr),
        # the proximal point z* = argmin_z (z - w)^2/(2V) + loss(y, z) is the root of:
        "prox": sp.Eq((zstar - w) / V + d1.subs(z, zstar), 0),
        "f": sp.Eq(f, (zstar - w) / V),
        "d_w f": sp.Eq(sp.Derivative(f, w), (1 / (1 + V * d2.subs(z, zstar)) - 1) / V),
    }, f


def _local(loss) -> dict[str, sp.Eq]:
    """The local theory's equations (:mod:`.local_equations`) with the loss's own side."""
    from replica_mlm.theory.sides import losses
    from replica_mlm.theory.studies.local_equations import local_equations

    side, f = _loss_side(loss)
    return local_equations(side, f, sp.Derivative(f, losses.w), y=losses.y, w=losses.w)


def _mixture(loss) -> dict[str, sp.Eq]:
    """Channel-side equations of the two-cluster mixture (:mod:`.mixture_side`), from the loss's
    sympy form: the general engine's loss, prox, f and d_w f with the cluster's field."""
    from replica_mlm.theory.sides import losses
    y, w = losses.y, losses.w
    xi = sp.Symbol("xi", real=True)
    out, f = _loss_side(loss)
    pi = sp.Function(r"\pi")(y)
    out["fields"] = sp.Eq(w, y * P.m + sp.sqrt(P.q) * xi)
    dxi = sp.exp(-(xi**2) / 2) / sp.sqrt(2 * sp.pi)

    def average(expr):
        return sp.Integral(dxi * (expr.subs(y, 1) + expr.subs(y, -1)), (xi, -sp.oo, sp.oo))

    out["m_hat"] = sp.Eq(P.m_hat, P.alpha * average(pi * y * f))
    out["q_hat"] = sp.Eq(P.q_hat, P.alpha * average(pi * f**2))
    out["V_hat"] = sp.Eq(P.V_hat, -P.alpha * average(pi * sp.Derivative(f, w)))
    return out


def _general(loss, channel) -> dict[str, sp.Eq]:
    """Channel-side equations of the general engine, from the loss's and channel's sympy forms."""
    from replica_mlm.theory.sides import channels, losses
    channel = channels.resolve(channel)
    y, w = losses.y, losses.w
    mu, v = channels.mu, channels.v
    xi = sp.Symbol("xi", real=True)
    side, f = _loss_side(loss)
    Z = sp.Function("Z")(y, mu, v)
    out = {**side, **channel_partition_equations(channel)}
    out["fields"] = sp.Eq(sp.Tuple(w, mu, v),
                          sp.Tuple(sp.sqrt(P.q) * xi, P.m / sp.sqrt(P.q) * xi, P.rho - P.m**2 / P.q))
    dxi = sp.exp(-(xi**2) / 2) / sp.sqrt(2 * sp.pi)
    dZ = sp.Derivative(Z, mu)
    dfdw = sp.Derivative(f, w)

    def average(expr):
        if channel.labels == "binary":
            inner = expr.subs(y, 1) + expr.subs(y, -1)  # y in {-1, +1}
        else:
            inner = sp.Integral(expr, (y, -sp.oo, sp.oo))
        return sp.Integral(dxi * inner, (xi, -sp.oo, sp.oo))

    out["m_hat"] = sp.Eq(P.m_hat, P.alpha * average(dZ * f))
    out["q_hat"] = sp.Eq(P.q_hat, P.alpha * average(Z * f**2))
    out["V_hat"] = sp.Eq(P.V_hat, -P.alpha * average(Z * dfdw))
    return out
