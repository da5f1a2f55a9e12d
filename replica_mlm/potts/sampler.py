"""The sampling methods of :class:`~replica_mlm.potts.model.PottsModel` (docs/potts.md).

:class:`PottsSampler` is the part of the model's interface that runs chains: the pilot run that
measures the autocorrelation (:meth:`~PottsSampler.gibbs_diagnostics`), sampling
(:meth:`~PottsSampler.sample`), tempering ladders and the temperature tuner
(:meth:`~PottsSampler.tune_beta`). ``PottsModel`` inherits it; the methods only check and forward
to the modules that do the work: :mod:`~replica_mlm.potts.kernel` (the Gibbs state and sweep),
:mod:`~replica_mlm.potts.sampling` (``sample``), :mod:`~replica_mlm.potts.tempering` (ladders,
``gibbs_diagnostics``) and :mod:`~replica_mlm.potts.tuning` (``tune_beta``).
"""

from __future__ import annotations

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import RngLike, positive, positive_int
from replica_mlm._base.progress import shown
from replica_mlm.potts import kernel, sampling, tempering, tuning
from replica_mlm.potts.diagnostics import (
    TEMPERING_BETA_HOT,
    TEMPERING_SWAP_ROUNDS,
    GibbsDiagnostics,
)
from replica_mlm.potts.tuning import TuneResult

__all__ = ["PottsSampler"]


class PottsSampler:
    """The sampling methods of :class:`~replica_mlm.potts.model.PottsModel` (a mixin: it reads the
    model's ``L``, ``q``, ``beta``, ``couplings`` and ``colours``)."""

    L: int
    q: int
    beta: float

    # ------------------------------------------------------------------ Gibbs sampling
    def _init_fields(self, s: np.ndarray) -> np.ndarray:
        """Colour-major fields ``Nq[c, b, i] = sum_k J_ik [s_ck == b]``, shape (C, q, L).

        With this layout the update after a colour change of site ``k`` in chain ``c`` touches two
        contiguous rows of length L (``Nq[c, old, :]`` and ``Nq[c, new, :]``).
        """
        return kernel.init_fields(self, s)

    def _sweep(
        self,
        s: np.ndarray,
        Nq: np.ndarray,
        gen: np.random.Generator,
        betas: np.ndarray | None = None,
    ) -> None:
        """One Gibbs sweep of all chains in place (:func:`~replica_mlm.potts.kernel.gibbs_sweep`)."""
        kernel.gibbs_sweep(self, s, Nq, gen, betas)


    # ------------------------------------------------------------------ parallel tempering
    def tempering_ladder(
        self, n_rungs: int | None = None, *, beta_hot: float = TEMPERING_BETA_HOT
    ) -> np.ndarray:
        """Geometric ladder of inverse temperatures from ``min(beta_hot, beta)`` to ``beta``.

        Parameters
        ----------
        n_rungs : int, optional
            Number of rungs. Default: the starting rule of the automatic ladder, a ratio
            ``1 + 1/sqrt(L)`` between neighbouring inverse temperatures (the energy fluctuates by
            O(sqrt L), so this keeps ``(beta_{k+1} - beta_k) (E_b - E_a)`` of order one);
            :meth:`gibbs_diagnostics` then adds rungs until every measured swap acceptance is at
            least 0.3. One rung (plain Gibbs) if ``beta <= beta_hot``.
        beta_hot : float
            Hottest inverse temperature, where single-site Gibbs mixes quickly.

        Returns
        -------
        ndarray, hottest first; the last entry is the model's ``beta`` exactly.
        """
        beta_hot = positive(beta_hot, "beta_hot")
        if n_rungs is not None:
            n_rungs = positive_int(n_rungs, "n_rungs")
            _checks.allocation(4 * 8 * n_rungs, f"a tempering ladder of n_rungs={n_rungs}")
        return tempering.geometric_ladder(self.beta, n_rungs, beta_hot, self.L)

    def _tempering_step(self, s, Nq, who, ladder, t, gen, tally=None, *,
                        swap_rounds=1) -> np.ndarray:
        """One parallel-tempering step in place (:func:`~replica_mlm.potts.tempering.tempering_step`)."""
        return tempering.tempering_step(self, s, Nq, who, ladder, t, gen, tally,
                                        swap_rounds=swap_rounds)

    # ------------------------------------------------------------------ diagnostics
    def gibbs_diagnostics(
        self,
        rng: RngLike = 0,
        *,
        n_chains: int | None = None,
        n_sweeps: int = tempering.PILOT_SWEEPS,
        max_sweeps: int = tempering.PILOT_MAX_SWEEPS,
        method: str = "gibbs",
        n_rungs: int | None = None,
        beta_hot: float = TEMPERING_BETA_HOT,
        ladder=None,
        swap_rounds: int = TEMPERING_SWAP_ROUNDS,
    ) -> GibbsDiagnostics:
        """Measure the autocorrelation of the sampler and choose the sweeps between samples.

        ``n_chains`` chains start from uniformly random sequences, are burnt in for ``n_sweeps``
        sweeps, then run ``n_sweeps`` more sweeps while recording the spins and the energy after
        every sweep. Two normalised autocorrelation functions are measured, averaged over chains and
        time origins (means and variances are taken over all chains, so chains stuck in different
        states show up as autocorrelation that does not decay):

        * spin: ``rho(t) ∝ sum_i [ P(s_i(t0) = s_i(t0 + t)) - sum_a p_i(a)^2 ]``, the overlap of
          one-hot indicators with its equilibrium value subtracted;
        * energy: ``rho(t) ∝ <(E(t0) - Ebar)(E(t0 + t) - Ebar)>``.

        Each gives an integrated autocorrelation time with Sokal's window (c = 5). If the window
        is not found within a quarter of the run, the run is shorter than 50 tau, or the two
        halves of the run disagree (mean energy, or with 3 chains or more the cross-chain mean
        Hamming distance, ``diagnostics.hamming_drift``; 4 standard errors), the burn-in and the
        run are doubled (up to ``max_sweeps``). ``sweeps_between = ceil(tau_int log(1/0.01))``: an
        exponentially decaying autocorrelation is below 1 % between saved configurations.

        Parameters
        ----------
        rng : seed or Generator
        n_chains : int, optional
            Independent chains (``method="gibbs"``, default 64) or independent replicas of the
            tempering ladder (``method="tempering"``, default 16; ``n_chains * len(ladder)``
            chains are updated together).
        n_sweeps, max_sweeps : int
            Initial and largest length of the recorded run.
        method : {"gibbs", "tempering", "cluster", "auto"}
            ``"tempering"``: parallel tempering (replica exchange; same target distribution
            ``exp(-beta H)`` of docs/potts.md at the coldest rung):
            ``n_chains`` replicas of a geometric ladder from ``min(beta_hot, beta)`` to ``beta``
            (:meth:`tempering_ladder`); the autocorrelation is measured on the configurations seen
            at the coldest rung (the model's beta) of each replica, so ``sweeps_between`` is in
            tempering steps (one Gibbs sweep of every rung plus one round of swaps). That
            autocorrelation has a small, slowly decaying tail (configurations coming back from
            excursions up the ladder; at L = q = 20, beta = 8: rho = 0.1 at lag 50) which Sokal's
            window truncates, so for tempering each tau is the largest of Sokal's, Geyer's initial
            monotone estimate (:func:`initial_monotone_tau`, which must terminate within the
            measured lags) and, for spins, a blocking estimate (10 blocks per replica). With
            ``n_rungs=None`` the ladder starts from the ``1 + 1/sqrt(L)`` ratio rule and gets
            ``1.5x`` more rungs (pilot run restarted) until every measured swap acceptance is at
            least ``0.3`` (at most 128 rungs; the new rungs are placed at equal predicted swap
            acceptance 0.5 from the measured acceptances, at least 1.5x as many). The returned
            diagnostics carry the mean Hamming distance at beta measured on the pilot run
            (``hamming``, ``hamming_se``). ``"cluster"``: independent chains of Swendsen-Wang
            cluster updates (one update counts as a sweep), exact for ferromagnets of the Potts
            form (every ``J_ij >= 0``, ``U = a I + b 1 1^T`` with ``a > 0``: Ising spins or
            ``U = identity``; ValueError for any other model; docs/potts.md, "Cluster updates").
            ``"auto"``: cluster updates where they apply; otherwise plain Gibbs, and tempering if
            Gibbs does not mix (no Sokal window or unequal halves) within ``max_sweeps``.
        n_rungs : int, optional
            Fixed number of rungs (no adaptation).
        beta_hot : float
            Hottest rung of the ladder.
        ladder : array, optional
            Explicit ladder (strictly increasing, positive, ending at the model's beta; no
            adaptation), e.g. one with equal swap acceptance
            (``tempering.equal_acceptance_ladder``) or a previous run's ``diagnostics.ladder``.
        swap_rounds : int
            Rounds of even/odd swaps after each tempering sweep (default 1). Swaps do not change
            the energies, so extra rounds cost little; each round keeps the target exact.
        """
        return tempering.diagnose(self, rng, n_chains=n_chains, n_sweeps=n_sweeps, max_sweeps=max_sweeps,
                            method=method, n_rungs=n_rungs, beta_hot=beta_hot, ladder=ladder,
                            swap_rounds=swap_rounds)

    # ------------------------------------------------------------------ sampling
    def sample(
        self,
        n: int,
        rng: RngLike = 0,
        *,
        n_chains: int | None = None,
        sweeps_between: int | None = None,
        burn_in: int | None = None,
        return_diagnostics: bool = False,
        method: str = "gibbs",
        n_rungs: int | None = None,
        beta_hot: float = TEMPERING_BETA_HOT,
        ladder=None,
        swap_rounds: int = TEMPERING_SWAP_ROUNDS,
        resume: GibbsDiagnostics | None = None,
        progress: bool | None = None,
    ) -> np.ndarray | tuple[np.ndarray, GibbsDiagnostics | None]:
        """Draw ``n`` sequences by Gibbs sampling with the exact conditionals.

        ``n_chains`` independent chains (default ``min(n, 500)``) start from uniformly random
        sequences and are updated together, one site at a time, with incremental fields. After
        ``burn_in`` sweeps each chain saves a configuration every ``sweeps_between`` sweeps until
        ``n`` are collected. Unless both are given, they come from :meth:`gibbs_diagnostics`
        (measured integrated autocorrelation time, pilot run seeded from ``rng``).

        Parameters
        ----------
        method : {"gibbs", "tempering", "cluster", "auto"}
            ``"cluster"``: Swendsen-Wang updates of independent chains (ferromagnets of the Potts
            form, see :meth:`gibbs_diagnostics`).
            ``"tempering"``: parallel tempering (see :meth:`gibbs_diagnostics`); ``n_chains``
            replicas of the ladder (default ``min(n, max(16, 500 // len(ladder)))``) run side by
            side and each saves the configuration at its coldest rung (the model's beta). The
            ladder is the one the pilot run settled on, or the given ``ladder`` (else
            ``tempering_ladder(n_rungs, beta_hot)``) when ``sweeps_between`` and ``burn_in`` are
            both given; pass ``ladder=diagnostics.ladder`` and
            ``swap_rounds=diagnostics.swap_rounds`` to sample with what a pilot run measured.
            ``"auto"``: the method the pilot run chose (clusters for a ferromagnet, else Gibbs if
            it mixes, else tempering).
        resume : GibbsDiagnostics, optional
            Continue the chains where this pilot run of the model ended (e.g.
            ``tune_beta(..., return_result=True).diagnostics``), with its method, ladder and swap
            rounds, instead of starting new chains from random sequences: those chains passed the
            pilot's equilibration checks, so ``burn_in`` defaults to 0 and ``sweeps_between`` to
            the pilot's. ``n_chains`` (default: all of the pilot's) takes the first replicas;
            ``method``, ``n_rungs``, ``beta_hot``, ``ladder`` and ``swap_rounds`` are not used.
        progress : bool or None
            A progress bar on stderr over the pilot run's sweeps (when it runs), then over the
            sweeps that save samples; None: only when stderr is a terminal
            (:mod:`replica_mlm._base.progress`).

        Returns
        -------
        seqs : int array (n, L), or ``(seqs, diagnostics)`` if ``return_diagnostics`` (diagnostics
        is None when both ``sweeps_between`` and ``burn_in`` were given).
        """
        return sampling.draw(self, n, rng, n_chains=n_chains, sweeps_between=sweeps_between,
                        burn_in=burn_in, return_diagnostics=return_diagnostics, method=method,
                        n_rungs=n_rungs, beta_hot=beta_hot, ladder=ladder, swap_rounds=swap_rounds,
                        resume=resume, progress=shown(progress))


    def tune_beta(
        self,
        target_hamming: float = 0.3,
        rng: RngLike = 0,
        *,
        n_samples: int = 400,
        tol: float | None = None,
        max_iter: int = 30,
        method: str = "auto",
        n_replicas: int = 32,
        max_sweeps: int = 51200,
        swap_rounds: int = TEMPERING_SWAP_ROUNDS,
        beta_hot: float = TEMPERING_BETA_HOT,
        return_result: bool = False,
    ) -> float | TuneResult:
        """The inverse temperature at which sampled sequences differ at ``target_hamming`` of sites.

        The mean Hamming distance between independent samples falls from ``1 - 1/q``-ish at beta = 0
        towards 0 as beta grows.

        ``method="auto"`` or ``"tempering"`` (scan, verify, move;
        ``tuning.tune_with_tempering``; docs/potts.md, "Tuning the temperature"):
        parallel-tempering scans over ladders from ``min(beta_hot, beta)`` upwards, widened by
        factors of 2 until the mean Hamming distance at the rungs (cross-replica pairs, with
        jackknife errors) crosses the target, give a first beta by interpolation in
        ``log beta``. At that beta a pilot run (``n_replicas`` replicas of a ladder with equal
        predicted swap acceptance, or plain Gibbs chains if beta <= ``beta_hot``) must pass the
        mixing check (:meth:`gibbs_diagnostics`, at most ``max_sweeps`` recorded steps) and
        measure the Hamming distance with a standard error below ``tol / 3``. Where undecided,
        longer runs continue the same chains, up to ``max_sweeps``, then more replicas (copies
        of the chains, burnt in apart), up to 4x. If it is more than ``tol + 2 se`` from the
        target, the recorded run is reweighted to the beta where it predicts the target (while
        the weights' effective fraction stays above 1/2; else a Newton step in ``log beta``),
        and the next run continues the chains there (at most ``max_iter`` runs).
        ``max_sweeps`` is 51200 by default: on ``PottsModel.random(L=20, q=20)`` the slow mode
        at Hamming 0.3 (hops between a few far-apart groups of sequences, carried through the
        ladder's hot rungs) gives tau = 20-60 steps, and se <= tol / 3 then takes runs of this
        length (benchmarks/README.md).
        ``n_samples`` is not used by this method; ``tol`` defaults to 0.01.

        ``method="gibbs"``: bisection on ``log beta`` (after bracketing upwards from the model's
        beta by factors of sqrt 2), each trial drawing ``n_samples`` sequences with plain Gibbs
        from the same seed (common random numbers), until the measured distance is within ``tol``
        (default 0.005) of the target; raises where Gibbs stops mixing (800 pilot sweeps at most).

        The model itself is not changed: use :meth:`with_beta`. Raises ValueError if the sampler
        does not mix at the target or the target is not reached.

        Returns
        -------
        beta : float, or a :class:`~replica_mlm.potts.tuning.TuneResult` (beta, the
        measured Hamming distance and its standard error, the final pilot run's diagnostics, the
        trials and scans) if ``return_result``.

        Measured on ``PottsModel.random(L=20, q=20, seed=s)``, s = 0..9, target 0.3: see
        benchmarks/README.md, "tune_beta with parallel tempering" (``benchmarks/bench_tempering.py``).
        """
        return tuning.tune(self, target_hamming, rng, n_samples=n_samples, tol=tol, max_iter=max_iter,
                    method=method, n_replicas=n_replicas, max_sweeps=max_sweeps,
                    swap_rounds=swap_rounds, beta_hot=beta_hot, return_result=return_result)
