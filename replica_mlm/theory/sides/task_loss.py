"""The loss a task is learnt with when none is named (the defaults of ``rm.solve`` and ``rm.simulate``)."""

from __future__ import annotations


def default_loss(task) -> str:
    """The loss ``task`` is learnt with when none is named: its ``default_loss``
    (:class:`~replica_mlm.tasks.protocol.Task`), the one source of the defaults of
    :func:`replica_mlm.solve` and :func:`replica_mlm.simulate`.

    ``"square"`` for a Gaussian site (MaskedSite, Spectrum, limit); for a
    :class:`~replica_mlm.tasks.potts_site.PottsSite` ``"cross_entropy"`` with its softmax channel,
    ``"square"`` with the gaussian one; for a :class:`~replica_mlm.PottsModel` (what ``simulate``
    learns a site of) ``"cross_entropy"`` for q > 2 colours, ``"logistic"`` for an Ising model.

    Raises
    ------
    TypeError
        If ``task`` names no default loss (it is not a task).
    """
    loss = getattr(task, "default_loss", None)
    if not isinstance(loss, str):
        raise TypeError("task must be a learning task with a `default_loss` name (a MaskedSite, "
                        f"Spectrum, GaussianPotts limit, PottsSite or PottsModel), got {type(task).__name__}")
    return loss
