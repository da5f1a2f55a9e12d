"""rm.fit_potts (issue 24): plmDCA and H-head factored attention on an alignment.

The alignment is a stand-in with the contract's attributes (``.sequences``, ``.q``, ``.L``, ``.N``,
``.weights(identity=)``), filled with sequences sampled from a known sparse Potts model.
"""

from __future__ import annotations

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.learners.attention import zero_sum_gauge
from replica_mlm.learners.plm_objective import PseudoLikelihood, pseudo_nll
from replica_mlm.learners.quasi_newton import lbfgs
from replica_mlm.proteins.contacts import coupling_scores
from replica_mlm.proteins.factored_fit import FactoredProblem
from replica_mlm.proteins.fit_convergence import plm_block_gradient, plm_certificate
from replica_mlm.proteins.plm_fit import PLMProblem
from replica_mlm.proteins.potts_fit import PLM_TOL, symmetric_zero_sum
from replica_mlm.proteins.softmax_factored import SoftmaxFactoredProblem


class StandInMSA:
    """The contract's MSA attributes; ``weights`` returns the given array (default: ones)."""

    def __init__(self, sequences, q, weights=None):
        self.sequences = np.asarray(sequences)
        self.q = q
        self.N, self.L = self.sequences.shape
        self._w = np.ones(self.N) if weights is None else np.asarray(weights, dtype=float)

    def weights(self, identity=0.8):
        return self._w.copy()


L_TRUE, Q_TRUE = 9, 4
#: the true contacts: a chain i - i+1 and two long-range pairs
CONTACTS = [(i, i + 1) for i in range(L_TRUE - 1)] + [(0, 5), (2, 7)]


@pytest.fixture(scope="module")
def sampled():
    gen = np.random.default_rng(3)
    J = np.zeros((L_TRUE, L_TRUE))
    for i, j in CONTACTS:
        J[i, j] = J[j, i] = gen.choice([-1.0, 1.0]) * gen.uniform(0.8, 1.2)
    U = np.eye(Q_TRUE) * 1.5 - 0.5
    model = rm.PottsModel(couplings=J, colours=U, beta=1.0)
    seqs = model.sample(1500, rng=1, n_chains=100, sweeps_between=3, burn_in=100)
    return J, StandInMSA(seqs, Q_TRUE, weights=gen.uniform(0.3, 1.0, seqs.shape[0]))


def _finite_difference_check(problem, x, gen, eps=1e-5):
    _, g = problem.loss_grad(x)
    d = gen.standard_normal(x.size)
    numeric = (problem.loss_grad(x + eps * d)[0] - problem.loss_grad(x - eps * d)[0]) / (2 * eps)
    assert numeric == pytest.approx(float(g @ d), rel=1e-6)
    for k in gen.choice(x.size, 12, replace=False):
        e = np.zeros(x.size)
        e[k] = eps
        numeric = (problem.loss_grad(x + e)[0] - problem.loss_grad(x - e)[0]) / (2 * eps)
        assert numeric == pytest.approx(g[k], rel=1e-6, abs=1e-6 * np.max(np.abs(g)))


def _data(gen, M=30, L=5, q=4):
    s = gen.integers(0, q, (M, L))
    s[1] = s[0]  # a duplicate: merged with the weights added
    w = gen.uniform(0.5, 2.0, M)
    return PseudoLikelihood(s, w, q), s, w


def test_plm_gradient_matches_finite_differences():
    gen = np.random.default_rng(0)
    data, _, _ = _data(gen)
    problem = PLMProblem(data, lambda_h=0.03, lambda_J=0.05)
    x = gen.standard_normal(problem.size) * 0.5
    _finite_difference_check(problem, x, gen)


def test_plm_objective_in_the_span_is_plmdca_objective():
    """F(x) = weighted pseudo-nll + lambda_h |h|^2 + (lambda_J / 2) sum_{i != j} |W_ij|^2 at unpack(x)."""
    gen = np.random.default_rng(5)
    data, s, w = _data(gen)
    problem = PLMProblem(data, lambda_h=0.03, lambda_J=0.05)
    x = gen.standard_normal(problem.size)
    h, W = problem.unpack(x)
    assert np.all(W[np.arange(5), np.arange(5)] == 0.0)
    expected = pseudo_nll(W, h, s, w) + 0.03 * np.sum(h**2) + 0.025 * np.sum(W**2)
    assert problem.loss_grad(x)[0] == pytest.approx(expected, rel=1e-12)


def test_plm_blocks_of_sites_are_independent_parts_of_the_objective():
    """F, its gradient, the couplings and the certificate's |grad F|^2 are sums (or pieces) over blocks
    of sites: plmDCA's per-site objectives, which the fit minimises site by site. Both sides of
    the Gram matrix: fewer distinct sequences than one-hot states, and more."""
    gen = np.random.default_rng(8)
    for M, side in ((12, "rows"), (60, "columns")):
        data, _, _ = _data(gen, M=M, L=5, q=4)
        whole = PLMProblem(data, 0.03, 0.05)
        assert (data.M <= 20) == (side == "rows")
        x = gen.standard_normal(whole.size)
        f, g = whole.loss_grad(x)
        h_all, W_all = whole.unpack(x)
        h, C = x[:20].reshape(5, 4), x[20:].reshape(whole.r, 5, 4)
        g_h, g_C = g[:20].reshape(5, 4), g[20:].reshape(whole.r, 5, 4)
        total = grad_sq = 0.0
        for sites in ([0, 1], [2], [3, 4]):
            block = PLMProblem(data, 0.03, 0.05, sites=sites, basis=whole.basis)
            xb = np.concatenate([h[sites].ravel(), C[:, sites].ravel()])
            fb, gb = block.loss_grad(xb)
            total += fb
            n_h = 4 * len(sites)
            np.testing.assert_allclose(gb[:n_h], g_h[sites].ravel(), rtol=0, atol=1e-13)
            np.testing.assert_allclose(gb[n_h:], g_C[:, sites].ravel(), rtol=0, atol=1e-13)
            hb, Wb = block.unpack(xb)
            np.testing.assert_array_equal(hb, h_all[sites])
            np.testing.assert_allclose(Wb, W_all[sites], rtol=0, atol=1e-13)
            grad_sq += plm_block_gradient(data, np.array(sites), hb, Wb, 0.03, 0.05)
        assert total == pytest.approx(f, rel=1e-13)
        whole_cert = plm_certificate(data, h_all, W_all, 0.03, 0.05)
        assert np.sqrt(grad_sq) == pytest.approx(whole_cert["grad_l2"], rel=1e-12)
        # the site-by-site fit's batches: problems joined in any order evaluate as each alone
        parts = [PLMProblem(data, 0.03, 0.05, sites=[i], basis=whole.basis) for i in (4, 0, 2)]
        joined = PLMProblem.joined(parts)
        xs = [gen.standard_normal(part.size) for part in parts]
        values, g_joined = joined.loss_grad_by_site(joined.gather(xs))
        for part, x_part, value, g_part in zip(parts, xs, values,
                                              joined.scatter(g_joined, [4, 4, 4]), strict=True):
            f_part, g_alone = part.loss_grad(x_part)
            assert value == pytest.approx(f_part, rel=1e-13)
            np.testing.assert_allclose(g_part, g_alone, rtol=0, atol=1e-13)
        np.testing.assert_array_equal(joined.scale, joined.gather([part.scale for part in parts]))
        for part, alone in zip(joined.split(), parts, strict=True):  # and split back, site by site
            np.testing.assert_array_equal(part.Q, alone.Q)
            np.testing.assert_array_equal(part.sites, alone.sites)


def test_plm_fit_site_by_site_reaches_the_whole_models_optimum(sampled):
    """The site-by-site fit and one L-BFGS run over every site at once land on the same optimum:
    couplings within the sum of their proven distances, F equal to 1e-9."""
    _, msa = sampled
    fit = rm.fit_potts(msa, method="plm", tol=1e-7, precision="double", max_iter=2000)
    assert fit.converged and fit.stop == "gradient"
    whole = PLMProblem(PseudoLikelihood(msa.sequences, msa.weights(0.8), Q_TRUE), 0.01, 0.01)
    res = lbfgs(whole.loss_grad, np.zeros(whole.size), max_iter=3000, tol=1e-7, scale=whole.scale,
                rounding=0.0)
    assert res.stop == "gradient"
    h, W = whole.unpack(res.x)
    bound = plm_certificate(whole.data, h, W, 0.01, 0.01)["distance_bound"]
    J, _ = symmetric_zero_sum(W, h)
    assert np.sqrt(np.sum((J - fit.couplings) ** 2)) <= bound + fit.distance_bound
    assert fit.objective == pytest.approx(float(res.fun), rel=1e-9)


def test_factored_gradient_matches_finite_differences():
    gen = np.random.default_rng(1)
    data, _, _ = _data(gen)
    problem = FactoredProblem(data, heads=3, lambda_h=0.03, lambda_J=0.05)
    _finite_difference_check(problem, problem.init(gen, 0.5), gen)


def test_softmax_factored_gradient_and_objective():
    """Softmax attention: the gradient by finite differences, and F is the weighted pseudo-nll at the
    symmetrised couplings plus plm's penalty on them; rows of A^h positive and summing to one."""
    gen = np.random.default_rng(4)
    data, s, w = _data(gen)
    problem = SoftmaxFactoredProblem(data, 3, lambda_h=0.03, lambda_J=0.05, head_size=2)
    x = problem.init(gen, 0.5)
    _finite_difference_check(problem, x, gen)
    h, Q, K, V = problem.unpack(x)
    A = problem.attention(Q, K)
    assert np.all(A[:, np.arange(5), np.arange(5)] == 0.0) and np.all(A[:, ~np.eye(5, dtype=bool)] > 0)
    np.testing.assert_allclose(A.sum(axis=2), 1.0, rtol=0, atol=1e-14)
    W = np.einsum("hij,hab->ijab", A, V)
    J = 0.5 * (W + W.transpose(1, 0, 3, 2))
    expected = pseudo_nll(J, h, s, w) + 0.03 * np.sum(h**2) + 0.025 * np.sum(J**2)
    assert problem.loss_grad(x)[0] == pytest.approx(expected, rel=1e-12)


def test_softmax_attention_recovers_the_true_contacts(sampled):
    J, msa = sampled
    fit = rm.fit_potts(msa, method="factored", attention="softmax", heads=4, max_iter=300)
    assert fit.attention == "softmax" and fit.heads == 4
    A, _ = fit.factors
    np.testing.assert_allclose(A.sum(axis=2), 1.0, rtol=0, atol=1e-12)
    scores = fit.contact_scores(apc=True)
    iu = np.triu_indices(L_TRUE, 1)
    top = np.argsort(scores[iu])[::-1][: len(CONTACTS)]
    assert (J[iu] != 0.0)[top].mean() >= 0.8
    independent = rm.fit_potts(msa, method="factored", heads=1, max_iter=1, init_scale=1e-8)
    assert fit.mlm_loss(msa) < independent.mlm_loss(msa) - 1.0
    with pytest.raises(ValueError, match="attention"):
        rm.fit_potts(msa, method="plm", attention="softmax")
    with pytest.raises(ValueError, match="attention"):
        rm.fit_potts(msa, method="factored", attention="dense")


def test_softmax_start_attends_to_the_couplings_contacts(sampled):
    """from_couplings: each row's heaviest attention (mean over heads) falls on a true contact."""
    J, msa = sampled
    U = np.eye(Q_TRUE) * 1.5 - 0.5
    data = PseudoLikelihood(msa.sequences, np.ones(msa.N), Q_TRUE)
    problem = SoftmaxFactoredProblem(data, 4, 0.01, 0.01, head_size=4)
    h, Q, K, V = problem.unpack(problem.from_couplings(J[:, :, None, None] * U, np.zeros((L_TRUE, Q_TRUE)),
                                                       gen=np.random.default_rng(0)))
    A = problem.attention(Q, K).mean(axis=0)
    assert np.mean(J[np.arange(L_TRUE), A.argmax(axis=1)] != 0.0) >= 8 / 9
    assert np.all(np.isfinite(V)) and np.all(h == 0.0)


def test_data_term_is_the_weighted_mlm_loss():
    """The objective's data term is the weighted mean over sequences of the summed per-site nll."""
    gen = np.random.default_rng(2)
    data, s, w = _data(gen)
    problem = PLMProblem(data, lambda_h=0.0, lambda_J=0.0)
    x = gen.standard_normal(problem.size)
    h, W = problem.unpack(x)
    weighted = PseudoLikelihood(s, w, 4, merge=False)
    Mt = W.transpose(0, 2, 1, 3).reshape(20, 20)
    logits = weighted.logits(Mt, h).reshape(-1, 5, 4)
    logp = logits - np.log(np.exp(logits).sum(axis=2, keepdims=True))
    per_sequence = -np.take_along_axis(logp, weighted.s[:, :, None], axis=2).sum(axis=(1, 2))
    assert pseudo_nll(W, h, s, w) == pytest.approx(float(weighted.w @ per_sequence), rel=1e-12)
    # merging the duplicate rows (weights added) leaves it unchanged; unpenalised, F is the data term
    assert data.M == s.shape[0] - 1
    assert problem.loss_grad(x)[0] == pytest.approx(pseudo_nll(W, h, s, w), rel=1e-12)


def test_plm_recovers_the_true_contacts(sampled):
    J, msa = sampled
    fit = rm.fit_potts(msa, method="plm", reweight=0.8, max_iter=300)  # the defaults: contact-grade
    assert fit.tol == PLM_TOL == 2e-3 and fit.converged and fit.gradient_norm <= PLM_TOL
    assert fit.stop == "gradient" and fit.distance_bound is not None
    scores = fit.contact_scores(apc=True)
    iu = np.triu_indices(L_TRUE, 1)
    top = np.argsort(scores[iu])[::-1][: len(CONTACTS)]
    true = J[iu] != 0.0
    precision = true[top].mean()
    chance = true.mean()  # 10 of 36 pairs
    assert precision >= 0.9 > 3 * chance
    np.testing.assert_array_equal(scores, coupling_scores(fit.couplings, apc=True))


def test_couplings_zero_sum_gauge_and_symmetry(sampled):
    _, msa = sampled
    for method, kw in (("plm", {}), ("factored", {"heads": 2})):
        fit = rm.fit_potts(msa, method=method, max_iter=60, **kw)
        J = fit.couplings
        assert np.max(np.abs(J.sum(axis=2))) < 1e-12 and np.max(np.abs(J.sum(axis=3))) < 1e-12
        assert np.max(np.abs(fit.fields.sum(axis=1))) < 1e-12
        np.testing.assert_array_equal(J, J.transpose(1, 0, 3, 2))
        assert np.all(J[np.arange(L_TRUE), np.arange(L_TRUE)] == 0.0)


def test_factored_couplings_have_the_stated_form(sampled):
    _, msa = sampled
    fit = rm.fit_potts(msa, method="factored", heads=3, max_iter=80, rng=5)
    A, V = fit.factors
    assert A.shape == (3, L_TRUE, L_TRUE) and V.shape == (3, Q_TRUE, Q_TRUE) and fit.heads == 3
    assert np.all(A[:, np.arange(L_TRUE), np.arange(L_TRUE)] == 0.0)
    W = np.einsum("hij,hab->ijab", A, V)
    J, _ = symmetric_zero_sum(W, np.zeros((L_TRUE, Q_TRUE)))
    np.testing.assert_allclose(fit.couplings, J, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fit.couplings, zero_sum_gauge(0.5 * (W + W.transpose(1, 0, 3, 2))),
                               rtol=0, atol=1e-12)
    # the factored fit explains the data: lower MLM loss than independent sites
    independent = rm.fit_potts(msa, method="factored", heads=1, max_iter=1, init_scale=1e-8)
    assert fit.mlm_loss(msa) < independent.mlm_loss(msa)


def test_mlm_loss_is_unchanged_by_symmetrisation_gauge(sampled):
    """Zero-sum gauge + field shift leave the symmetric model's conditionals (hence the loss) alone."""
    _, msa = sampled
    gen = np.random.default_rng(4)
    W = gen.standard_normal((L_TRUE, L_TRUE, Q_TRUE, Q_TRUE))
    W[np.arange(L_TRUE), np.arange(L_TRUE)] = 0.0
    h = gen.standard_normal((L_TRUE, Q_TRUE))
    Ws = 0.5 * (W + W.transpose(1, 0, 3, 2))
    J, fields = symmetric_zero_sum(W, h)
    w = msa.weights(identity=0.8)
    assert pseudo_nll(J, fields, msa.sequences, w) == pytest.approx(
        pseudo_nll(Ws, h, msa.sequences, w), rel=1e-12)
    fit = rm.fit_potts(msa, method="plm", max_iter=40)
    assert fit.mlm_loss(msa, weights=w) == pytest.approx(
        pseudo_nll(fit.couplings, fit.fields, msa.sequences, w), rel=1e-14)
    assert fit.mlm_loss(msa) == pytest.approx(pseudo_nll(fit.couplings, fit.fields, msa.sequences),
                                              rel=1e-14)


def test_unit_weights_equal_the_unweighted_fit(sampled):
    _, msa = sampled
    ones = StandInMSA(msa.sequences, Q_TRUE)
    for method in ("plm", "factored"):
        a = rm.fit_potts(ones, method=method, reweight=0.8, max_iter=30)
        b = rm.fit_potts(ones, method=method, reweight=None, max_iter=30)
        np.testing.assert_array_equal(a.couplings, b.couplings)
        np.testing.assert_array_equal(a.fields, b.fields)
        assert (a.reweight, b.reweight) == (0.8, None)


def test_fit_potts_refuses_bad_arguments(sampled):
    _, msa = sampled
    with pytest.raises(ValueError, match="method"):
        rm.fit_potts(msa, method="mf")
    with pytest.raises(ValueError, match="heads"):
        rm.fit_potts(msa, method="plm", heads=4)
    with pytest.raises(TypeError, match="msa"):
        rm.fit_potts(msa.sequences)
    with pytest.raises(ValueError, match="reweight"):
        rm.fit_potts(msa, reweight=1.5)
    with pytest.raises(ValueError, match="lambda_J"):
        rm.fit_potts(msa, lambda_J=-1.0)
    bad = StandInMSA(msa.sequences, Q_TRUE, weights=np.zeros(msa.N))
    with pytest.raises(ValueError, match="weights"):
        rm.fit_potts(bad)


def test_single_precision_products_match_double():
    """precision="single": only the big products in float32; objective and gradient agree with double."""
    gen = np.random.default_rng(7)
    data, _, _ = _data(gen, M=40, L=6, q=5)
    for make in (lambda dt: PLMProblem(data, 0.03, 0.05, dtype=dt),
                 lambda dt: FactoredProblem(data, 3, 0.03, 0.05, dtype=dt),
                 lambda dt: SoftmaxFactoredProblem(data, 3, 0.03, 0.05, head_size=2, dtype=dt)):
        double, single = make(np.float64), make(np.float32)
        x = gen.standard_normal(double.size) * 0.5
        f64, g64 = double.loss_grad(x)
        f32, g32 = single.loss_grad(x)
        assert f32 != f64 and f32 == pytest.approx(f64, rel=1e-6)
        np.testing.assert_allclose(g32, g64, rtol=0, atol=1e-5 * np.max(np.abs(g64)))


def test_single_precision_fit_and_plateau_stop(sampled):
    _, msa = sampled
    double = rm.fit_potts(msa, method="plm", max_iter=300, precision="double", tol=1e-5)
    single = rm.fit_potts(msa, method="plm", max_iter=300, precision="single", tol=1e-4)
    assert double.stop == "gradient" and single.converged and single.gradient_norm <= 1e-4
    assert abs(single.objective - double.objective) <= 1e-5 * abs(double.objective)
    np.testing.assert_allclose(single.couplings, double.couplings, rtol=0, atol=1e-3)
    # the plateau rule stops early and does not claim convergence
    plateau = rm.fit_potts(msa, method="plm", max_iter=300, tol=1e-12, ftol=1e-3, precision="double")
    assert plateau.stop == "objective" and not plateau.converged
    assert plateau.iterations < double.iterations
    assert plateau.gradient_norm > 1e-12
    assert plateau.objective - double.objective < 10 * 1e-3 * abs(double.objective)
    with pytest.raises(ValueError, match="precision"):
        rm.fit_potts(msa, precision="half")
    with pytest.raises(ValueError, match="ftol"):
        rm.fit_potts(msa, ftol=-1.0)


def test_mean_field_fit_is_the_mean_field_model(sampled):
    """method="mean-field": the couplings of replica_mlm.proteins.mean_field in the fit's gauge, and
    fields for which the regularised marginals solve the mean-field equations."""
    from replica_mlm.proteins.mean_field import couplings_from_frequencies, weighted_frequencies

    _, msa = sampled
    fit = rm.fit_potts(msa, method="mean-field", reweight=0.8)
    fi, fij = weighted_frequencies(msa.sequences, msa.weights(0.8), Q_TRUE, pseudocount=0.5)
    J_mf = couplings_from_frequencies(fi, fij)
    assert (fit.method, fit.iterations, fit.converged, fit.stop) == ("mean-field", 0, True, "closed-form")
    assert fit.penalties == {"pseudocount": 0.5} and fit.heads is None and fit.distance_bound is None
    np.testing.assert_allclose(fit.couplings, zero_sum_gauge(J_mf), atol=1e-12)
    np.testing.assert_allclose(fit.contact_scores(), coupling_scores(J_mf), atol=1e-12)
    assert np.array_equal(fit.couplings, fit.couplings.transpose(1, 0, 3, 2))
    # naive mean-field: f_i(a) = softmax_a(h_i(a) + sum_j sum_b J_ij(a, b) f_j(b)) at the data's
    # regularised marginals, whatever the gauge
    local = fit.fields + np.einsum("ijab,jb->ia", fit.couplings, fi)
    model = np.exp(local - local.max(axis=1, keepdims=True))
    np.testing.assert_allclose(model / model.sum(axis=1, keepdims=True), fi, atol=1e-12)
    # the strongest pairs are the true contacts
    top = np.argsort(-fit.contact_scores(apc=False)[np.triu_indices(L_TRUE, 1)])[:len(CONTACTS)]
    pairs = set(zip(*(a[top] for a in np.triu_indices(L_TRUE, 1)), strict=True))
    assert len(pairs & set(CONTACTS)) >= len(CONTACTS) - 2
    other = rm.fit_potts(msa, method="mean-field", reweight=None, pseudocount=0.2)
    assert other.penalties == {"pseudocount": 0.2} and other.reweight is None
    assert not np.allclose(other.couplings, fit.couplings)


def test_mean_field_couplings_are_minus_the_inverse_correlations(sampled):
    """The Cholesky inverse of the connected correlations equals a general (LU) inverse; without a
    pseudocount a colour never seen makes them singular, which is refused naming the pseudocount."""
    from replica_mlm.proteins.mean_field import couplings_from_frequencies, weighted_frequencies

    _, msa = sampled
    fi, fij = weighted_frequencies(msa.sequences, msa.weights(0.8), Q_TRUE, pseudocount=0.3)
    n = L_TRUE * (Q_TRUE - 1)
    C = fij[:, :, 1:, 1:] - fi[:, None, 1:, None] * fi[None, :, None, 1:]
    C = C.transpose(0, 2, 1, 3).reshape(n, n)
    lu = -np.linalg.inv(C).reshape(L_TRUE, Q_TRUE - 1, L_TRUE, Q_TRUE - 1).transpose(0, 2, 1, 3)
    J = couplings_from_frequencies(fi, fij)
    off = ~np.eye(L_TRUE, dtype=bool)
    np.testing.assert_allclose(J[:, :, 1:, 1:][off], lu[off], rtol=0, atol=1e-10 * np.abs(lu).max())
    assert not J[np.arange(L_TRUE), np.arange(L_TRUE)].any()
    assert not J[:, :, 0].any() and not J[:, :, :, 0].any()
    unseen = np.array(msa.sequences)
    unseen[unseen == 1] = 2  # colour 1 never appears
    with pytest.raises(ValueError, match="pseudocount"):
        couplings_from_frequencies(*weighted_frequencies(unseen, np.ones(unseen.shape[0]), Q_TRUE,
                                                         pseudocount=0.0))


def test_mean_field_fit_refuses_what_it_does_not_use(sampled):
    _, msa = sampled
    for bad, match in [({"heads": 4}, "heads"), ({"attention": "softmax"}, "attention"),
                       ({"init": "mean-field"}, "init"), ({"pseudocount": 1.0}, "pseudocount"),
                       ({"pseudocount": -0.1}, "pseudocount")]:
        with pytest.raises(ValueError, match=match):
            rm.fit_potts(msa, method="mean-field", **bad)
    with pytest.raises(ValueError, match="pseudocount applies to"):
        rm.fit_potts(msa, method="plm", pseudocount=0.5)
    with pytest.raises(ValueError, match="pseudocount applies to"):
        rm.fit_potts(msa, method="factored", pseudocount=0.5)
