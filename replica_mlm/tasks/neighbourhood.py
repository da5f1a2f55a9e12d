"""Which sites the local theory of a masked site treats exactly: its neighbourhood.

docs/discrete.md, section "Sparse couplings". The rule, on the couplings ``J_i.`` of site ``i``:

1. the coupled sites are those with ``|J_ij| > COUPLED * max_j |J_ij|``;
2. if they are more than :data:`SPARSE` of the other sites, the couplings are dense and the
   neighbourhood is empty (the local theory is then the label-only mixture);
3. otherwise they are the neighbourhood. When their configurations are too many to be clusters of
   their own (``q^|N|`` above :data:`MAX_CONFIGURATIONS`), the local data model groups them by the
   teacher field they make (:func:`replica_mlm.tasks.local_site.field_bins`).

A count (the strongest ``n`` coupled sites, ties broken by the lower index) or a list of sites
overrides the rule (:func:`neighbourhood`).
"""

from __future__ import annotations

import numpy as np

from replica_mlm._base import checks as _checks

#: couplings below this fraction of the site's largest are no coupling
COUPLED = 1e-12
#: the most neighbourhood configurations that are clusters of their own (with the label: at most
#: 1024 clusters for q = 4); beyond, configurations are grouped by their teacher field
MAX_CONFIGURATIONS = 256
#: the largest fraction of the other sites a sparse site is coupled to
SPARSE = 0.5


def neighbourhood(couplings: np.ndarray, i: int, neighbours=None) -> tuple[int, ...]:
    """The neighbourhood of site ``i`` (sorted site indices), by the module's rule or ``neighbours``.

    Parameters
    ----------
    couplings : ndarray (L, L)
        The model's ``J``.
    i : int
        The masked site.
    neighbours : None, int or sequence of int
        None: the rule. An int ``n >= 0``: the ``n`` sites most strongly coupled to ``i`` (by
        ``|J_ij|``, ties by index). A sequence: those sites (distinct, not ``i``).
    """
    J = np.abs(np.asarray(couplings[i], dtype=float))
    L = J.size
    order = sorted((j for j in range(L) if j != i), key=lambda j: (-J[j], j))
    if neighbours is None:
        top = J.max() if L > 1 else 0.0
        coupled = [j for j in order if top > 0 and J[j] > COUPLED * top]
        return () if len(coupled) > SPARSE * (L - 1) else tuple(sorted(coupled))
    if isinstance(neighbours, (int, np.integer)) and not isinstance(neighbours, bool):
        n = int(neighbours)
        if not 0 <= n <= L - 1:
            raise ValueError(f"neighbours must be a count in [0, {L - 1}] (the other sites), got {n}")
        return tuple(sorted(order[:n]))
    if isinstance(neighbours, (str, bytes, bool, float)) or not _checks.is_sequence(neighbours):
        raise TypeError(f"neighbours must be None, a count (int) or a sequence of site indices, got "
                        f"{type(neighbours).__name__}")
    sites = [_checks.site_index(j, L, name="each site of neighbours") for j in neighbours]
    if i in sites or len(set(sites)) != len(sites):
        raise ValueError(f"neighbours must be distinct sites other than the masked site {i}, got "
                         f"{list(neighbours)}")
    return tuple(sorted(sites))


def grouped(q: int, sites: tuple[int, ...]) -> bool:
    """Whether the neighbourhood's configurations are grouped by their teacher field (more than
    :data:`MAX_CONFIGURATIONS` of them)."""
    return float(q) ** len(sites) > MAX_CONFIGURATIONS


__all__ = ["MAX_CONFIGURATIONS", "SPARSE", "grouped", "neighbourhood"]
