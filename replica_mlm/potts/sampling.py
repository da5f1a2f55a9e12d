"""The body of :meth:`PottsModel.sample <replica_mlm.potts.model.PottsModel.sample>`.

:func:`draw` checks the request, runs the pilot (``PottsModel.gibbs_diagnostics``) unless the
thinning and burn-in are given, and saves configurations of independent Gibbs chains
(:func:`replica_mlm.potts.kernel.gibbs_sweep`) or of the coldest rung of parallel-tempering
replicas (:func:`replica_mlm.potts.tempering.tempering_step`); with ``resume`` it continues the
chains a pilot run kept. The pilot runs are in :mod:`replica_mlm.potts.pilot`, what they measure
in :mod:`replica_mlm.potts.diagnostics`.
"""

from __future__ import annotations

import warnings

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.progress import bar
from replica_mlm.potts.clusters import ClusterBonds, cluster_sweep
from replica_mlm.potts.diagnostics import METHODS, GibbsDiagnostics
from replica_mlm.potts.kernel import PottsLike, gibbs_sweep, init_fields
from replica_mlm.potts.tempering import (
    PILOT_MAX_SWEEPS,
    PILOT_SWEEPS,
    checked_ladder,
    diagnose,
    tempering_step,
)

__all__ = ["draw"]


# ---------------------------------------------------------------------- sampling
def _resume_from(model: PottsLike, d, n_chains):
    """Check that ``d`` is a pilot run of this model that kept its chains; its chains to continue."""
    if not isinstance(d, GibbsDiagnostics):
        raise TypeError(f"resume must be the GibbsDiagnostics of a pilot run (e.g. "
                        f"tune_beta(..., return_result=True).diagnostics), got {type(d).__name__}")
    if d.state is None:
        raise ValueError("resume: these diagnostics did not keep the pilot's chains (state is None)")
    s, who = d.state
    K = d.ladder.size
    if (s.ndim != 2 or s.shape[1] != model.L or s.shape[0] != d.n_chains * K
            or s.min() < 0 or s.max() >= model.q):
        raise ValueError(f"resume: the pilot's chains {s.shape} do not belong to a model of "
                         f"L = {model.L} sites and q = {model.q} colours")
    if not np.isclose(d.ladder[-1], model.beta, rtol=1e-12):
        raise ValueError(f"resume: the pilot ran at beta = {d.ladder[-1]:.6g}, the model is at "
                         f"beta = {model.beta:.6g}")
    R = d.n_chains if n_chains is None else min(n_chains, d.n_chains)
    s = s[: R * K].copy()
    who = None if who is None else who[:R].copy()
    return s, who, R


def draw(model: PottsLike, n, rng, *, n_chains, sweeps_between, burn_in, return_diagnostics,
         method, n_rungs, beta_hot, ladder, swap_rounds, resume=None, progress=False):
    """The body of :meth:`PottsModel.sample <replica_mlm.potts.model.PottsModel.sample>`."""
    if resume is not None:
        return _draw_resumed(model, n, rng, resume, n_chains=n_chains,
                             sweeps_between=sweeps_between, burn_in=burn_in,
                             return_diagnostics=return_diagnostics)
    method = _checks.choice(method, METHODS, "method")
    n = _checks.positive_int(n, "n")
    gen = _checks.as_generator(rng)
    n_chains = _checks.optional(_checks.positive_int, n_chains, "n_chains")
    sweeps_between = _checks.optional(_checks.positive_int, sweeps_between, "sweeps_between")
    burn_in = _checks.optional(_checks.nonnegative_int, burn_in, "burn_in")
    return_diagnostics = _checks.flag(return_diagnostics, "return_diagnostics")
    n_rungs = _checks.optional(_checks.positive_int, n_rungs, "n_rungs")
    beta_hot = _checks.positive(beta_hot, "beta_hot")
    _check_cost(model, n, n_chains, sweeps_between, burn_in, n_rungs)
    diag, method, ladder, swap_rounds = _sampler(
        model, gen, method=method, sweeps_between=sweeps_between, burn_in=burn_in,
        n_rungs=n_rungs, beta_hot=beta_hot, ladder=ladder, swap_rounds=swap_rounds,
        progress=progress)
    between = diag.sweeps_between if sweeps_between is None else sweeps_between
    burn = diag.burn_in if burn_in is None else burn_in
    C, advance, current = _start_chains(model, gen, n, n_chains, method, ladder, swap_rounds)
    seqs = _save_every(advance, current, n, C, model.L, burn, between, progress)
    if return_diagnostics:
        return seqs, diag
    return seqs


def _check_cost(model: PottsLike, n, n_chains, sweeps_between, burn_in, n_rungs) -> None:
    """Refuse a request whose memory or number of site updates is out of reach, before any work."""
    L, q = model.L, model.q
    C = min(n, 500 if n_chains is None else n_chains)
    K = n_rungs or 1
    what = f"sample(n={n}, sweeps_between={sweeps_between}, burn_in={burn_in}, n_rungs={n_rungs})"
    # the saved configurations (intp) and their copy; the chains' states and colour fields
    _checks.allocation(2 * 8 * (n + C) * L + 8 * C * K * L * (q + 2), f"{what} of L = {L} sites")
    sweeps = (burn_in or 0) + (sweeps_between or 1) * (-(-n // C))
    _checks.work(sweeps * C * K * L * q, what, steps=sweeps * L)  # a sweep: a loop over the L sites


def _sampler(model: PottsLike, gen, *, method, sweeps_between, burn_in, n_rungs, beta_hot, ladder,
             swap_rounds, progress):
    """The pilot's diagnostics (None when thinning and burn-in are given), method, ladder, swap rounds.

    The pilot runs when ``sweeps_between`` or ``burn_in`` is unset and decides the sampler;
    otherwise the requested method is checked and its ladder (a single rung for Gibbs) built.
    """
    diag = None
    if sweeps_between is None or burn_in is None:
        diag = diagnose(model, gen, n_chains=None, n_sweeps=PILOT_SWEEPS, max_sweeps=PILOT_MAX_SWEEPS,
                        method=method, n_rungs=n_rungs, beta_hot=beta_hot, ladder=ladder,
                        swap_rounds=swap_rounds, progress=progress)
        if not diag.mixing:
            warnings.warn(
                f"{diag.method} sampler at beta={model.beta:.4g} did not decorrelate within "
                f"the pilot run ({diag.n_sweeps} sweeps; tau_int >= {diag.tau_int:.1f} "
                "sweeps): samples may not be from the Boltzmann distribution",
                RuntimeWarning,
                stacklevel=4,
            )
        method = diag.method
        ladder = diag.ladder
        swap_rounds = diag.swap_rounds
    elif method == "auto":
        raise ValueError('method="auto" needs the pilot run: leave sweeps_between or burn_in '
                         "unset, or choose gibbs, tempering or cluster")
    else:
        ladder = (checked_ladder(model, ladder, n_rungs, beta_hot)
                  if method == "tempering" else np.array([model.beta]))
        swap_rounds = _checks.positive_int(swap_rounds, "swap_rounds")
    return diag, method, ladder, swap_rounds


def _start_chains(model: PottsLike, gen, n, n_chains, method, ladder, swap_rounds):
    """The number of chains C, random starting states, and the chains' ``advance`` and ``current``.

    ``advance()`` moves every chain one sweep (a tempering step for ``method="tempering"``);
    ``current()`` is the (C, L) state to save: each chain's coldest rung under tempering.
    """
    L, q = model.L, model.q
    if method == "tempering":
        K = ladder.size
        C = min(n, max(16, 500 // K)) if n_chains is None else min(n_chains, n)
        s = gen.integers(0, q, size=(C * K, L))
        Nq = init_fields(model, s)
        who = np.tile(np.arange(K), (C, 1))
        base = np.arange(C) * K
        t = 0

        def advance() -> None:
            nonlocal t
            tempering_step(model, s, Nq, who, ladder, t, gen, swap_rounds=swap_rounds)
            t += 1

        def current() -> np.ndarray:
            return s[base + who[:, -1]]
    else:
        C = min(n, 500) if n_chains is None else min(n_chains, n)
        s = gen.integers(0, q, size=(C, L))
        advance = _advance(model, s, method, gen)

        def current() -> np.ndarray:
            return s
    return C, advance, current


def _advance(model: PottsLike, s: np.ndarray, method: str, gen):
    """One sweep of independent chains ``s`` in place: a Gibbs sweep, or a Swendsen-Wang update
    for ``method="cluster"`` (ValueError naming why when the model admits none)."""
    if method == "cluster":
        bonds = ClusterBonds(model)
        return lambda: cluster_sweep(bonds, s, gen)
    Nq = init_fields(model, s)
    return lambda: gibbs_sweep(model, s, Nq, gen)


def _save_every(advance, current, n, C, L, burn, between, progress) -> np.ndarray:
    """Burn in, then save the C chains every ``between`` sweeps: the first n of the (n, L) rows."""
    per_chain = -(-n // C)
    steps = bar(progress=progress, desc=f"sampling {n} sequences", total=burn + (per_chain - 1) * between,
                unit="sweep")
    for _ in range(burn):
        advance()
        steps.update()
    out = np.empty((per_chain, C, L), dtype=np.intp)
    for k in range(per_chain):
        if k > 0:
            for _ in range(between):
                advance()
            steps.update(between)
        out[k] = current()
    steps.close()
    # interleave chains so that the first n rows come from as many chains as possible
    return out.reshape(per_chain * C, L)[:n].copy()


def _draw_resumed(model: PottsLike, n, rng, d, *, n_chains, sweeps_between, burn_in,
                  return_diagnostics):
    """Continue the chains of pilot run ``d`` and save every ``sweeps_between`` steps."""
    n = _checks.positive_int(n, "n")
    gen = _checks.as_generator(rng)
    n_chains = _checks.optional(_checks.positive_int, n_chains, "n_chains")
    s, who, C = _resume_from(model, d, n_chains)
    between = d.sweeps_between if sweeps_between is None else _checks.positive_int(
        sweeps_between, "sweeps_between")
    burn = 0 if burn_in is None else _checks.nonnegative_int(burn_in, "burn_in")
    return_diagnostics = _checks.flag(return_diagnostics, "return_diagnostics")
    K, L = d.ladder.size, model.L
    per_chain = -(-n // C)
    what, sweeps = f"sample(n={n}, resume=<{d.method} pilot of {C} chains>)", burn + between * per_chain
    _checks.allocation(2 * 8 * (n + C) * L + 8 * C * K * L * (model.q + 2), what)
    _checks.work(sweeps * C * K * L * model.q, what, steps=sweeps * L)
    ladder, rounds = d.ladder.copy(), d.swap_rounds
    base = np.arange(C) * K
    if who is None:
        advance = _advance(model, s, d.method, gen)
    else:
        Nq = init_fields(model, s)
        t = 0  # even/odd swap rounds alternate from here (either parity keeps the target exact)

        def advance() -> None:
            nonlocal t
            tempering_step(model, s, Nq, who, ladder, t, gen, swap_rounds=rounds)
            t += 1

    out = np.empty((per_chain, C, L), dtype=np.intp)
    for _ in range(burn):
        advance()
    for k in range(per_chain):
        for _ in range(between):  # the pilot's last state was recorded: step away from it first
            advance()
        out[k] = s if who is None else s[base + who[:, -1]]
    seqs = out.reshape(per_chain * C, L)[:n].copy()
    return (seqs, d) if return_diagnostics else seqs
