"""Potts models fitted to a multiple sequence alignment: plmDCA, factored attention, mean-field DCA.

:func:`fit_potts` fits fields ``h_i(a)`` and couplings by maximising the weighted, l2-penalised
asymmetric pseudo-likelihood (plmDCA, Ekeberg et al. 2013, 2014) in one objective over all sites,

    F = (1 / B_eff) sum_mu w_mu sum_i -log P_i(s_i^mu | s_-i^mu) + lambda_h sum_i |h_i|^2 + penalty(J),

the sum over sites ``r`` of plmDCA's per-site objectives ``g_r``, each divided by the effective number
of sequences ``B_eff = sum_mu w_mu``. Two parametrisations of the couplings:

* ``method="plm"``: a free ``q x q`` block ``W_ij`` per ordered pair; penalty ``(lambda_J / 2) sum_{i
  != j} |W_ij|_F^2`` (plmDCA asymmetric v2: every coupling is estimated twice, once from each
  site, hence the half). Defaults ``lambda_h = lambda_J = 0.01``, plmDCA's values for ``B_eff >
  500`` (plmDCA v2 raises both linearly to 0.1 as ``B_eff`` falls to 0: pass them for small
  families).
* ``method="factored"``: ``W_ij(a, b) = sum_h A^h_ij V^h_ab`` with ``H`` heads and the same
  penalty on ``W``: plm restricted to couplings of rank ``H`` (as an ``(L^2, q^2)`` matrix). The
  attention ``A^h`` is a free ``L x L`` matrix (``attention="linear"``,
  :mod:`replica_mlm.proteins.factored_fit`), or the softmax over ``j != i`` of per-site queries
  and keys, rows positive and summing to one (``attention="softmax"``, Bhattacharya et al. 2020,
  :mod:`replica_mlm.proteins.softmax_factored`).

``method="mean-field"`` is mean-field DCA (:mod:`replica_mlm.proteins.mean_field`): no objective
is minimised, the couplings are minus the inverse of the connected correlations of the weighted,
pseudocount-regularised frequencies (the ``replica-mlm contacts`` default).

plm and factored attention are minimised by L-BFGS (:mod:`replica_mlm.learners.quasi_newton`) with
the analytic gradient of
:mod:`replica_mlm.learners.plm_objective` (the factored model: all sites at once; ``"plm"``: in
the data's span, preconditioned, one L-BFGS per site (the per-site objectives are independent),
four sites evaluated together, :mod:`replica_mlm.proteins.plm_fit`), driven by
:func:`replica_mlm.learners.quasi_newton.lbfgs` (docs/proteins.md, "Convergence of the fits").
The fitted blocks are then symmetrised, ``J_ij = (W_ij + W_ji^T) / 2``, and put in the zero-sum
gauge, the fields shifted so that the Potts energy (hence every conditional of the symmetric
model) is unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import RngLike, as_generator, nonnegative, positive, positive_int
from replica_mlm._base.keywords import keywords
from replica_mlm._base.progress import bar, shown
from replica_mlm.learners.attention import zero_sum_in_place
from replica_mlm.learners.plm_objective import PseudoLikelihood, pseudo_nll
from replica_mlm.learners.quasi_newton import MAXCOR, lbfgs_with_double_finish
from replica_mlm.potts.model import check_sequences
from replica_mlm.proteins import contacts
from replica_mlm.proteins.factored_fit import FactoredProblem
from replica_mlm.proteins.fit_arguments import (
    alphabet_size,
    checked_sequences,
    checked_weights,
    identity_option,
    init_arrays,
    pseudocount_option,
)
from replica_mlm.proteins.fit_convergence import certificate
from replica_mlm.proteins.mean_field import (
    couplings_from_frequencies,
    mean_field_fields,
    weighted_frequencies,
)
from replica_mlm.proteins.plm_fit import fit_site_by_site
from replica_mlm.proteins.softmax_factored import SoftmaxFactoredProblem

__all__ = ["PottsFit", "fit_potts"]

METHODS = ("plm", "factored", "mean-field")
#: named starts of the factored fit (``init=``)
INITS = ("random", "mean-field")
#: attention of the factored model (``attention=``)
ATTENTIONS = ("linear", "softmax")
#: heads of the factored model when ``heads`` is not given
DEFAULT_HEADS = 32
#: plm's default ``tol``: contact-grade (docs/proteins.md, "Convergence of the fits": on the three
#: families no contact precision at top L/5, L/2 or L falls below that of the fit converged to 1e-5;
#: at 3e-3 DHFR's top L loses one pair)
PLM_TOL = 2e-3
#: L-BFGS pairs of the plm fit's per-site runs (3, 5 and 10 measured alike on rhomboid: 50-52
#: CPU-s, 293-301 MB; docs/proteins.md, "Convergence of the fits"); the factored fit keeps ``MAXCOR``
PLM_PAIRS = 5
#: ``tol`` and ``precision`` of each method when not given
DEFAULTS = {"plm": (PLM_TOL, "single"), "factored": (1e-5, "double"), "mean-field": (None, None)}


@dataclass(frozen=True, eq=False)
class PottsFit:
    """A Potts model fitted by :func:`fit_potts`.

    Attributes
    ----------
    couplings : ndarray, shape (L, L, q, q)
        ``J_ij(a, b)``, symmetric (``J_ji = J_ij^T``), zero-sum gauge, zero diagonal blocks.
    fields : ndarray, shape (L, q)
        ``h_i(a)``, zero sum over ``a``.
    method : {"plm", "factored", "mean-field"}
    heads : int or None
        ``H`` of the factored model (None for ``"plm"``).
    attention : {"linear", "softmax"} or None
        The factored model's attention (None for ``"plm"``).
    tol : float or None
        The tolerance on the largest gradient component the fit was run to (the given ``tol``
        or the method's default; None for ``"mean-field"``).
    penalties : dict
        ``{"lambda_h": ..., "lambda_J": ...}`` as in the module docstring; for ``"mean-field"``
        ``{"pseudocount": ...}``.
    reweight : float or None
        Identity threshold of the sequence weights (None: uniform weights).
    converged : bool
        True only if the largest gradient component at the returned point is ``<= tol``. Every
        component is a difference of weighted one- or two-site frequencies (the conditional
        model's expectation minus the data's, ``F`` being normalised by ``B_eff``) plus the
        penalty's gradient, so ``tol`` (:attr:`tol`) is a frequency mismatch, independent of
        ``N``. It states that tolerance was met, not that the fit is at the optimum: how far the
        optimum can be is :attr:`distance_bound`.
        ``"mean-field"``: True (a closed form, no iteration; :attr:`gradient_norm` and
        :attr:`objective` NaN, :attr:`stop` ``"closed-form"``).
    iterations : int
        L-BFGS iterations (plm: the most of any site).
    cpu_seconds : float
        Process CPU time of the fit.
    gradient_norm : float
        Largest gradient component (infinity norm) at the returned point (plm: over all sites).
    objective : float
        ``F`` at the returned point.
    stop : str
        Why L-BFGS stopped: ``"gradient"`` (``tol`` met), ``"objective"`` (the ``ftol`` plateau
        rule), ``"max_iter"`` or ``"other"`` (no acceptable step, or no progress in ``F`` nor the gradient:
        the rounding of a single-precision run, see ``precision``). plm: the worst over its sites,
        in the order ``"max_iter"``, ``"other"``, ``"objective"``, ``"gradient"``.
    iterations_double : int
        Of :attr:`iterations`, those of the double-precision finish of a ``precision="single"``
        fit (0 if none was needed; plm: the most of any site).
    distance_bound : float or None
        plm only (None for the factored model, whose objective is not convex): a proven bound on
        the Frobenius distance of the raw fitted ``(h, W)`` to the exact optimum, ``|grad F|_2 /
        min(2 lambda_h, lambda_J)`` with the gradient over all of ``(h, W)`` in double precision
        (:func:`replica_mlm.proteins.fit_convergence.plm_certificate`); it also bounds the change
        of :attr:`couplings` and of the pairs' Frobenius scores before the APC.
    factors : tuple (A, V) or None
        Factored model: attention (H, L, L) with zero diagonals (rows summing to one for
        ``attention="softmax"``) and values (H, q, q), the raw couplings being ``W_ij = sum_h
        A[h, i, j] V[h]`` (symmetrised inside the softmax model's objective).
    """

    couplings: np.ndarray
    fields: np.ndarray
    method: str
    heads: int | None
    penalties: dict
    reweight: float | None
    converged: bool
    iterations: int
    cpu_seconds: float
    gradient_norm: float = float("nan")
    objective: float = float("nan")
    factors: tuple | None = field(default=None, repr=False)
    stop: str = ""
    iterations_double: int = 0
    distance_bound: float | None = None
    attention: str | None = None
    tol: float | None = None

    @property
    def L(self) -> int:
        return self.couplings.shape[0]

    @property
    def q(self) -> int:
        return self.couplings.shape[2]

    def mlm_loss(self, msa, *, weights=None) -> float:
        """The MLM loss: summed per-site negative log conditional, mean over ``msa``'s sequences.

        Unweighted by default (the convention of :meth:`replica_mlm.FactoredAttention.mlm_loss`:
        sum over sites, mean over sequences); with ``weights`` (N,) the weighted mean ``sum_mu
        w_mu nll_mu / sum_mu w_mu``, e.g. ``msa.weights(identity=0.8)``: the data term of the
        fit's objective.
        """
        s = checked_sequences(msa, self.L, self.q)
        w = None if weights is None else checked_weights(weights, s.shape[0])
        return pseudo_nll(self.couplings, self.fields, s, w)

    def contact_scores(self, *, apc: bool = True) -> np.ndarray:
        """(L, L) contact scores over the alignment's columns.

        :func:`replica_mlm.proteins.contacts.coupling_scores` of :attr:`couplings` (gap excluded,
        average product correction if ``apc``).
        """
        return contacts.coupling_scores(self.couplings, apc=apc)


@keywords
def fit_potts(
    msa,
    method: str = "plm",
    *,
    heads: int | None = None,
    attention: str = "linear",
    reweight: float | None = 0.8,
    lambda_h: float = 0.01,
    lambda_J: float = 0.01,
    max_iter: int = 500,
    tol: float | None = None,
    ftol: float | None = None,
    rng: RngLike = 0,
    init_scale: float = 0.01,
    precision: str | None = None,
    init=None,
    pseudocount: float | None = None,
    progress: bool | None = None,
) -> PottsFit:
    """Fit a Potts model to an alignment by weighted pseudo-likelihood (see the module docstring).

    Parameters
    ----------
    msa : MSA
        An alignment with ``.sequences`` (N, L) of colours ``0 .. q - 1`` (0 = gap), ``.q`` and,
        if ``reweight`` is not None, ``.weights(identity=)``.
    method : {"plm", "factored", "mean-field"}
        Free blocks per pair (plmDCA), ``heads``-head factored attention, or mean-field DCA
        (closed form: the couplings of ``replica-mlm contacts --method mean-field``, gap as the
        reference state, then symmetric and in the zero-sum gauge like the others; the fields
        ``h_i(a) = log(f_i(a) / f_i(0)) - sum_j sum_b J_ij(a, b) f_j(b)`` before the gauge
        shift; the L-BFGS options ``lambda_h``, ``lambda_J``, ``max_iter``, ``tol``, ``ftol``,
        ``precision``, ``rng`` and ``init_scale`` are not used).
    heads : int, optional
        Number of heads ``H`` of the factored model (default 32); only for ``"factored"``.
    attention : {"linear", "softmax"}
        Factored model only: a free ``L x L`` attention per head (default), or the softmax over
        ``j != i`` of per-site queries and keys of dimension ``HEAD_SIZE = 16`` (Bhattacharya et
        al. 2020; rows positive and summing to one, and far slower to fit: docs/proteins.md,
        "Factored attention").
    reweight : float in (0, 1] or None
        Identity threshold of the sequence weights ``msa.weights(identity=reweight)``; None for
        uniform weights. Default 0.8.
    lambda_h, lambda_J : float >= 0
        Penalties on the fields and the couplings (module docstring; the same for both methods);
        default 0.01 each. Choose ``lambda_J`` on held-out pseudo-likelihood with
        :func:`replica_mlm.proteins.penalty_selection.select_penalty` (docs/proteins.md,
        "Choosing the penalty").
    max_iter : int
        L-BFGS iterations at most (default 500; plm: per site).
    tol : float, optional
        Stop, and report ``converged``, when every gradient component is ``<= tol`` (a frequency
        mismatch, see :attr:`PottsFit.converged`). Default: :data:`PLM_TOL` ``= 2e-3`` for
        ``"plm"``, a contact-grade tolerance (on S1A, DHFR and rhomboid no contact precision at
        top L/5, L/2 or L falls below that of the fit converged to ``1e-5``, in 39-46 % of its
        iterations; what the returned point is proven to be is :attr:`PottsFit.distance_bound`,
        docs/proteins.md, "Convergence of the fits"); ``1e-5`` for ``"factored"``.
    ftol : float, optional
        Also stop when ``F`` fell by less than ``ftol * |F|`` over the last 10 iterations (a
        plateau: ``stop="objective"``, ``converged`` still decided by ``tol`` alone). Default
        None: off.
    rng : int, Generator or None
        Seeds the factored model's random start: linear attention, ``A`` and ``V`` i.i.d.
        ``N(0, init_scale^2)`` (zero is a saddle point of the bilinear form), fields zero;
        softmax attention, queries and keys i.i.d. ``N(0, 1)``, ``V`` i.i.d. ``N(0,
        init_scale^2)``, the fields of independent sites (and the noise of its mean-field start).
        The plm fit starts at zero and uses no randomness. Default 0.
    init_scale : float
        Standard deviation of the random start's values (default 0.01).
    precision : {"double", "single"}, optional
        Precision of the large matrix products with the data (``"single"``: float32, about 2.5
        times faster on one core; the softmax, the objective's sums and the iterates stay in
        float64; L-BFGS keeps its history pairs in float32 in either precision). A
        single-precision run that stops before ``tol`` (float32 rounding ends its progress, below
        max|grad| ~ 1e-5 on the three families of docs/proteins.md) is finished in double
        precision with the iterations left (:attr:`PottsFit.iterations_double`); the reported
        gradient is always computed in double. Default: ``"single"`` for ``"plm"``,
        ``"double"`` for ``"factored"``.
    init : {"random", "mean-field"}, PottsFit or ndarray (L, L, q, q), optional
        Factored model only: where L-BFGS starts. ``"random"`` (the default, also None): the
        random start of ``rng`` and ``init_scale``. ``"mean-field"``: near the mean-field DCA
        couplings of the same weighted sequences (pseudocount 0.5,
        :mod:`replica_mlm.proteins.mean_field`; data only, its time is counted in
        ``cpu_seconds``), with zero fields. A PottsFit or an array: near these couplings (e.g. a
        plm fit's; the factored fit's own time is then its ``cpu_seconds``), with the PottsFit's
        fields (zero for an array). "Near" is the best rank-``heads`` factorisation for linear
        attention (:meth:`FactoredProblem.from_couplings`) and every head's attention on the
        couplings' top contacts for softmax attention
        (:meth:`~replica_mlm.proteins.softmax_factored.SoftmaxFactoredProblem.from_couplings`).
    pseudocount : float in [0, 1), optional
        ``"mean-field"`` (and the factored model's ``init="mean-field"``) only: the weight of the
        uniform distribution mixed into the frequencies (default 0.5,
        :func:`replica_mlm.proteins.mean_field.frequencies`).
    progress : bool or None
        A progress bar on stderr over the sites (plm) or the L-BFGS iterations (factored) (None:
        only when stderr is a terminal; :mod:`replica_mlm._base.progress`).

    Returns
    -------
    PottsFit
    """
    shown(progress)  # TypeError for anything but None, True, False
    method, attention, heads = _model_options(method, attention, heads)
    q, s = _alignment(msa)
    N, L = s.shape
    reweight, lambda_h, lambda_J, max_iter, tol, ftol, init_scale, dtype = _fit_options(
        method, reweight, lambda_h, lambda_J, max_iter, tol, ftol, init_scale, precision)
    gen = as_generator(rng)
    origin, init_J, init_h = _start_option(init, method, L, q)
    pseudocount = pseudocount_option(pseudocount, method, origin)
    if method == "mean-field":
        return _mean_field_fit(msa, s, q, reweight, pseudocount)
    factored = FactoredProblem if attention == "linear" else SoftmaxFactoredProblem
    _check_fit_cost(method, heads, factored, N, L, q, max_iter)
    w = np.ones(N) if reweight is None else checked_weights(msa.weights(identity=reweight), N,
                                                      name="msa.weights(identity=reweight)")

    start = time.process_time()
    data = PseudoLikelihood(s, w, q)
    if method == "plm":
        with bar(total=L, progress=progress, desc="fit_potts (plm)", unit="site") as shown_bar:
            raw = fit_site_by_site(data, lambda_h, lambda_J, dtype=dtype, max_iter=max_iter, tol=tol,
                                   ftol=ftol, memory=PLM_PAIRS, tick=shown_bar.update)
        h, W, factors = raw.fields, raw.couplings, None
        gnorm, objective, stop, nit, n_double = (raw.gradient_norm, raw.objective, raw.stop,
                                                 raw.iterations, raw.iterations_double)
        bound = certificate(raw.grad_l2, lambda_h, lambda_J)["distance_bound"]
        del raw
    else:
        problem = factored(data, heads, lambda_h, lambda_J, dtype=dtype)
        x0 = _factored_start(problem, origin, init_J, init_h, gen, init_scale, s, w, q, pseudocount)
        with bar(total=max_iter, progress=progress, desc="fit_potts (factored)",
                 unit="iteration") as shown_bar:
            res, n_double = lbfgs_with_double_finish(problem, x0, None, dtype, max_iter=max_iter, tol=tol,
                                                     ftol=ftol, tick=shown_bar.update)
        gnorm = float(np.max(np.abs(res.jac)))
        objective, stop, nit = float(res.fun), res.stop, int(res.nit)
        h, A, V = problem.factors(res.x)
        W, factors, bound = problem.couplings(A, V), (A, V), None
        del res, x0
    J, fields = symmetric_zero_sum_in_place(W, h)
    return PottsFit(
        couplings=J, fields=fields, method=method, heads=heads if method == "factored" else None,
        penalties={"lambda_h": lambda_h, "lambda_J": lambda_J}, reweight=reweight,
        converged=bool(np.isfinite(gnorm) and gnorm <= tol), iterations=nit,
        cpu_seconds=time.process_time() - start, gradient_norm=gnorm, objective=objective,
        factors=factors, stop=stop, iterations_double=n_double, distance_bound=bound,
        attention=attention if method == "factored" else None, tol=tol,
    )


# ---------------------------------------------------------------------- the steps of fit_potts
def _model_options(method, attention, heads) -> tuple:
    """``(method, attention, heads)`` of :func:`fit_potts`, checked: ``heads`` and ``attention``
    belong to the factored model (``heads`` then defaults to :data:`DEFAULT_HEADS`)."""
    method = _checks.choice(method, METHODS, "method")
    attention = _checks.choice(attention, ATTENTIONS, "attention")
    if method != "factored":
        if heads is not None:
            raise ValueError(f"heads applies to method='factored' only; leave it None for {method!r}")
        if attention != "linear":
            raise ValueError(f"attention applies to method='factored' only; leave it 'linear' for {method!r}")
    else:
        heads = DEFAULT_HEADS if heads is None else positive_int(heads, "heads")
    return method, attention, heads


def _alignment(msa) -> tuple[int, np.ndarray]:
    """``(q, sequences)`` of the alignment given to :func:`fit_potts`, checked: at least 2 columns,
    and at least 2 sequences that differ somewhere (identical sequences carry no covariation: every
    coupling would be a pseudocount's or the penalty's, the contact scores rounding noise)."""
    q = alphabet_size(msa)
    if not hasattr(msa, "sequences"):
        raise TypeError(f"msa must be an MSA with .sequences, got {type(msa).__name__}")
    s = check_sequences(msa.sequences, L=np.shape(msa.sequences)[-1], q=q, name="msa.sequences")
    L = s.shape[1]
    if L < 2:
        raise ValueError(f"msa must have at least 2 columns, got L = {L}")
    if not np.any(s != s[:1]):
        raise ValueError(f"msa must hold at least 2 different sequences to fit couplings, got {s.shape[0]} "
                         f"sequence(s){', all identical' if s.shape[0] > 1 else ''}")
    return q, s


def _fit_options(method, reweight, lambda_h, lambda_J, max_iter, tol, ftol, init_scale,
                 precision) -> tuple:
    """The numerical options of :func:`fit_potts`, checked in this order, ``tol`` and ``precision``
    defaulting to the method's (:data:`DEFAULTS`), with ``precision`` as its dtype."""
    default_tol, default_precision = DEFAULTS[method]
    reweight = identity_option(reweight)
    lambda_h = nonnegative(lambda_h, "lambda_h")
    lambda_J = nonnegative(lambda_J, "lambda_J")
    max_iter = positive_int(max_iter, "max_iter")
    tol = default_tol if tol is None else positive(tol, "tol")
    ftol = None if ftol is None else positive(ftol, "ftol")
    init_scale = positive(init_scale, "init_scale")
    precision = default_precision if precision is None else _checks.choice(
        precision, ("double", "single"), "precision")
    dtype = None if precision is None else {"double": np.float64, "single": np.float32}[precision]
    return reweight, lambda_h, lambda_J, max_iter, tol, ftol, init_scale, dtype


def _start_option(init, method: str, L: int, q: int) -> tuple:
    """``(origin, init_J, init_h)``: the named start of :func:`fit_potts` (``origin`` in
    :data:`INITS`, the arrays None), or the given couplings and fields (checked)."""
    init_J = init_h = None
    if init is not None and method != "factored":
        raise ValueError(f"init applies to method='factored' only; leave it None for {method!r}")
    origin = "random" if init is None else init
    if isinstance(origin, str):
        origin = _checks.choice(origin, INITS, "init")
    else:
        init_J, init_h = init_arrays(origin, L, q)
    return origin, init_J, init_h


def _mean_field_fit(msa, s, q: int, reweight, pseudocount: float) -> PottsFit:
    """Mean-field DCA as a :class:`PottsFit` (:mod:`replica_mlm.proteins.mean_field`)."""
    N = s.shape[0]
    start = time.process_time()
    w = np.ones(N) if reweight is None else checked_weights(msa.weights(identity=reweight), N,
                                                      name="msa.weights(identity=reweight)")
    fi, fij = weighted_frequencies(s, w, q, pseudocount=pseudocount)
    J_mf = couplings_from_frequencies(fi, fij)
    J, fields = symmetric_zero_sum(J_mf, mean_field_fields(fi, J_mf))
    return PottsFit(couplings=J, fields=fields, method="mean-field", heads=None,
                    penalties={"pseudocount": pseudocount}, reweight=reweight, converged=True,
                    iterations=0, cpu_seconds=time.process_time() - start, stop="closed-form")


def _check_fit_cost(method: str, heads, factored, N: int, L: int, q: int, max_iter: int) -> None:
    """Refuse a fit whose memory (the L-BFGS history, the blocks, the data products) or work is
    out of reach, before any of it is spent."""
    Lq = L * q
    if method == "plm":  # the Gram matrix and its eigenvectors, B and its float32 copy, the couplings
        m = min(N, Lq)
        need = 8 * (2 * m * m + 2 * N * m + 2 * Lq * Lq)
    else:
        need = 8 * ((2 * MAXCOR + 8) * factored.parameter_count(L, q, heads) + 6 * Lq * Lq + 4 * N * Lq)
    _checks.allocation(need,
                       f"fit_potts(method={method!r}, heads={heads}) on N = {N} sequences of L = {L} "
                       "columns")
    _checks.work(max_iter * 10 * N * Lq * Lq, f"fit_potts(max_iter={max_iter}) on N = {N}, L = {L}")


def _factored_start(problem, origin, init_J, init_h, gen, init_scale: float, s, w, q: int,
                    pseudocount: float):
    """Where L-BFGS starts the factored fit: the random start, or near the mean-field couplings
    (zero fields), or near the given couplings and fields."""
    if isinstance(origin, str) and origin == "random":
        return problem.init(gen, init_scale)
    if isinstance(origin, str):  # "mean-field"
        init_J = couplings_from_frequencies(*weighted_frequencies(s, w, q, pseudocount=pseudocount))
        init_h = np.zeros((s.shape[1], q))
    return problem.from_couplings(init_J, init_h, gen=gen)


def symmetric_zero_sum(W: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``J = zero_sum((W + W^T) / 2)`` and fields shifted so that the Potts energy is unchanged.

    With ``r_ij(a) = mean_b J_ij(a, b)``, the fields become ``h_i(a) + sum_{j != i} r_ij(a)``, then
    centred over ``a`` (the energy changes by a constant only). ``W`` is left as it is
    (:func:`symmetric_zero_sum_in_place` writes over it).
    """
    return symmetric_zero_sum_in_place(np.array(W, dtype=float), h)


def symmetric_zero_sum_in_place(W: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`symmetric_zero_sum` written over ``W`` (float64, C-ordered), which becomes ``J``:
    the fit's couplings are never copied. The same operations on the same numbers as
    ``0.5 * (W + W^T)``, the gauge, then ``0.5 * (J + J^T)``, a row of blocks at a time."""
    L = W.shape[0]
    _symmetrise_in_place(W)
    W[np.arange(L), np.arange(L)] = 0.0
    fields = h + W.mean(axis=3).sum(axis=1)
    fields -= fields.mean(axis=1, keepdims=True)
    zero_sum_in_place(W)
    _symmetrise_in_place(W)
    return W, fields  # symmetric to the last bit


def _symmetrise_in_place(W: np.ndarray) -> None:
    """``W <- 0.5 * (W + W^T)`` (``W^T[i, j, a, b] = W[j, i, b, a]``), block row ``i`` with column
    ``i`` at a time."""
    for i in range(W.shape[0]):
        S = W[i, i:] + W[i:, i].transpose(0, 2, 1)
        S *= 0.5
        W[i, i:] = S
        W[i:, i] = S.transpose(0, 2, 1)
