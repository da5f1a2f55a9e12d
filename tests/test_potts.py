"""The discrete generalised Potts model: exact quantities, the Gibbs sampler, bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import replica_mlm as rm
from replica_mlm.potts.autocorrelation import integrated_autocorrelation_time
from replica_mlm.potts.model import check_sequences


def small_model(L=4, q=3, beta=1.0, seed=0):
    return rm.PottsModel.random(L=L, q=q, seed=seed, beta=beta)


# ---------------------------------------------------------------------- exact quantities
@settings(max_examples=25, deadline=None)
@given(
    L=st.integers(2, 5),
    q=st.integers(2, 4),
    beta=st.floats(0.05, 3.0),
    seed=st.integers(0, 2**16),
)
def test_conditional_is_ratio_of_boltzmann_weights(L, q, beta, seed):
    """P(s_i = a | s_-i) from the energy: exp(-beta H(s^{i<-a})) normalised over a."""
    pm = small_model(L, q, beta, seed)
    s = np.random.default_rng(seed).integers(0, q, size=(7, L))
    for i in range(L):
        variants = np.repeat(s[:, None, :], q, axis=1)
        variants[:, :, i] = np.arange(q)
        e = -beta * pm.energy(variants.reshape(-1, L)).reshape(7, q)
        expected = np.exp(e - e.max(axis=1, keepdims=True))
        expected /= expected.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(pm.conditional(s, i), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(pm.conditionals(s)[:, 2 % L], pm.conditional(s, 2 % L), atol=1e-15)


def test_energy_matches_definition():
    pm = small_model(L=5, q=4, seed=3)
    s = np.random.default_rng(0).integers(0, 4, size=(10, 5))
    J, U = pm.couplings, pm.colours
    brute = [-0.5 * sum(J[i, j] * U[x[i], x[j]] for i in range(5) for j in range(5) if i != j)
             for x in s]
    np.testing.assert_allclose(pm.energy(s), brute, rtol=1e-13)


def test_neg_pseudo_loglikelihood_definition():
    pm = small_model(L=5, q=3, beta=1.3, seed=2)
    s = np.random.default_rng(1).integers(0, 3, size=(20, 5))
    direct = -np.mean([sum(math.log(pm.conditional(s[m : m + 1], i)[0, s[m, i]]) for i in range(5))
                       for m in range(20)])
    assert pm.neg_pseudo_loglikelihood(s) == pytest.approx(direct, rel=1e-13)


def test_boltzmann_probabilities_normalised():
    pm = small_model()
    p = pm.boltzmann_probabilities()
    assert p.shape == (81,)
    assert p.sum() == pytest.approx(1.0, abs=1e-14)
    assert pm.all_sequences().shape == (81, 4)


def test_mean_hamming_matches_pairs():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 3, size=(40, 6))
    pm = small_model(L=6, q=3)
    d = (s[:, None, :] != s[None, :, :]).mean(axis=2)
    brute = d[np.triu_indices(40, 1)].mean()
    assert pm.mean_hamming(s) == pytest.approx(brute, abs=1e-14)


# ---------------------------------------------------------------------- sampler
def test_gibbs_sampler_is_exact_chi_square():
    """Sampled frequencies vs exact Boltzmann probabilities, L=4, q=3 (81 states).

    Fixed seed; significance level 1 %: the test fails if the chi-square p-value is below 0.01.
    States with expected count < 5 are pooled into one bin.
    """
    pm = rm.PottsModel.random(L=4, q=3, seed=7, beta=2.0)
    p = pm.boltzmann_probabilities()
    assert p.max() / p.min() > 20  # far from uniform: the test has power
    n = 40_000
    seqs = pm.sample(n, rng=11, n_chains=1000)
    idx = np.ravel_multi_index(seqs.T, (3,) * 4)
    counts = np.bincount(idx, minlength=81)
    expected = n * p
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    chi2, pval = stats.chisquare(obs, exp)
    assert pval > 0.01, f"chi2 = {chi2:.1f}, p = {pval:.3g}"


def test_autocorrelation_time_of_ar1():
    phi = 0.8
    rho = phi ** np.arange(200)
    tau, w = integrated_autocorrelation_time(rho)
    exact = 0.5 + phi / (1 - phi)
    assert w > 0
    assert tau == pytest.approx(0.5 + rho[1 : w + 1].sum(), rel=1e-14)
    # Sokal's window (W >= 5 tau) truncates the tail phi^(W+1) / (1 - phi): below 1 % here
    assert tau == pytest.approx(exact, rel=0.01)


def test_sweeps_between_chosen_from_measured_autocorrelation():
    hot = small_model(L=8, q=4, beta=0.05).gibbs_diagnostics(rng=0, n_chains=64, n_sweeps=200)
    cold = small_model(L=8, q=4, beta=1.0).gibbs_diagnostics(rng=0, n_chains=64, n_sweeps=200)
    # nearly independent spins decorrelate in one sweep: tau_int close to 1/2
    assert hot.tau_spin < 0.7
    assert cold.tau_int > hot.tau_int
    for d in (hot, cold):
        assert d.sweeps_between == max(1, math.ceil(d.tau_int * math.log(100)))
        assert d.burn_in >= d.sweeps_between
        assert d.rho_spin[0] == pytest.approx(1.0)
        assert d.window_found and d.equilibrated


def test_sample_shape_range_and_reproducible():
    pm = small_model(L=6, q=5, beta=0.8)
    a = pm.sample(50, rng=3)
    b = pm.sample(50, rng=np.random.default_rng(3))
    assert a.shape == (50, 6) and a.min() >= 0 and a.max() < 5
    np.testing.assert_array_equal(a, b)
    seqs, diag = pm.sample(10, rng=0, return_diagnostics=True)
    assert seqs.shape == (10, 6) and diag.sweeps_between >= 1


def test_incremental_fields_stay_exact():
    """After many sweeps the incrementally updated fields equal fields recomputed from scratch."""
    pm = small_model(L=7, q=4, beta=1.5, seed=5)
    gen = np.random.default_rng(0)
    s = gen.integers(0, 4, size=(30, 7))
    Nq = pm._init_fields(s)
    for _ in range(50):
        pm._sweep(s, Nq, gen)
    np.testing.assert_allclose(Nq, pm._init_fields(s), atol=1e-12)


def exact_mean_hamming(pm):
    """1 - (1/L) sum_i sum_a P_i(a)^2 from the exact Boltzmann marginals (enumeration)."""
    S, p = pm.all_sequences(), pm.boltzmann_probabilities()
    marg = np.stack([np.bincount(S[:, i], weights=p, minlength=pm.q) for i in range(pm.L)])
    return 1.0 - float((marg**2).sum(axis=1).mean())


def test_tune_beta_reaches_target():
    pm = rm.PottsModel.random(L=6, q=3, seed=1)
    res = pm.tune_beta(target_hamming=0.3, rng=0, tol=0.02, n_replicas=16, return_result=True)
    h = exact_mean_hamming(pm.with_beta(res.beta))
    # the tuner's promise: within tol of the target, up to the error of its own estimate
    assert abs(h - 0.3) <= 0.02 + 4 * res.hamming_se, (res.beta, h, res.hamming_se)
    assert pm.beta == 1.0  # the model itself is unchanged


# ---------------------------------------------------------------------- bad input
J4 = np.array([[0, 1, 0.5, 0], [1, 0, 0, 0.2], [0.5, 0, 0, 1], [0, 0.2, 1, 0]], float)
U3 = np.array([[1, 0.2, 0], [0.2, 1, -0.5], [0, -0.5, 1]], float)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"couplings": J4 + np.triu(np.ones((4, 4)), 1), "colours": U3}, "symmetric"),
        ({"couplings": J4, "colours": U3 + np.triu(np.ones((3, 3)), 1)}, "symmetric"),
        ({"couplings": J4 + np.eye(4), "colours": U3}, "zero diagonal"),
        ({"couplings": J4, "colours": U3, "beta": 0.0}, "beta must be > 0"),
        ({"couplings": J4, "colours": U3, "beta": -1.0}, "beta must be > 0"),
        ({"couplings": J4, "colours": U3, "beta": float("nan")}, "finite"),
        ({"couplings": np.where(J4 == 1, np.nan, J4), "colours": U3}, "NaN"),
        ({"couplings": J4, "colours": np.where(U3 == 1, np.nan, U3)}, "NaN"),
        ({"couplings": J4[:3], "colours": U3}, "square"),
        ({"couplings": J4, "colours": np.ones(3)}, "dimension"),
    ],
)
def test_bad_model_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rm.PottsModel(**kwargs)


@pytest.mark.parametrize(
    ("seqs", "match"),
    [
        (np.array([[0, 1, 2, 3]]), r"out of range.*\[0, 3\)"),
        (np.array([[0, 1, -1, 2]]), "out of range"),
        (np.array([[0, 1, 2]]), "shape"),
        (np.array([0, 1, 2, 1]), "shape"),
        (np.array([[0, 1, np.nan, 1]]), "NaN"),
        (np.array([[0, 1, 0.5, 1]]), "integer"),
        (np.array([["a", "b", "c", "d"]]), "real numbers"),
        (np.zeros((0, 4), int), "at least one"),
    ],
)
def test_bad_sequences(seqs, match):
    pm = rm.PottsModel(couplings=J4, colours=U3)
    error = TypeError if seqs.dtype.kind == "U" else ValueError
    for f in (pm.energy, pm.neg_pseudo_loglikelihood, lambda s: pm.conditional(s, 0)):
        with pytest.raises(error, match=match):
            f(seqs)


def test_bad_site_and_sampling_options():
    pm = rm.PottsModel(couplings=J4, colours=U3)
    s = np.zeros((2, 4), int)
    with pytest.raises(ValueError, match="site index"):
        pm.conditional(s, 4)
    with pytest.raises(TypeError, match="site index"):
        pm.conditional(s, 1.5)
    with pytest.raises(ValueError, match="n must be"):
        pm.sample(0)
    with pytest.raises(TypeError, match="rng"):
        pm.sample(5, rng="seed")
    with pytest.raises(ValueError, match="burn_in"):
        pm.sample(5, sweeps_between=1, burn_in=-1)
    with pytest.raises(ValueError, match="target_hamming"):
        pm.tune_beta(target_hamming=0.9)
    with pytest.raises(ValueError, match="L and q"):
        rm.PottsModel.random(L=1, q=3)


def test_float_integer_sequences_accepted():
    s = check_sequences(np.array([[0.0, 2.0, 1.0]]), L=3, q=3)
    assert s.dtype.kind == "i"


# ---------------------------------------------------------------------- issue 9: types, sizes, symmetry
def test_complex_and_boolean_couplings_are_refused():
    with pytest.raises(TypeError, match="couplings J must be an array of real numbers, got complex"):
        rm.PottsModel(couplings=J4 + 1e-3j, colours=U3)
    with pytest.raises(TypeError, match="colours U must be an array of real numbers, got complex"):
        rm.PottsModel(couplings=J4, colours=U3.astype(complex))
    with pytest.raises(TypeError, match="booleans"):
        rm.PottsModel(couplings=J4 != 0, colours=U3)
    with pytest.raises(TypeError, match="seqs must be an array of real numbers, got booleans"):
        rm.PottsModel(couplings=J4, colours=U3).energy(np.zeros((2, 4), bool))


def test_sizes_and_iteration_counts_beyond_the_machine_are_refused():
    pm = rm.PottsModel(couplings=J4, colours=U3)
    with pytest.raises(ValueError, match=r"sample\(n=1000000000, .*\) of L = 4 sites needs .* more than"):
        pm.sample(10**9, sweeps_between=1, burn_in=0)
    with pytest.raises(ValueError, match="elementary operations, more than the limit"):
        pm.sample(5, sweeps_between=1, burn_in=10**18)
    with pytest.raises(ValueError, match="elementary operations"):
        pm.run_chains(np.zeros((2, 4), int), 10**18)
    with pytest.raises(ValueError, match=r"more than the .* available"):
        pm.gibbs_diagnostics(max_sweeps=10**15)
    with pytest.raises(TypeError, match="n_sweeps must be an integer"):
        pm.run_chains(np.zeros((2, 4), int), "5")
    with pytest.raises(TypeError, match="return_diagnostics must be True or False"):
        pm.sample(5, sweeps_between=1, burn_in=0, return_diagnostics="no")


def _symmetric_model(q: int = 3) -> rm.PottsModel:
    J = rm.PottsModel.random(L=6, q=q, seed=4).couplings
    return rm.PottsModel(couplings=J, colours=np.eye(q), beta=1.0)


def test_colour_symmetric_hamming_is_one_minus_one_over_q_at_every_beta():
    """U = identity and no fields: P(s) is invariant under colour permutations, so every marginal
    is uniform and independent samples differ at a site with probability 1 - 1/q exactly.

    Exact by enumeration (3^6 sequences) at four betas; then sampled at two betas: the mean
    Hamming distance of 12 independent batches of 100 sequences agrees with 1 - 1/q within 4
    standard errors of the batch mean.
    """
    pm = _symmetric_model()
    ceiling = 1.0 - 1.0 / pm.q
    for beta in (0.1, 1.0, 3.0, 10.0):
        assert exact_mean_hamming(pm.with_beta(beta)) == pytest.approx(ceiling, abs=1e-12)
    for beta, seed in ((0.5, 1), (1.5, 2)):
        m = pm.with_beta(beta)
        s = m.sample(1200, rng=seed)
        h = np.array([m.mean_hamming(b) for b in s.reshape(12, 100, m.L)])
        se = h.std(ddof=1) / math.sqrt(h.size)
        assert abs(h.mean() - ceiling) < 4 * se, (beta, h.mean(), se)
    # control: without the symmetry the same couplings do lower the Hamming distance
    random_u = rm.PottsModel.random(L=6, q=3, seed=4, beta=1.5)
    assert exact_mean_hamming(random_u) < ceiling - 0.05


@pytest.mark.parametrize("colours,why", [
    (np.eye(3), "treats all 3 colours alike"),
    (2.0 * np.eye(3) - 0.5, "treats all 3 colours alike"),
    (np.array([[1.0, 0.3, 0.3, -0.2], [0.3, 1.0, -0.2, 0.3], [0.3, -0.2, 1.0, 0.3],
               [-0.2, 0.3, 0.3, 1.0]])[np.ix_([0, 1, 3, 2], [0, 1, 3, 2])], "circulant"),
])
def test_tune_beta_explains_colour_symmetry_before_searching(colours, why):
    J = rm.PottsModel.random(L=5, q=colours.shape[0], seed=0).couplings
    pm = rm.PottsModel(couplings=J, colours=colours)
    with pytest.raises(ValueError, match=f"cannot be reached at any beta: .*{why}.*exactly 1 - 1/q"):
        pm.tune_beta(0.3, rng=0)
    zero = rm.PottsModel(couplings=np.zeros((4, 4)), colours=U3)
    with pytest.raises(ValueError, match="couplings J are all zero"):
        zero.tune_beta(0.3)
