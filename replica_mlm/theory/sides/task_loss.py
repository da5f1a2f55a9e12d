"""The loss a task is learnt with when none is named (the defaults of ``rm.solve`` and ``rm.simulate``)."""

from __future__ import annotations


def default_loss(task) -> str:
    """The loss ``task`` is learnt with when none is named: the one source of the defaults of
    :func:`replica_mlm.solve` and :func:`replica_mlm.simulate`.

    A :class:`~replica_mlm.tasks.potts_site.PottsSite`: ``"cross_entropy"`` with its softmax
    channel, ``"square"`` with the gaussian one (the pairs its multi-class theory solves). A
    :class:`~replica_mlm.PottsModel` (what ``simulate`` learns a site of): ``"cross_entropy"`` for
    q > 2 colours (the task of its ``masked_site``), ``"logistic"`` for an Ising model (its
    pseudo-likelihood, the only loss simulated there). Anything else: ``"square"``.
    """
    from replica_mlm.potts.model import PottsModel
    from replica_mlm.tasks.potts_site import PottsSite

    if isinstance(task, PottsSite):
        return "cross_entropy" if task.channel == "softmax" else "square"
    if isinstance(task, PottsModel):
        return "cross_entropy" if task.q > 2 else "logistic"
    return "square"
