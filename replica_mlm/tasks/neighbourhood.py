"""Which sites the local theory of a masked site treats exactly: its neighbourhood.

docs/discrete.md, section "Sparse couplings". The rule, on the couplings ``J_i.`` of site ``i``:

1. the coupled sites are those with ``|J_ij| > COUPLED * max_j |J_ij|``; if they are more than
   :data:`SPARSE` of the other sites, the couplings are dense and the neighbourhood is empty (the
   local theory is then the label-only mixture);
2. if all of them fit, they are the neighbourhood: they fit when the clusters (the label times the
   neighbourhood's configurations, ``q^(|N| + 1)``) number at most :data:`MAX_CLUSTERS`;
3. otherwise the strongest that fit are taken if they carry at least :data:`SHARE` of the site's
   squared couplings ``sum_j J_ij^2`` (the teacher field is then mostly theirs);
4. otherwise the couplings are dense and the neighbourhood is empty: the local theory is then the
   label-only mixture.

A count (the strongest ``n`` coupled sites, ties broken by the lower index) or a list of sites
overrides the rule (:func:`neighbourhood`).
"""

from __future__ import annotations

import numpy as np

from replica_mlm._base import checks as _checks

#: couplings below this fraction of the site's largest are no coupling
COUPLED = 1e-12
#: the most clusters (label x neighbourhood configurations) the rule lets the neighbourhood make
MAX_CLUSTERS = 1024
#: the largest fraction of the other sites a sparse site is coupled to
SPARSE = 0.5
#: the share of the site's squared couplings the strongest sites must carry to be its neighbourhood
SHARE = 0.9


def _largest_count(q: int) -> int:
    """The most neighbours whose clusters ``q^(n + 1)`` number at most :data:`MAX_CLUSTERS`."""
    n = 0
    while q ** (n + 2) <= MAX_CLUSTERS:
        n += 1
    return n


def neighbourhood(couplings: np.ndarray, i: int, q: int, neighbours=None) -> tuple[int, ...]:
    """The neighbourhood of site ``i`` (sorted site indices), by the module's rule or ``neighbours``.

    Parameters
    ----------
    couplings : ndarray (L, L)
        The model's ``J``.
    i : int
        The masked site.
    q : int
        Colours per site.
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
        fit = _largest_count(q)
        if len(coupled) > SPARSE * (L - 1):
            return ()
        if len(coupled) <= fit:
            return tuple(sorted(coupled))
        share = float(np.sum(J[coupled[:fit]] ** 2) / np.sum(J[coupled] ** 2))
        return tuple(sorted(coupled[:fit])) if share >= SHARE else ()
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


def check_size(q: int, sites: tuple[int, ...]) -> None:
    """ValueError if the clusters of a neighbourhood cannot be held (``q^(|N| + 1)`` beyond 2^20)."""
    if float(q) ** (len(sites) + 1) > 2**20:
        raise ValueError(f"a neighbourhood of {len(sites)} sites with q = {q} colours makes "
                         f"{q}^{len(sites) + 1} clusters; at most 2^20 can be held: choose fewer neighbours")


__all__ = ["MAX_CLUSTERS", "SHARE", "SPARSE", "check_size", "neighbourhood"]
