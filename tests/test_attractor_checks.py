"""The attractor section's checks fail when the effect they claim is absent.

Each check of ``replica_mlm.validation.attractor_section`` is built by :func:`digits_checks` or
:func:`potts_checks`; here the same functions are fed a network without the effect (couplings
zero, or the trained couplings shuffled among the pairs of tokens, or the self-weight gamma = 1),
and Gaussian Potts sequences without the model's structure (sites shuffled independently across
sequences; sequences of the wrong scale). A check that passed there would be a defect.
"""

from __future__ import annotations

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm.attractor import encoding, measurements
from replica_mlm.attractor import experiments as ex
from replica_mlm.attractor.potts_sequences import masked_site_comparison
from replica_mlm.validation.attractor_section import digits_checks, potts_checks

pytest.importorskip("sklearn")

_SMALL = {"n_train": 200, "n_test": 60, "n_eval": 60}


def _small_settings(**kw):
    base = {"weight_decay": 0.1, "gamma": 0.8, "epochs": 30, "steps": 50, "window": (1, 25)}
    base.update(kw)
    return measurements.AttractorSettings(**base)


def _by_name(checks) -> dict:
    return {c.name.removeprefix("attractor.digits."): c for c in checks}


@pytest.fixture(scope="module")
def trained():
    # control_rng: the structureless control runs on its own generator (nothing else changes)
    return ex.digits_experiment(settings=_small_settings(), rng=0, control_rng=1, **_SMALL)


def _shuffled_couplings(J: np.ndarray, rng) -> np.ndarray:
    """The off-diagonal blocks J_ij permuted among the pairs (i, j): the same blocks, no longer
    attached to the tokens they were learnt for."""
    N = J.shape[0]
    pairs = [(i, j) for i in range(N) for j in range(N) if i != j]
    perm = np.random.default_rng(rng).permutation(len(pairs))
    out = np.zeros_like(J)
    for (i, j), k in zip(pairs, perm, strict=True):
        out[i, j] = J[pairs[k]]
    return out


def test_digits_transient_memory_passes_when_trained_and_fails_without_the_effect(trained):
    mem = trained.memory["noise"]["test"]
    assert mem.passed, mem.margins()
    assert trained.lifetimes["noise"]["test"].half_depth.mean() > 3
    # gamma = 1: every token keeps its state, nothing improves (gains are exactly 0)
    frozen = ex.digits_experiment(settings=_small_settings(gamma=1.0), rng=0, **_SMALL)
    for task in ("masked", "noise"):
        m = frozen.memory[task]["test"]
        assert not m.passed and m.gain_vs_t0[0] == 0.0
        assert frozen.lifetimes[task]["test"].half_depth.max() == 0
        assert not frozen.recall[task]["test"].passed
    # untrained couplings (one tiny step of the local rule): the attention term is ~1e-9 of the
    # self term, the state stays at the corrupted input
    untrained = ex.digits_experiment(settings=_small_settings(lr=1e-9, epochs=1), rng=0, **_SMALL)
    for task in ("masked", "noise"):
        m = untrained.memory[task]["test"]
        assert not m.passed and abs(m.gain_vs_t0[0]) < 1e-6


def test_every_digits_check_fails_with_zero_couplings(trained):
    net = trained.network
    zero = rm.AttractorNetwork(np.zeros_like(net.couplings), beta=net.beta, gamma=net.gamma)
    res = ex.digits_experiment(settings=_small_settings(), rng=0, network=zero, control_rng=1,
                               **_SMALL)
    assert res.network is zero and res.cost is None
    checks = digits_checks(res)
    assert len(checks) == 12
    failed = [c.name for c in checks if c.passed]
    assert not failed, failed
    # J = 0: the update is normalise(gamma x) = x, the states never move (to rounding)
    for task in ("masked", "noise"):
        assert np.max(np.abs(np.diff(res.curves[task]["test"].error, axis=1))) < 1e-12


def test_shuffled_couplings_fail_the_checks_the_trained_network_passes(trained):
    """Shuffled couplings keep their sizes, so the dynamics still smooth the input: on noisy digits
    that blur alone beats the noisy input, the mean image and the end state (the transient check
    on noise passes for both networks: it cannot tell a memory from a blur). The checks that can
    tell are the comparison with the input shrunk toward the mean image, the recall of one stored
    image and the lifetime: they pass for the trained network and fail for the shuffled one."""
    net = trained.network
    shuffled = rm.AttractorNetwork(_shuffled_couplings(net.couplings, 1), beta=net.beta,
                                   gamma=net.gamma)
    res = ex.digits_experiment(settings=_small_settings(), rng=0, network=shuffled, **_SMALL)
    good, bad = _by_name(digits_checks(trained)), _by_name(digits_checks(res))
    discriminating = ["beyond_shrinkage.noise.test", "recall.noise.test", "lifetime.noise.test",
                      "lifetime.masked.test", "transient_memory.masked.test",
                      "transient_memory.masked.train"]
    for name in discriminating:
        assert good[name].passed, (name, good[name].detail)
        assert not bad[name].passed, (name, bad[name].detail)
    # the two masked claims the trained network does not reproduce fail for both
    for name in ("beyond_shrinkage.masked.test", "recall.masked.test"):
        assert not good[name].passed and not bad[name].passed


def _pixel_shuffled_network(seed: int) -> rm.AttractorNetwork:
    """The small settings' training on the same training images with every pixel shuffled
    independently across images: each pixel's distribution kept, no correlation between pixels."""
    st = _small_settings()
    train, _ = ex.load_digits(n_train=_SMALL["n_train"], n_test=_SMALL["n_test"], rng=0)
    flat = train.reshape(len(train), -1)
    gen = np.random.default_rng(seed)
    shuffled = np.column_stack([gen.permutation(col) for col in flat.T]).reshape(train.shape)
    return rm.AttractorNetwork.fit(encoding.encode_values(encoding.image_tokens(shuffled)), beta=st.beta,
                                   gamma=st.gamma, lr=st.lr, epochs=st.epochs,
                                   weight_decay=st.weight_decay, rng=0)


def test_structureless_control_check_fails_without_correlations_and_passes_with_them(trained):
    """A network that learnt only the pixel marginals passes the transient, recall and lifetime
    checks of noisy digits much as the trained network does (measured: the control reaches 99 %
    of the trained network's gain over the noisy input); the comparison with the structureless
    control is the check that separates them: it passes for the trained network on noisy digits
    and fails when the network under test is itself structureless."""
    good = _by_name(digits_checks(trained))["beyond_structureless.noise.test"]
    assert good.passed, good.detail
    assert trained.curves["noise"]["test"].extra["control_error"].shape == (60, 51)
    res = ex.digits_experiment(settings=_small_settings(), rng=0,
                               network=_pixel_shuffled_network(7), control_rng=1, **_SMALL)
    bad = _by_name(digits_checks(res))
    for task in ("masked", "noise"):
        chk = bad[f"beyond_structureless.{task}.test"]
        assert not chk.passed, chk.detail


@pytest.fixture(scope="module")
def potts_data():
    model = rm.GaussianPotts.random(L=20, shift=3.0, seed=3)
    x_train, _ = encoding.gaussian_potts_sequences(model.precision, n=1000, rng=1)
    x_test, _ = encoding.gaussian_potts_sequences(model.precision, n=3000, rng=2)
    # the exact checks do not depend on the network: a cheap one (J = 0, 3 steps)
    net = rm.AttractorNetwork(np.zeros((20, 20, 2, 2)), beta=1.0, gamma=0.8)
    return model, x_train, x_test, net


def _potts(potts_data, x_test):
    model, x_train, _, net = potts_data
    ms = masked_site_comparison(net, model.precision, x_train, x_test, steps=3, window=(1, 2),
                                rng=0)
    return ms, {c.name.removeprefix("attractor.potts."): c for c in potts_checks(ms)}


def test_potts_exact_checks_pass_on_sequences_of_the_model(potts_data):
    _, checks = _potts(potts_data, potts_data[2])
    for c in checks.values():
        assert c.passed, c.detail
    # and the first check has the power to see the structure at this size
    assert checks["factored_attention_matches_theory"].value["z_if_sites_independent"] > 6


def test_potts_factored_attention_check_fails_without_structure(potts_data):
    """Sites shuffled independently across sequences keep every marginal and lose every
    correlation: one step of factored attention then errs by C_ii + sum_j w_ij^2 C_jj, not 1/P_ii.
    Over ten shuffles (and ten draws of the masked sites) the check fails every time, the mean
    predictor (marginals only) still matches C_ii, and the measured excess agrees with that exact
    value: the standardised deviations average to 0 within 3 / sqrt(10)."""
    x_test = potts_data[2]
    dev = []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        x_shuffled = np.column_stack([rng.permutation(col) for col in x_test.T])
        model, x_train, _, net = potts_data
        ms = masked_site_comparison(net, model.precision, x_train, x_shuffled, steps=3,
                                    window=(1, 2), rng=seed)
        checks = {c.name.removeprefix("attractor.potts."): c for c in potts_checks(ms)}
        fa = checks["factored_attention_matches_theory"]
        assert not fa.passed and fa.value["z"] > 5, fa.detail
        assert checks["predict_mean_matches_theory"].passed
        d, se = ms["oracle_minus_exact_1_over_Pii"]
        dev.append((d - ms["oracle_shift_if_sites_independent"]) / se)
    assert abs(np.mean(dev)) < 3 / np.sqrt(len(dev)), dev


def test_potts_mean_predictor_check_fails_on_the_wrong_scale(potts_data):
    """Sequences 1.25 times too large (variance 1.5625 C_ii): predicting the mean misses C_ii."""
    ms, checks = _potts(potts_data, 1.25 * potts_data[2])
    mean = checks["predict_mean_matches_theory"]
    assert not mean.passed and mean.value["z"] > 6, mean.detail
    d, se = ms["zero_minus_exact_Cii"]
    assert abs(d - 0.5625 * ms["theory_zero_mean_Cii"]) < 3 * se


def test_masked_site_comparison_rejects_bad_input(potts_data):
    model, x_train, x_test, net = potts_data
    with pytest.raises(ValueError, match="x_test must have L = 20 columns"):
        masked_site_comparison(net, model.precision, x_train, x_test[:, :5], steps=3,
                               window=(1, 2))
    with pytest.raises(ValueError, match="at least 4 sequences"):
        masked_site_comparison(net, model.precision, x_train, x_test[:3], steps=3, window=(1, 2))
    with pytest.raises(ValueError, match="x_train"):
        masked_site_comparison(net, model.precision, x_train[:, None], x_test, steps=3,
                               window=(1, 2))
    with pytest.raises(TypeError, match="network must be an AttractorNetwork"):
        ex.digits_experiment(settings=_small_settings(), rng=0, network="net", **_SMALL)


def test_attractor_section_gives_the_same_numbers_with_two_workers(tmp_path, monkeypatch):
    # the full mode's parts (digits, Potts, lifetime scan) at toy sizes, in one process and in two
    import json

    from replica_mlm.validation import attractor_section as section
    monkeypatch.setattr(section, "DEFAULT_SETTINGS", _small_settings(epochs=5, steps=100, window=(1, 50)))
    toy = ({"n_train": 80, "n_test": 40, "n_eval": 40}, {"L": 8, "n_train": 200, "n_test": 60, "n_eval": 60})
    monkeypatch.setattr(section, "_sizes", lambda quick: toy)
    monkeypatch.setattr(section, "_SCAN_SIZES", {"n_train": 80, "n_test": 40, "n_eval": 40})
    monkeypatch.setattr(section, "_SCAN", section._SCAN[:2])
    for plot in ("_plot_errors", "_plot_lifetimes", "_plot_examples", "_plot_potts", "_plot_scan"):
        monkeypatch.setattr(section, plot, lambda *args, **kwargs: [])  # numbers only
    data = []
    for workers in (1, 2):
        sec = section.run(tmp_path / f"w{workers}", quick=False, rng=3, workers=workers)
        assert sec.data["experiments_seconds"]["workers"] == workers
        stored = json.loads((tmp_path / f"w{workers}" / "attractor.json").read_text())
        for key in ("seconds", "seconds_per_epoch", "experiments_seconds"):
            stored["data"].pop(key, None)
            stored["data"]["digits"].pop(key, None)
        stored["data"]["lifetime_scan"].pop("seconds")
        for row in stored["data"]["lifetime_scan"]["rows"]:
            row.pop("seconds")
        data.append(stored)
    assert len(data[0]["data"]["lifetime_scan"]["rows"]) == 2
    assert data[0] == data[1]
