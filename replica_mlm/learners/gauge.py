"""The zero-sum gauge of a coupling tensor's ``q x q`` blocks: one place for the double centring
used by the couplings' gauge (:func:`replica_mlm.learners.attention.zero_sum_gauge`), the contact
scores (:func:`replica_mlm.proteins.contacts.coupling_scores`) and factored attention's mean-field
start (docs/proteins.md, "Contacts")."""

from __future__ import annotations

import numpy as np

__all__ = ["double_centre_in_place"]


def double_centre_in_place(W: np.ndarray) -> np.ndarray:
    """``W_ij[a, b] -> W_ij[a, b] - mean_a - mean_b + mean_ab`` over the last two axes, written
    over ``W`` (a float array of the caller's, any leading shape, a view allowed), which is
    returned: the same operations in the same order as ``W - mean_a - mean_b + mean_ab``."""
    means = (W.mean(axis=-2, keepdims=True), W.mean(axis=-1, keepdims=True),
             W.mean(axis=(-2, -1), keepdims=True))
    W -= means[0]
    W -= means[1]
    W += means[2]
    return W
