"""The two sides of a replica-symmetric saddle point, as interfaces (docs/architecture.md, section
"The sides of a saddle point").

A saddle point is a fixed point between two sides, which meet only through the order parameters
and their conjugates:

* the **channel side** (what the data and the loss do): from the student's overlaps it gives the
  conjugates (the "hats") by integrals over the fields of one sample, and at the solution the test
  error, the test loss and the training loss;
* the **prior side** (what the penalty and the covariance do): from the hats it gives the overlaps
  in closed form over the modes of the covariance, and the estimation error.

A problem (:class:`replica_mlm.theory.solvers.engine.Problem` for scalar overlaps,
:class:`replica_mlm.theory.solvers.multiclass.MatrixProblem` for K x K ones) composes one of each
with the packing of the unknowns, on the one fixed-point driver (:mod:`.fixed_point`); the
Bayes-optimal fixed point (:class:`replica_mlm.theory.solvers.nishimori.Problem`) composes a
:class:`BayesChannelSide` and a :class:`BayesPriorSide` on one unknown. A new theory variant is a
new side: one class with these methods, in one file.

Scalar overlaps ``(V, q, m)``; K x K overlaps ``(V, Q, M)`` with the same meaning per output.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class ChannelSide(Protocol):
    """The channel side of a scalar saddle point.

    Attributes
    ----------
    name : str
        The label channel's name, as results report it (``"gaussian"``, ``"sign"``, ``"mixture"``).
    loss : replica_mlm.theory.sides.losses.Loss
        The loss the estimator minimises.
    """

    name: str
    loss: object

    def hats(self, alpha: float, V: float, q: float, m: float) -> dict[str, float]:
        """``V_hat, q_hat, m_hat`` and the mean training loss (key ``train_loss``) at ``(V, q, m)``."""

    def error(self, q: float, m: float) -> float:
        """The channel's natural test error at the overlaps."""

    def test_loss(self, q: float, m: float) -> float:
        """``E loss(y, w_hat . x)`` on a fresh sample at the overlaps."""


@runtime_checkable
class PriorSide(Protocol):
    """The prior side of a scalar saddle point.

    Attributes
    ----------
    spec : replica_mlm.tasks.spectrum.Spectrum
        The modes the overlaps are summed over (``spec.rho``: the teacher's signal, ``spec.noise``).
    lam : float
        The penalty's strength.
    """

    spec: object
    lam: float

    def overlaps(self, V_hat: float, q_hat: float, m_hat: float) -> tuple[float, float, float]:
        """``(V, q, m)`` at the hats."""

    def estimation_error(self, V_hat: float, q_hat: float, m_hat: float) -> float:
        """``E |w_hat - w*|^2`` at the hats."""


@runtime_checkable
class MatrixChannelSide(Protocol):
    """The channel side of a K x K saddle point (a multi-class site, a q-cluster mixture).

    Optional, for Newton's method (K = 1, with a prior side giving ``overlaps_jacobian``):
    ``hats_jacobian(alpha, V, Q, M) -> (hats, J)``, J the derivatives of ``(V_hat, Q_hat,
    M_hat...)`` in ``(V, Q, M...)`` (:meth:`.local_clusters.LocalClusters.hats_jacobian`)."""

    def hats(self, alpha: float, V, Q, M) -> dict:
        """``V_hat, Q_hat, M_hat`` and the mean training loss (key ``train_loss``) at ``(V, Q, M)``."""

    def cold_hats(self, alpha: float) -> dict:
        """The hats the cold start puts into the prior side."""


@runtime_checkable
class MatrixPriorSide(Protocol):
    """The prior side of a K x K saddle point.

    Optional, for Newton's method: ``overlaps_jacobian(h) -> ((V, Q, M), J)``, J the derivatives of
    ``(V, Q, M...)`` in ``(V_hat, Q_hat, M_hat...)`` (:meth:`.prior.RidgeMeansPrior.overlaps_jacobian`)."""

    lam: float

    def overlaps(self, h: dict):
        """``(V, Q, M)`` at the hats ``h``."""

    def estimation_error(self, h: dict) -> float:
        """``E |W - W*|_F^2`` at the hats ``h``."""


@runtime_checkable
class BayesChannelSide(Protocol):
    """The channel side of the Bayes-optimal saddle point, on the Nishimori line (``m = q``,
    ``V = rho - q``): one conjugate."""

    def hat(self, alpha: float, q: float, V: float) -> float:
        """``q_hat`` at ``(q, V)``."""

    def error(self, q: float, V: float) -> float:
        """The channel's natural test error of the posterior mean."""

    def test_loss(self, q: float, V: float) -> float:
        """The predictive log-loss."""


@runtime_checkable
class BayesPriorSide(Protocol):
    """The prior side of the Bayes-optimal saddle point."""

    spec: object

    def overlaps(self, q_hat: float) -> tuple[float, float]:
        """``(q, V)`` at ``q_hat``."""

    def estimation_error(self, q_hat: float) -> float:
        """The minimum mean squared error of the teacher."""
