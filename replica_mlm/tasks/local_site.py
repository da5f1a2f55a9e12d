"""What a masked site of a Potts model carries for its discrete theories: its neighbourhood, its
local data model and the validity of each theory.

docs/discrete.md, sections "Sparse couplings" and "When a theory holds". :class:`DiscreteSite` is
shared by the Ising site (:class:`.ising_site.IsingSite`) and the q-colour site
(:class:`.potts_site.ModelPottsSite`); each says how its inputs are built from sequences.
"""

from __future__ import annotations

import warnings
from functools import cached_property

import numpy as np

from replica_mlm.tasks import bayes_error
from replica_mlm.tasks import neighbourhood as _nbh
from replica_mlm.tasks.local_mixture import ClusterMixture, cluster_mixture
from replica_mlm.tasks.rest_states import RestStates, rest_states
from replica_mlm.tasks.validity import Validity, judge

#: sequences per chunk when the site's conditionals are computed over all configurations
CHUNK = 2**15
#: sampled sequences per cluster and Gaussian input below which the local mixture warns: the band at
#: L = 400 (64 clusters, 395 inputs) needed about 3 (80 000 sequences) for its prediction to come
#: within 3 SE; 0.8 (20 000) left it 3-9 SE off. A floor, not enough: the 3-regular Ising glass at
#: 13 still sat 3.9 SE low in test loss, within 1.0 SE on 100 000 sequences (docs/discrete.md,
#: "Sparse couplings"). Measured before the means' noise was taken out of the theory (section
#: "Sampled cluster means"); kept, since the clusters' weights (and own covariances) still spread
#: and move the prediction on fewer sequences
SAMPLES_PER_CLUSTER_INPUT = 3


class DiscreteSite:
    """The discrete theories' view of a site: set up by :meth:`_set_site` from the model, the site
    index, the neighbourhood override and the measured moments (which keep the sampled sequences).

    Subclasses provide ``_inputs(seqs, prob)`` (the inputs x of the sequences, as the theories see
    them), ``_block`` (coordinates per site) and ``_moments`` (the measured covariance record).
    """

    _block = 1

    def _set_site(self, model, site: int, neighbours) -> None:
        self._model, self._site = model, site
        sites = _nbh.neighbourhood(model.couplings, site, neighbours)
        if len(sites) >= model.L - 1:
            raise ValueError(f"a neighbourhood of all {model.L - 1} other sites leaves no input to be "
                             "Gaussian: the local theory needs fewer neighbours")
        self._neighbourhood = sites

    @property
    def neighbourhood(self) -> tuple[int, ...]:
        """The sites the local theory treats exactly (:mod:`replica_mlm.tasks.neighbourhood`'s rule,
        or the ``neighbours=`` of ``masked_site``)."""
        return self._neighbourhood

    def _sequences(self) -> tuple[np.ndarray, np.ndarray | None]:
        """All sequences with their probabilities (exact), or the sampler's sequences and None."""
        model, moments = self._model, self._moments
        if moments.method == "exact":
            return model.all_sequences(), model.boltzmann_probabilities()
        if moments.sequences is None:
            raise ValueError("the site's moments keep no sequences: measure them with the sampler")
        return np.asarray(moments.sequences, dtype=np.int64), None

    def _fixed_coordinates(self) -> np.ndarray:
        """The coordinates of x that belong to the neighbourhood (site-major, ``_block`` each)."""
        others = [j - (j > self._site) for j in self._neighbourhood]
        b = self._block
        return np.array([k * b + r for k in others for r in range(b)], dtype=np.int64)

    @cached_property
    def local_mixture(self) -> ClusterMixture:
        """The local data model: clusters ``(s_i, s_N(i))`` with exact weights, means and the pooled
        covariance beyond the neighbourhood (:func:`replica_mlm.tasks.local_mixture.cluster_mixture`);
        when the neighbourhood's configurations are too many (:func:`.neighbourhood.grouped`), clusters
        ``(s_i, b)`` of the label and the bin ``b`` of the teacher field the neighbourhood makes
        (:func:`field_bins`), the neighbourhood's inputs then Gaussian within a bin. Where the rest of
        the sequence is in one of two ordered states (:attr:`rest_states`), each cluster is split by
        that state (:mod:`replica_mlm.tasks.rest_states`)."""
        return self._local_mixture(own_covariances=False)

    @cached_property
    def local_mixture_own_covariances(self) -> ClusterMixture:
        """:attr:`local_mixture` with each cluster's own covariance measured beside the pooled one
        (:attr:`replica_mlm.tasks.local_mixture.ClusterMixture.covariances`): the data model of
        ``rm.solve(..., theory="local", covariance="cluster")``."""
        return self._local_mixture(own_covariances=True)

    def _local_mixture(self, *, own_covariances: bool) -> ClusterMixture:
        seqs, prob = self._sequences()
        nb = list(self._neighbourhood)
        labels = np.asarray(seqs[:, self._site], dtype=np.int64)
        x = self._inputs(seqs, prob)
        if not _nbh.grouped(self._model.q, self._neighbourhood):
            split = self.rest_states
            mixture = cluster_mixture(x, labels, seqs[:, nb], classes=self._model.q,
                                      fixed=self._fixed_coordinates(), teacher=self.teacher,
                                      probabilities=prob,
                                      states=split.states if split is not None and split.split else None,
                                      own_covariances=own_covariances)
        else:
            bins = field_bins(self._model, self._site, nb, seqs, prob)
            mixture = cluster_mixture(x, labels, bins[:, None], classes=self._model.q,
                                      fixed=np.zeros(0, np.int64), teacher=self.teacher, probabilities=prob,
                                      binned=True, own_covariances=own_covariances)
        _warn_if_few_samples(mixture)
        return mixture

    @cached_property
    def rest_states(self) -> RestStates | None:
        """The ordered-states rule on the rest beyond the neighbourhood
        (:func:`replica_mlm.tasks.rest_states.rest_states`): None where it does not apply (an empty
        neighbourhood, where the local theory is the label-only mixture, or configurations grouped by
        their teacher field)."""
        if not self._neighbourhood or _nbh.grouped(self._model.q, self._neighbourhood):
            return None
        seqs, prob = self._sequences()
        x = self._inputs(seqs, prob)
        keys = np.concatenate([seqs[:, [self._site]], seqs[:, list(self._neighbourhood)]], axis=1)
        clusters = np.unique(keys, axis=0, return_inverse=True)[1].ravel()
        free = np.setdiff1d(np.arange(x.shape[1]), self._fixed_coordinates())
        return rest_states(x, clusters.astype(np.int64), free, probabilities=prob)

    def _site_bayes_error(self) -> tuple[float, float]:
        seqs, prob = self._sequences()
        logits = np.concatenate([self._model.logits(seqs[k:k + CHUNK])[:, self._site, :]
                                 for k in range(0, seqs.shape[0], CHUNK)])
        return bayes_error.site_error(logits, prob)

    @cached_property
    def _bayes_site(self) -> tuple[float, float]:
        return self._site_bayes_error()

    def _model_bayes_error(self, theory: str) -> float:
        if theory == "local":
            return self.local_mixture.bayes_error()
        if theory == "mixture":
            return as_clusters(self.mixture).bayes_error()
        return self._gaussian_bayes_error()

    def validity(self, theory: str = "mixture") -> Validity:
        """Whether ``theory`` (``"gaussian"``, ``"mixture"`` or ``"local"``) can describe this site: the
        Bayes error of its data model against the site's true Bayes error
        (:class:`replica_mlm.tasks.validity.Validity`, docs/discrete.md, section "When a theory holds")."""
        from replica_mlm._base import checks as _checks

        theory = _checks.choice(theory, ("gaussian", "mixture", "local"), "theory")
        site, stderr = self._bayes_site
        return judge(theory, self._model_bayes_error(theory), site, stderr)

    def checked_validity(self, theory: str) -> Validity:
        """:meth:`validity` computed once per theory, warning once (RuntimeWarning) if not ok: what
        every discrete result carries as ``valid``."""
        cache = self.__dict__.setdefault("_validities", {})
        if theory not in cache:
            cache[theory] = self.validity(theory)
            cache[theory].warn()
        return cache[theory]


#: bins of the teacher field when the neighbourhood's configurations are grouped
FIELD_BINS = 64


def field_bins(model, site: int, sites: list, seqs: np.ndarray, prob) -> np.ndarray:
    """The bin of each sequence's neighbourhood field ``beta sum_{j in N} J_ij U[:, s_j]`` (a q-vector,
    centred over the colours: the softmax ignores a common shift): k-means with :data:`FIELD_BINS`
    centres (scikit-learn, weighted by the probabilities, fixed seed), fewer if fewer distinct fields."""
    from sklearn.cluster import KMeans

    J = model.couplings[site, sites]
    field = model.beta * np.einsum("j,qnj->nq", J, model.colours[:, seqs[:, sites]])
    field -= field.mean(axis=1, keepdims=True)
    distinct = np.unique(np.round(field, 12), axis=0).shape[0]
    k = min(FIELD_BINS, distinct)
    if k <= 1:
        return np.zeros(seqs.shape[0], dtype=np.int64)
    km = KMeans(n_clusters=k, n_init=4, random_state=0).fit(field, sample_weight=prob)
    return km.labels_.astype(np.int64)


def as_clusters(mixture) -> ClusterMixture:
    """A label-only Gaussian mixture (:class:`.mixture.GaussianMixture`) as a cluster mixture with an
    empty neighbourhood: one cluster per class."""
    K = mixture.K
    return ClusterMixture(weights=mixture.weights, labels=np.arange(K), configurations=np.zeros((K, 0), int),
                          means=mixture.means, covariance=mixture.covariance,
                          fixed=np.zeros(0, dtype=np.int64), classes=K, teacher=mixture.teacher,
                          method=mixture.method, n_samples=mixture.n_samples,
                          regularisation=mixture.regularisation)


def samples_needed(mixture: ClusterMixture) -> int:
    """The sampled sequences a local mixture needs: :data:`SAMPLES_PER_CLUSTER_INPUT` per cluster and
    Gaussian input (fewer, and the sampling of its clusters spreads and moves the prediction;
    docs/discrete.md, "Sampled cluster means"). Zero for an exact mixture."""
    return SAMPLES_PER_CLUSTER_INPUT * mixture.C * mixture.free.size if mixture.method == "samples" else 0


def _warn_if_few_samples(mixture: ClusterMixture) -> None:
    """A RuntimeWarning when a sampled local mixture has fewer sequences than
    :func:`samples_needed`."""
    need = samples_needed(mixture)
    if mixture.n_samples < need:
        warnings.warn(f"the local theory's cluster means rest on {mixture.n_samples} sampled sequences for "
                      f"{mixture.C} clusters in {mixture.free.size} Gaussian inputs "
                      f"({mixture.n_samples / (mixture.C * mixture.free.size):.2g} per cluster and input, "
                      f"below the floor of {SAMPLES_PER_CLUSTER_INPUT}): measure the site with "
                      f"masked_site(..., samples={need}) or more, 100 000 at the least for a site of 100 "
                      f"spins or more (docs/discrete.md, \"Sparse couplings\")",
                      RuntimeWarning, stacklevel=3)


__all__ = ["DiscreteSite", "as_clusters", "samples_needed"]

