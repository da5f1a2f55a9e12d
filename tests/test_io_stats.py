"""One writer per kind of file (replica_mlm._base.io), one estimator of mean +- standard error (stats)."""

import csv
import io as stdio
import math
import statistics
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as sps

import replica_mlm as rm
from replica_mlm._base import io as rio
from replica_mlm._base.stats import MeanSE, mean_stderr, zscore

FLOATS = [0.1, 1 / 3, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -0.0, np.inf, -np.inf,
          np.nan, np.float64(2.0) ** 0.5, np.float32(0.1), -7.5e-300]


def _same_float(x, y) -> bool:
    x = float(x)
    return isinstance(y, float) and (math.isnan(y) if math.isnan(x) else
                                     (x == y and math.copysign(1, x) == math.copysign(1, y)))


def test_write_json_round_trips_inf_nan_and_numpy_through_load(tmp_path):
    obj = {"v": FLOATS, "a": np.array([[np.inf, 1.5], [np.nan, -np.inf]]), "i": np.int64(7),
           "b": np.bool_(False), "path": tmp_path, "nested": {"eg": np.float64(np.inf)}, "t": (1, 2.5)}
    rio.write_json(tmp_path / "x.json", obj, indent=1)
    back = rm.load(tmp_path / "x.json")
    assert all(_same_float(x, y) for x, y in zip(FLOATS, back["v"], strict=True))
    assert back["a"][0] == [np.inf, 1.5] and math.isnan(back["a"][1][0]) and back["a"][1][1] == -np.inf
    assert back["i"] == 7 and type(back["i"]) is int and back["b"] is False
    assert back["path"] == str(tmp_path) and back["nested"] == {"eg": np.inf} and back["t"] == [1, 2.5]
    text = (tmp_path / "x.json").read_text()
    assert text.endswith("}\n") and "Infinity" in text and "NaN" in text and '"inf"' not in text
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # no temporary file left
    with pytest.raises(TypeError):
        rio.write_json(tmp_path / "y.json", {"f": object()})
    assert not (tmp_path / "y.json").exists()


def test_write_csv_round_trips_every_float_exactly_through_load(tmp_path):
    rows = [{"k": k, "x": x, "flag": k % 2 == 0, "name": f"r{k}", "none": None if k else 1.0}
            for k, x in enumerate(FLOATS)]
    text = rio.write_csv(tmp_path / "t.csv", rows)
    assert text == (tmp_path / "t.csv").read_text()
    frame = rm.load(tmp_path / "t.csv")
    assert list(frame.columns) == ["k", "x", "flag", "name", "none"]
    assert all(_same_float(x, y) for x, y in zip(FLOATS, frame["x"].tolist(), strict=True))
    assert frame["k"].dtype.kind == "i" and frame["flag"].dtype.kind == "b"
    assert frame["flag"].tolist() == [k % 2 == 0 for k in range(len(FLOATS))]
    assert frame["none"].iloc[0] == 1.0 and frame["none"].iloc[1:].isna().all()
    lines = text.splitlines()
    assert lines[8] == "7,-inf,False,r7," and lines[9].startswith("8,nan,True,")
    # numpy scalars are written as the Python numbers they hold, not as "np.float64(...)"
    assert "np." not in text and lines[10].startswith("9,1.4142135623730951,")


def test_csv_text_is_the_writers_old_convention():
    """The convention the CLI and the validation tables used (csv.writer, repr of each float)."""
    rng = np.random.default_rng(3)
    rows = [[float(v), int(n), "name", bool(b), float(w)] for v, n, b, w in
            zip(rng.standard_normal(20) * 10.0 ** rng.integers(-300, 300, 20), rng.integers(-5, 10**12, 20),
                rng.integers(0, 2, 20), [np.inf, np.nan, -np.inf, 0.0] * 5, strict=True)]
    cols = ["v", "n", "s", "b", "w"]
    buf = stdio.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(cols)
    for r in rows:
        writer.writerow([repr(c) if isinstance(c, float) else c for c in r])
    assert rio.csv_text(rows, columns=cols) == buf.getvalue()
    assert rio.csv_text([dict(zip(cols, r, strict=True)) for r in rows]) == buf.getvalue()


def test_csv_refuses_what_it_cannot_write_back():
    with pytest.raises(TypeError, match="column 'a' holds list"):
        rio.csv_text([{"a": [1, 2]}])
    with pytest.raises(TypeError, match="column 'z' holds complex"):
        rio.csv_text([[1.0, 1j]], columns=["x", "z"])
    with pytest.raises(ValueError, match="row 1 has 1 cells for 2 columns"):
        rio.csv_text([[1.0, 2.0], [3.0]], columns=["x", "y"])
    with pytest.raises(ValueError, match="needs columns="):
        rio.csv_text([[1.0, 2.0]])
    assert rio.csv_text([], columns=["x"]) == "x\n"


def test_curves_csv_round_trip_with_the_interpolation_peak(tmp_path):
    task = rm.GaussianPotts.limit(shift=3.0)
    curves = rm.learning_curve(task, alpha=np.array([0.5, 1.0, 2.0]), lam=[0.0, 0.1])
    assert curves[0].eg[1] == np.inf
    from replica_mlm.theory.studies.curve import curves_to_csv

    text = curves_to_csv(curves, tmp_path / "c.csv")
    assert text == (tmp_path / "c.csv").read_text() and ",inf," in text
    for got, want in zip(rm.load(tmp_path / "c.csv"), curves, strict=True):
        for name in ("alpha", "eg", "q", "V", "m_hat", "iterations", "residual"):
            a, b = getattr(got, name), getattr(want, name)
            assert np.array_equal(a, b, equal_nan=True) and a.dtype.kind == b.dtype.kind, name


# --- mean +- standard error ------------------------------------------------------------------


def test_mean_stderr_matches_independent_references():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(37) * 3.0 + 1e3
    m, se = mean_stderr(x)
    assert isinstance(m, float) and isinstance(se, float)
    # exact rational arithmetic on the same doubles, rounded once at the end
    fr = [Fraction(v) for v in x]
    mean_exact = sum(fr) / len(fr)
    var_exact = sum((v - mean_exact) ** 2 for v in fr) / (len(fr) - 1)
    assert m == pytest.approx(float(mean_exact), rel=4e-16)
    assert se == pytest.approx(math.sqrt(var_exact / len(fr)), rel=1e-15)
    assert se == pytest.approx(statistics.stdev(x.tolist()) / math.sqrt(x.size), rel=1e-15)
    assert se == pytest.approx(float(sps.sem(x)), rel=1e-15)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_mean_stderr_along_an_axis_is_the_old_expression_bit_for_bit(axis):
    """Every replaced call site computed x.mean(axis), x.std(axis, ddof=1) / sqrt(n)."""
    x = np.random.default_rng(axis + 5).exponential(size=(4, 7, 3))
    m, se = mean_stderr(x, axis=axis)
    n = x.shape[axis]
    assert np.array_equal(m, x.mean(axis=axis))
    assert np.array_equal(se, x.std(axis=axis, ddof=1) / np.sqrt(n))
    assert np.array_equal(se, x.std(axis=axis, ddof=1) / math.sqrt(n))
    flat = x[:, 2, 1]
    assert mean_stderr(flat) == (float(flat.mean()), float(flat.std(ddof=1) / np.sqrt(len(flat))))
    assert mean_stderr(list(flat)) == mean_stderr(flat) and isinstance(mean_stderr(flat), MeanSE)


def test_one_value_has_no_standard_error_unless_the_caller_says_what_to_report():
    with pytest.raises(ValueError, match="at least 2 values"):
        mean_stderr([3.0])
    with pytest.raises(ValueError, match="at least 2 values"):
        mean_stderr(np.ones((1, 4)), axis=0)
    assert mean_stderr([3.0], single=0.0) == (3.0, 0.0)
    assert mean_stderr([3.0], single=math.inf) == (3.0, math.inf)
    m, se = mean_stderr(np.ones((1, 4)), axis=0, single=np.nan)
    assert np.array_equal(m, np.ones(4)) and se.shape == (4,) and np.isnan(se).all()
    with pytest.raises(ValueError, match="at least one measurement"):
        mean_stderr([])
    with pytest.raises(ValueError, match="at least one measurement"):
        mean_stderr(np.ones((0, 3)), axis=0)
    with pytest.raises(ValueError, match="axis must be in"):
        mean_stderr(np.ones((2, 3)), axis=2)
    for bad in ([True, False], [1 + 1j, 2.0], ["1", "2"], [1.0, None]):
        with pytest.raises(TypeError):
            mean_stderr(bad)
    with pytest.raises(TypeError, match="single must be"):
        mean_stderr([1.0], single="0")
    with pytest.raises(TypeError):
        mean_stderr([1.0, 2.0], axis=0.0)


def test_zscore():
    assert zscore(3.0, 1.0, 0.5) == 4.0 and zscore(1.0, 3.0, 0.5) == -4.0
    assert zscore(2.0, 1.0, 0.0) == math.inf and zscore(0.0, 1.0, 0.0) == -math.inf
    assert zscore(1.0, 1.0, 0.0) == 0.0 and math.isnan(zscore(np.nan, 1.0, 0.0))
    assert math.isnan(zscore(1.0, 2.0, np.nan)) and zscore(1.0, 2.0, np.inf) == 0.0
    z = zscore(np.array([1.0, 2.0, 4.0]), np.array([1.0, 1.0, 1.0]), np.array([0.0, 0.5, 1.5]))
    assert np.array_equal(z, [0.0, 2.0, 2.0])
    rng = np.random.default_rng(1)
    a, b, s = rng.standard_normal(50), rng.standard_normal(50), rng.exponential(size=50)
    assert np.array_equal(zscore(a, b, s), (a - b) / s)
    with pytest.raises(ValueError, match="stderr must be >= 0"):
        zscore(1.0, 0.0, -1.0)
    with pytest.raises(TypeError):
        zscore(1.0, 0.0, True)


def test_simulation_standard_errors_are_unchanged():
    """rm.simulate's standard errors (now from mean_stderr) equal the formula it used before."""
    site = rm.GaussianPotts.random(L=20, shift=3.0, seed=0).masked_site(0)
    sim = rm.simulate(site, alpha=1.5, lam=[0.01, 0.1], seeds=5, rng=2)
    for name in ("eg", "train_loss", "test_loss", "estimation_error"):
        x = getattr(sim, name)
        assert np.array_equal(getattr(sim, f"{name}_mean"), x.mean(axis=0))
        assert np.array_equal(getattr(sim, f"{name}_stderr"), x.std(axis=0, ddof=1) / np.sqrt(5))
    with pytest.raises(ValueError, match="seeds must be >= 2"):
        rm.simulate(site, alpha=1.5, lam=0.1, seeds=1, rng=2)
