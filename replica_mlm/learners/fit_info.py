"""How a fit of a Potts-data learner went: :class:`FitInfo`, shared by factored attention
(:mod:`.attention_fit`) and the full-coupling pseudo-likelihood fit (:mod:`.plm`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class FitInfo:
    """How a fit went.

    Attributes
    ----------
    variant, method : str
        ``"linear"``/``"softmax"`` (``"full"`` for ``FullCouplingPotts``) and ``"lbfgs"``/``"sgd"``.
    lam : float
        Regularisation strength (see the module docstring for its scaling).
    n_iter : int
        L-BFGS iterations (plus Newton iterations, see ``newton_iter``) or SGD epochs.
    converged : bool
        Factored attention: the final point is stationary, ``stationarity <= gtol`` (measured,
        for every method). ``FullCouplingPotts``: L-BFGS stopped on its gradient or ``tol`` rule.
    message : str
        The optimisers' messages (``FullCouplingPotts``: why L-BFGS stopped, ``"gradient"``,
        ``"objective"``, ``"max_iter"`` or ``"other"``, :func:`replica_mlm.learners.quasi_newton.lbfgs`).
    objective : float
        Final value of the penalised objective ``F``.
    train_loss : float
        Unpenalised MLM loss on the training sequences.
    history : ndarray
        Training MLM loss after each iteration (L-BFGS, then Newton) or epoch (SGD).
    monitor_history : ndarray
        MLM loss on ``monitor`` sequences at the same points (empty if none were given).
    logits : ndarray or None
        Softmax variant: the fitted attention logits ``S`` (L, L).
    gradient_norm : float or None
        ``|grad F|`` (Euclidean, per training sequence) at the returned parameters ``x`` (for
        ``FullCouplingPotts``: of its own objective, at the couplings L-BFGS returned).
    stationarity : float or None
        ``|grad F| max(|x|, 1)``: a bound on the first-order change of ``F`` (nats per sequence)
        under any move of the parameters by up to their own size.
    newton_iter : int
        Trust-region Newton-CG iterations after L-BFGS (linear variant; 0 if none were needed).
    init : str
        ``"random"`` or ``"mean-field"``.
    """

    variant: str
    method: str
    lam: float
    n_iter: int
    converged: bool
    message: str
    objective: float
    train_loss: float
    history: np.ndarray = field(repr=False)
    monitor_history: np.ndarray = field(repr=False)
    logits: np.ndarray | None = field(default=None, repr=False)
    gradient_norm: float | None = None
    stationarity: float | None = None
    newton_iter: int = 0
    init: str = "random"
