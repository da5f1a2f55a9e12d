"""Tests of the attractor-network experiments and of their validation entry and CLI."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from replica_mlm.attractor import encoding, transients
from replica_mlm.attractor import experiments as ex

pytest.importorskip("sklearn")


@settings(max_examples=50, deadline=None)
@given(arrays(float, st.tuples(st.integers(1, 3), st.integers(1, 5), st.integers(1, 4)),
              elements=st.floats(0.0, 1.0)))
def test_encoding_is_unit_and_round_trips(values):
    tok = encoding.encode_values(values)
    assert tok.shape == (*values.shape[:-1], 2 * values.shape[-1])
    np.testing.assert_allclose(np.linalg.norm(tok, axis=-1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(encoding.decode_values(tok), values, atol=1e-12)


def test_decoding_projects_onto_the_arc():
    # angles: 3pi/4 -> 1, -pi/4 -> 0, -0.9 pi (nearer the pi/2 end, going round) -> 1, pi -> 1
    ang = np.array([0.75 * np.pi, -0.25 * np.pi, -0.9 * np.pi, np.pi, -0.6 * np.pi])
    tok = np.stack([np.cos(ang), np.sin(ang)], axis=-1)[:, None, :]
    np.testing.assert_array_equal(encoding.decode_values(tok)[:, 0, 0], [1, 0, 1, 1, 0])


def test_image_patches_round_trip_and_digits_split():
    train, test = ex.load_digits(n_train=30, n_test=10, rng=0)
    assert train.shape == (30, 8, 8) and test.shape == (10, 8, 8)
    assert 0 <= train.min() and train.max() <= 1
    v = encoding.image_tokens(train)
    assert v.shape == (30, 16, 4)
    np.testing.assert_array_equal(v[0, 0], train[0, :2, :2].ravel())
    np.testing.assert_array_equal(encoding.tokens_image(v), train)
    with pytest.raises(ValueError, match="n_train \\+ n_test"):
        ex.load_digits(n_train=1700, n_test=200)


def test_corruptions():
    rng = np.random.default_rng(0)
    v = rng.random((50, 16, 4))
    x, mask = encoding.corrupt(v, kind="masked", n_masked=4, rng=1)
    assert np.all(mask.sum(axis=1) == 4)
    np.testing.assert_allclose(x[~mask], encoding.encode_values(v)[~mask])
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0)
    x, _ = encoding.corrupt(v, kind="noise", p_noise=0.25, rng=1)
    changed = np.abs(encoding.decode_values(x) - v) > 1e-12
    assert 0.2 < changed.mean() < 0.3  # 25% of 3200 values: s.e. 0.8%
    x, mask = encoding.corrupt(v, kind="masked", n_masked=2, mask_value=0.5, rng=2)
    np.testing.assert_allclose(encoding.decode_values(x)[mask], 0.5)
    with pytest.raises(ValueError, match="kind"):
        encoding.corrupt(v, kind="blur")
    with pytest.raises(ValueError, match="n_masked must be < N"):
        encoding.corrupt(v, kind="masked", n_masked=16)
    with pytest.raises(ValueError, match="p_noise"):
        encoding.corrupt(v, kind="noise", p_noise=1.5)


def test_image_patches_of_other_sizes_round_trip_and_bad_patches_are_rejected():
    train, _ = ex.load_digits(n_train=5, n_test=1, rng=0)
    for patch, n in (((2, 1), 32), ((4, 4), 4), ((1, 1), 64), ((8, 8), 1)):
        v = encoding.image_tokens(train, patch=patch)
        assert v.shape == (5, n, 64 // n)
        np.testing.assert_array_equal(encoding.tokens_image(v, patch=patch), train)
    np.testing.assert_array_equal(encoding.image_tokens(train, patch=(4, 4))[0, 1],
                                  train[0, :4, 4:].ravel())
    with pytest.raises(ValueError, match="divide the image size"):
        encoding.image_tokens(train, patch=(3, 2))
    with pytest.raises(TypeError, match="pair of ints"):
        encoding.image_tokens(train, patch=(2.0, 2))


def _dip_curves(rng, M=200, T=100, dip=0.03, after=0.07, noise=0.005):
    """Error 0.09 at t = 0, a dip to 0.07 - dip at t = 1..3, then ``after`` (plus noise)."""
    base = np.full(T + 1, after)
    base[1:4] = 0.07 - dip
    base[0] = 0.09
    return base + noise * rng.normal(size=(M, T + 1))


def test_transient_memory_is_two_sided_and_can_fail():
    rng = np.random.default_rng(0)
    err = _dip_curves(rng)
    mem = transients.transient_memory(err, baseline=np.full(200, 0.07), rng=0)
    assert 1 <= mem.t_best <= 3 and mem.passed
    assert all(z > 3 for z in mem.margins().values())
    # each reference alone can make it fail:
    # no dip at all (flat curve)
    flat = 0.05 + 0.005 * rng.normal(size=(200, 101))
    assert not transients.transient_memory(flat, rng=0).passed
    # a dip that is not below the mean-image baseline
    worse = transients.transient_memory(err, baseline=np.full(200, 0.03), rng=0)
    assert not worse.passed and worse.margins()["z_vs_baseline"] < -3
    # improvement that persists: an attractor, not a transient (no fall to the end state)
    stay = _dip_curves(rng, after=0.04)
    kept = transients.transient_memory(stay, baseline=np.full(200, 0.07), rng=0)
    assert not kept.passed and kept.margins()["z_vs_t0"] > 3
    # overlaps: higher is better
    up = transients.transient_memory(-err, maximise=True, rng=0)
    assert up.passed and up.value_best[0] > up.value_t0[0]
    with pytest.raises(ValueError, match="window"):
        transients.transient_memory(err, window=(0, 20))
    with pytest.raises(ValueError, match="baseline must have shape"):
        transients.transient_memory(err, baseline=np.zeros(3))


def test_transient_memory_chooses_t_star_without_the_evaluation_half():
    # the evaluation half has its minimum elsewhere: t* must not follow it
    err = np.full((8, 11), 1.0)
    err[:, 0] = 2.0
    order = np.random.default_rng(5).permutation(8)
    sel, ev = order[:4], order[4:]
    err[np.ix_(sel, [3])] = 0.0
    err[np.ix_(ev, [7])] = 0.0
    assert transients.transient_memory(err, window=(1, 9), rng=5).t_best == 3


def test_lifetimes_of_synthetic_dips():
    T = 50
    err = np.full((4, T + 1), 0.5)
    err[:, 0] = 1.0
    err[0, 1:6] = 0.1  # a dip of 5 steps below everything
    err[1, 3:13] = np.linspace(0.45, 0.0, 10)  # a slow dip: only its lower half counts
    err[2, 1:] = 0.4  # better than the start and the baseline until the end: no transient
    err[3, 1:4] = 0.55  # a "dip" above the end state
    life = transients.transient_lifetimes(err, np.full(4, 0.8))
    assert life.half_depth[0] == 5 and life.t_min[0] == 1
    depth = 0.5 - 0.0
    assert life.half_depth[1] == np.sum(np.linspace(0.45, 0.0, 10) < 0.5 - depth / 2)
    assert life.half_depth[2] == 0 and life.below_start_and_baseline[2] == T
    assert life.half_depth[3] == 0 and life.depth[3] <= 0
    sm = life.summary()
    assert sm["half_depth"]["max"] == 5 and sm["fraction_with_dip"] == 0.5
    with pytest.raises(ValueError, match="baseline must have shape"):
        transients.transient_lifetimes(err, np.zeros(2))


def test_gaussian_potts_sequences_have_the_right_covariance():
    import replica_mlm as rm

    model = rm.GaussianPotts.random(L=6, shift=3.0, seed=1)
    x, v = encoding.gaussian_potts_sequences(model.precision, n=20000, rng=0)
    C = model.covariance
    # entries of a sample covariance have s.e. ~ sqrt((C_ii C_jj + C_ij^2) / n) <= 0.006 here
    np.testing.assert_allclose(np.cov(x.T), C, atol=5 * np.sqrt(2 * C.max() ** 2 / 20000))
    assert v.shape == (20000, 6, 1) and 0 < v.min() and v.max() < 1


def test_cli_bad_options_exit_2():
    from replica_mlm.cli import main

    runner = CliRunner()
    for args in (["attractor", "--seed", "-1"], ["attractor", "--bogus"],
                 ["attractor", "--seed", "x"]):
        res = runner.invoke(main, args)
        assert res.exit_code == 2, res.output
    assert "attractor" in runner.invoke(main, ["--help"]).output

