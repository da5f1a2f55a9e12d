"""Argument checks of :func:`replica_mlm.fit_potts` (docs/proteins.md): the alignment, the
sequence weights, the identity threshold, the start of the factored model, the mean-field
pseudocount."""

from __future__ import annotations

import numpy as np

from replica_mlm._base import checks as _checks
from replica_mlm._base.checks import positive, positive_int
from replica_mlm.potts.model import check_sequences

#: pseudocount of the mean-field couplings when ``pseudocount`` is not given
DEFAULT_PSEUDOCOUNT = 0.5


def pseudocount_option(pseudocount, method: str, origin) -> float:
    """The mean-field pseudocount (:data:`DEFAULT_PSEUDOCOUNT` if None), refused where unused."""
    if pseudocount is None:
        return DEFAULT_PSEUDOCOUNT
    if method != "mean-field" and not (isinstance(origin, str) and origin == "mean-field"):
        raise ValueError("pseudocount applies to method='mean-field' and init='mean-field' only; "
                         f"leave it None for method={method!r}")
    lam = _checks.as_scalar(pseudocount, "pseudocount")
    if not 0 <= lam < 1:
        raise ValueError(f"pseudocount must be in [0, 1), got {lam}")
    return lam


def init_arrays(init, L: int, q: int) -> tuple[np.ndarray, np.ndarray]:
    if hasattr(init, "couplings") and hasattr(init, "fields"):
        J, h = init.couplings, init.fields
    elif isinstance(init, np.ndarray):
        J, h = init, np.zeros((L, q))
    else:
        raise TypeError(f"init must be a PottsFit or an (L, L, q, q) array, got {type(init).__name__}")
    J = _checks.finite_array(J, "init couplings", ndim=4)
    if J.shape != (L, L, q, q) or np.shape(h) != (L, q):
        raise ValueError(f"init must have couplings of shape ({L}, {L}, {q}, {q}) (this msa), got {J.shape}")
    return J, np.asarray(h, dtype=float)


def alphabet_size(msa) -> int:
    if isinstance(msa, np.ndarray | list | tuple | str | bytes) or not hasattr(msa, "q"):
        raise TypeError(f"msa must be an MSA (with .sequences and .q), got {type(msa).__name__}")
    q = positive_int(msa.q, "msa.q")
    if q < 2:
        raise ValueError(f"msa.q must be >= 2, got {q}")
    return q


def checked_sequences(msa, L: int, q: int) -> np.ndarray:
    if alphabet_size(msa) != q or not hasattr(msa, "sequences"):
        raise ValueError(f"msa must be an alignment of q = {q} colours with .sequences")
    return check_sequences(msa.sequences, L=L, q=q, name="msa.sequences")


def identity_option(reweight) -> float | None:
    if reweight is None:
        return None
    value = positive(reweight, "reweight")
    if value > 1.0:
        raise ValueError(f"reweight must be an identity threshold in (0, 1] or None, got {value}")
    return value


def checked_weights(weights, N: int, *, name: str = "weights") -> np.ndarray:
    w = _checks.finite_array(weights, name, ndim=1)
    if w.shape != (N,):
        raise ValueError(f"{name} must have shape ({N},), one per sequence, got {w.shape}")
    if np.any(w <= 0.0):
        raise ValueError(f"{name} must be positive")
    return w
