"""Tests of the attractor-network experiments and of their validation entry and CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from replica_mlm import attractor_experiments as ex

pytest.importorskip("sklearn")


@settings(max_examples=50, deadline=None)
@given(arrays(float, st.tuples(st.integers(1, 3), st.integers(1, 5), st.integers(1, 4)),
              elements=st.floats(0.0, 1.0)))
def test_encoding_is_unit_and_round_trips(values):
    tok = ex.encode_values(values)
    assert tok.shape == (*values.shape[:-1], 2 * values.shape[-1])
    np.testing.assert_allclose(np.linalg.norm(tok, axis=-1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(ex.decode_values(tok), values, atol=1e-12)


def test_decoding_projects_onto_the_arc():
    # angles: 3pi/4 -> 1, -pi/4 -> 0, -0.9 pi (nearer the pi/2 end, going round) -> 1, pi -> 1
    ang = np.array([0.75 * np.pi, -0.25 * np.pi, -0.9 * np.pi, np.pi, -0.6 * np.pi])
    tok = np.stack([np.cos(ang), np.sin(ang)], axis=-1)[:, None, :]
    np.testing.assert_array_equal(ex.decode_values(tok)[:, 0, 0], [1, 0, 1, 1, 0])


def test_image_patches_round_trip_and_digits_split():
    train, test = ex.load_digits(n_train=30, n_test=10, rng=0)
    assert train.shape == (30, 8, 8) and test.shape == (10, 8, 8)
    assert 0 <= train.min() and train.max() <= 1
    v = ex.image_tokens(train)
    assert v.shape == (30, 16, 4)
    np.testing.assert_array_equal(v[0, 0], train[0, :2, :2].ravel())
    np.testing.assert_array_equal(ex.tokens_image(v), train)
    with pytest.raises(ValueError, match="n_train \\+ n_test"):
        ex.load_digits(n_train=1700, n_test=200)


def test_corruptions():
    rng = np.random.default_rng(0)
    v = rng.random((50, 16, 4))
    x, mask = ex.corrupt(v, kind="masked", n_masked=4, rng=1)
    assert np.all(mask.sum(axis=1) == 4)
    np.testing.assert_allclose(x[~mask], ex.encode_values(v)[~mask])
    np.testing.assert_allclose(np.linalg.norm(x, axis=-1), 1.0)
    x, _ = ex.corrupt(v, kind="noise", p_noise=0.25, rng=1)
    changed = np.abs(ex.decode_values(x) - v) > 1e-12
    assert 0.2 < changed.mean() < 0.3  # 25% of 3200 values: s.e. 0.8%
    x, mask = ex.corrupt(v, kind="masked", n_masked=2, mask_value=0.5, rng=2)
    np.testing.assert_allclose(ex.decode_values(x)[mask], 0.5)
    with pytest.raises(ValueError, match="kind"):
        ex.corrupt(v, kind="blur")
    with pytest.raises(ValueError, match="n_masked must be < N"):
        ex.corrupt(v, kind="masked", n_masked=16)
    with pytest.raises(ValueError, match="p_noise"):
        ex.corrupt(v, kind="noise", p_noise=1.5)


def test_transient_memory_statistic():
    rng = np.random.default_rng(0)
    t = np.arange(101)
    base = 0.05 + 0.02 * (t > 3)  # error 0.09 at t = 0, a dip at t = 1..3, then 0.07
    base[0] = 0.09
    err = base + 0.005 * rng.normal(size=(200, 101))
    mem = ex.transient_memory(err, rng=0)
    assert 1 <= mem.t_best <= 3 and mem.passed
    flat = 0.05 + 0.005 * rng.normal(size=(200, 101))
    assert not ex.transient_memory(flat, rng=0).passed
    with pytest.raises(ValueError, match="window"):
        ex.transient_memory(err, window=(0, 20))


def test_gaussian_potts_sequences_have_the_right_covariance():
    import replica_mlm as rm

    model = rm.GaussianPotts.random(L=6, shift=3.0, seed=1)
    x, v = ex.gaussian_potts_sequences(model.precision, n=20000, rng=0)
    C = model.covariance
    # entries of a sample covariance have s.e. ~ sqrt((C_ii C_jj + C_ij^2) / n) <= 0.006 here
    np.testing.assert_allclose(np.cov(x.T), C, atol=5 * np.sqrt(2 * C.max() ** 2 / 20000))
    assert v.shape == (20000, 6, 1) and 0 < v.min() and v.max() < 1


def test_validation_entry_quick(tmp_path):
    from replica_mlm.validation import attractor

    section = attractor.run(tmp_path, quick=True, rng=0)
    for fig in section.figures:
        assert (tmp_path / fig).stat().st_size > 1000
    assert {f.rsplit(".", 1)[1] for f in section.figures} == {"png", "pdf"}
    data = json.loads((tmp_path / "attractor.json").read_text())
    assert data["name"] == section.name
    names = {c.name for c in section.checks}
    assert "attractor.digits.transient_memory.masked.test" in names
    assert "attractor.potts.attractor_vs_factored_attention" in names
    # the claim, measured: transient memory on held-out test digits for both tasks
    for task in ("masked", "noise"):
        chk = next(c for c in section.checks
                   if c.name == f"attractor.digits.transient_memory.{task}.test")
        assert chk.passed, chk.detail
        assert 1 <= chk.value["t_best"] <= 20
    curves = data["data"]["digits"]["curves"]["masked"]["test"]["error"]
    assert len(curves["mean"]) == 101 and all(np.isfinite(curves["sem"]))


def test_cli_bad_options_exit_2():
    from replica_mlm.cli import main

    runner = CliRunner()
    for args in (["attractor", "--seed", "-1"], ["attractor", "--bogus"],
                 ["attractor", "--seed", "x"]):
        res = runner.invoke(main, args)
        assert res.exit_code == 2, res.output
    assert "attractor" in runner.invoke(main, ["--help"]).output
