"""Hostile inputs of issue 38 that reached past the shared checks: each refused with a message naming
the argument, or computed correctly where the input is valid (alpha = 1e-300, a CR-only FASTA)."""

from __future__ import annotations

import copy
import math
import re
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm import plotting

SITE = rm.GaussianPotts.random(L=5, shift=3.0, seed=0).masked_site(0)
CURVE = rm.learning_curve(SITE, alpha=[0.5, 1.5], lam=0.1)
PD = rm.phase_diagram(SITE, alpha=[0.5, 1.0, 2.0], lam=[0.01, 0.1, 1.0], optimal=False)
A = np.geomspace(2, 200, 5)


@pytest.fixture(autouse=True)
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield
    plt.close("all")


# ------------------------------------------------------------------ theory="mixture"
def _ising_with(weights):
    site = rm.PottsModel.random_ising(L=6, beta=0.5, seed=0).masked_site(0)
    if weights is None:
        site.__dict__["mixture"] = None
    else:
        mixture = copy.copy(site.mixture)
        object.__setattr__(mixture, "weights", np.array(weights))
        site.__dict__["mixture"] = mixture  # the cached property, replaced
    return site


@pytest.mark.parametrize("weights", [[1.0, 0.0], [1.5, -0.5], [0.6, 0.6], [1.0]])
def test_mixture_weights_are_checked(weights):
    with pytest.raises(ValueError, match=r"task\.mixture\.weights must be K >= 2 class weights, each > 0"):
        rm.solve(_ising_with(weights), alpha=2.0, lam=0.1, loss="logistic", theory="mixture")


@pytest.mark.parametrize("call", ["solve", "learning_curve", "bayes_optimal"])
def test_a_missing_mixture_is_a_value_error(call):
    site = _ising_with(None)
    kwargs = {"alpha": 2.0} if call != "learning_curve" else {"alpha": [1.0, 2.0]}
    if call != "bayes_optimal":
        kwargs.update(lam=0.1, loss="logistic")
    with pytest.raises(ValueError, match=r"theory='mixture' needs a task with a Gaussian mixture"):
        getattr(rm, call)(site, theory="mixture", **kwargs)


def test_a_valid_mixture_still_solves():
    site = rm.PottsModel.random_ising(L=6, beta=0.5, seed=0).masked_site(0)
    assert rm.solve(site, alpha=2.0, lam=0.1, loss="logistic", theory="mixture").converged


# ------------------------------------------------------------------ rm.load
def test_load_refuses_deep_nesting_and_bad_lam(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested deeper"):
        rm.load(deep)
    curve = rm.learning_curve(SITE, alpha=[0.5, 1.5], lam=0.1)
    good = tmp_path / "good.csv"
    curve.to_csv(good)
    head, *rows = good.read_text().splitlines(keepends=True)
    assert rm.load(good)[0].lam == 0.1
    for name, lam, words in [("nan", "nan", "lam must be finite"), ("neg", "-0.1", "lam must be >= 0")]:
        bad = tmp_path / f"{name}.csv"
        bad.write_text(head + "".join(r.replace("0.1,", f"{lam},", 1) for r in rows))
        with pytest.raises(ValueError, match=words):
            rm.load(bad)
    header_only = tmp_path / "header.csv"
    header_only.write_text(head)
    with pytest.raises(ValueError, match="a header and no rows"):
        rm.load(header_only)


def test_a_nul_in_a_path_is_named(tmp_path):
    for call in (rm.load, rm.MSA.read):
        with pytest.raises(ValueError, match=r"a\\x00b.*contains a NUL byte"):
            call(str(tmp_path / "a\x00b.csv"))


# ------------------------------------------------------------------ rm.amp, rm.bayes_optimal
def test_amp_refuses_numbers_that_overflow():
    X, y = SITE.sample(12, rng=5)
    with pytest.raises(ValueError, match=r"teacher has an entry of magnitude 1e\+308"):
        rm.amp(X, y, site=SITE, teacher=np.full(X.shape[1], 1e308))
    with pytest.raises(ValueError, match="y has an entry of magnitude"):
        rm.amp(X, y * 1e200, site=SITE)
    with pytest.raises(ValueError, match="X: the sign channel's normaliser Z underflowed"):
        rm.amp(X * 1e100, np.sign(y), site=SITE, channel="sign")


def test_bayes_optimal_at_alpha_1e_300_is_the_small_alpha_limit():
    """q grows linearly from alpha = 0 (q = alpha q_hat'(0) rho-like slope): q / alpha at 1e-300,
    1e-200 and 1e-100 agree to 1e-12, and eg is the prior's error, eg(alpha -> 0)."""
    points = {a: rm.bayes_optimal(SITE, alpha=a) for a in (1e-300, 1e-200, 1e-100)}
    slopes = [p.q / a for a, p in points.items()]
    assert all(p.converged for p in points.values())
    assert max(slopes) - min(slopes) <= 1e-12 * max(slopes)
    assert math.isclose(points[1e-300].eg, points[1e-100].eg, rel_tol=1e-14)


def test_contact_precision_refuses_a_separation_beyond_the_columns():
    scores = np.random.default_rng(0).normal(size=(6, 6))
    with pytest.raises(ValueError, match=r"min_separation must be <= 5"):
        rm.contact_precision(scores + scores.T, np.ones((6, 6)), min_separation=2**64)


# ------------------------------------------------------------------ alignments
def test_a_cr_only_fasta_reads_as_its_lf_twin(tmp_path):
    lf, cr = tmp_path / "lf.fasta", tmp_path / "cr.fasta"
    lf.write_bytes(b">a\nACDEF\n>b\nACDEG\n")
    cr.write_bytes(b">a\rACDEF\r>b\rACDEG\r")
    a, b = rm.MSA.read(lf), rm.MSA.read(cr)
    assert np.array_equal(a.sequences, b.sequences) and a.names == b.names


# ------------------------------------------------------------------ plotting
@pytest.mark.parametrize(("bins", "error", "words"), [
    (0, ValueError, "bins must be >= 1"), (-1, ValueError, "bins must be >= 1"),
    (True, TypeError, "bins must be an integer"), ("x", TypeError, "bins must be an integer"),
    ([1.0], TypeError, "bins must be an integer"), (2.5, TypeError, "bins must be an integer"),
    (10**12, ValueError, "bins must be <= 10000"),
])
def test_z_histogram_bins_are_checked(bins, error, words):
    with pytest.raises(error, match=words):
        plotting.plot_z_histogram(np.zeros(10), bins=bins)


def test_learning_curves_name_a_wrong_entry():
    with pytest.raises(TypeError, match=r"curves\[0\] must be a LearningCurve"):
        plotting.plot_learning_curves(["x"])


# ------------------------------------------------------------------ figures say what they show
def test_every_series_takes_a_label_and_the_bayes_line_stays_visible():
    a = rm.learning_curve(SITE, alpha=[0.5, 1.5, 3.0], lam=0.1)
    b = rm.learning_curve(SITE, alpha=[0.5, 1.5, 3.0], lam=0.1, method="general")
    fig = plotting.plot_learning_curves([a, b], labels=["root", "general engine"])
    texts = [t.get_text() for t in fig.legends[0].get_texts()] if fig.legends else [
        t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "root" in texts and "general engine" in texts
    with pytest.raises(ValueError, match="labels must hold one str per curve"):
        plotting.plot_learning_curves([a, b], labels=["only one"])
    best = rm.optimal_lambda(SITE, alpha=[0.5, 1.5, 3.0])
    bo = rm.bayes_optimal_curve(SITE, alpha=[0.5, 1.5, 3.0])
    ax = plotting.plot_learning_curves([a], optimal=best, bayes_optimal=bo).axes[0]
    z = {ln.get_label(): ln.get_zorder() for ln in ax.get_lines()}
    bayes = next(k for k in z if k.startswith("Bayes-optimal"))
    optimal = next(k for k in z if "optimal" in k and k != bayes)
    assert z[bayes] > z[optimal]  # on top of the optimal-lam line, which can coincide with it


def test_a_binary_curve_is_titled_against_chance_not_c_ii():
    from replica_mlm.cli.curve_command import _title

    curve = rm.learning_curve(SITE, alpha=[0.5, 1.0, 2.0], lam=0.1, loss="logistic", channel="sign")
    title = _title(SITE, [curve], L=5, shift=3.0, site=0, limit=False)
    assert "1/2$ (chance)" in title and "C_{ii}" not in title
    ridge = rm.learning_curve(SITE, alpha=[0.5, 1.0, 2.0], lam=0.1)
    assert "C_{ii}" in _title(SITE, [ridge], L=5, shift=3.0, site=0, limit=False)


def test_phase_contour_labels_read_upright():
    gp = rm.GaussianPotts.random(L=40, shift=3.0, seed=0).masked_site(0)
    pd = rm.phase_diagram(gp, alpha=np.linspace(0.1, 3, 60), lam=np.logspace(-3, 1, 30), optimal=False)
    texts = plotting.plot_phase_diagram(pd).axes[0].texts
    angles = [t.get_rotation() % 360 for t in texts if t.get_text()[:1].isdigit()]
    # left to right, or (within 10 degrees of vertical) upwards like the y label: never upside down
    assert angles and all(a <= 100 or a >= 270 for a in angles), angles


# ------------------------------------------------------------------ long fits say where they are
def test_fit_potts_draws_progress_over_its_sites_or_iterations(tmp_path, capsys):
    path = tmp_path / "a.fasta"
    path.write_text(">a\nACDEFGHIKL\n>b\nACDEFGHIKV\n>c\nACDQFGHIKL\n>d\nMCDQFGHIKL\n")
    fit = rm.fit_potts(rm.MSA.read(path), max_iter=3, progress=True)
    err = capsys.readouterr().err
    assert "fit_potts (plm)" in err and "/10 " in err and fit.iterations <= 3  # over the 10 sites
    fit = rm.fit_potts(rm.MSA.read(path), method="factored", heads=2, max_iter=3, progress=True)
    err = capsys.readouterr().err
    assert "fit_potts (factored)" in err and "/3 " in err and fit.iterations <= 3  # over the iterations
    with pytest.raises(TypeError, match="progress must be True, False or None"):
        rm.fit_potts(rm.MSA.read(path), max_iter=3, progress="yes")


def test_contacts_says_on_the_console_whether_the_fit_converged(tmp_path):
    import json

    from click.testing import CliRunner

    from replica_mlm.cli import main

    path = tmp_path / "a.fasta"
    path.write_text(">a\nACDEFGHIKL\n>b\nACDEFGHIKV\n>c\nACDQFGHIKL\n>d\nMCDQFGHIKL\n")
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["contacts", str(path), "--method", "plm", "--max-iter", "2",
                                       "--precision", "single", "--out", str(out)])
    assert result.exit_code == 0, result.output
    meta = json.loads((out / "contacts.json").read_text())
    assert meta["converged"] is False and meta["parameters"]["precision"] == "single"
    assert "fit did NOT converge after 2 iterations" in result.output


# ------------------------------------------------------------------ the second audit's cases
@pytest.mark.parametrize("alpha", [1e-301, 1e-315, 5e-324])
def test_bayes_optimal_below_its_range_is_refused_naming_alpha(alpha):
    """Below alpha = 1e-300 the overlap q (~ 1e-4 alpha on this site) underflows: at 1e-315 the
    solver's start took log(0) ('math domain error'); now a ValueError naming alpha and the range."""
    with pytest.raises(ValueError, match=r"alpha must be >= 1e-300 \(the Bayes-optimal solver takes 1e-300"):
        rm.bayes_optimal(SITE, alpha=alpha)
    with pytest.raises(ValueError, match=r"alpha must be >= 1e-300"):
        rm.bayes_optimal_curve(SITE, alpha=[alpha, 1.0])


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: plotting.plot_phase_diagram("x"), TypeError, r"pd must be a PhaseDiagram .* got str 'x'"),
    (lambda: plotting.plot_phase_diagram(PD, levels=0), ValueError, "levels must be >= 1"),
    (lambda: plotting.plot_phase_diagram(PD, levels=10**9), ValueError, "levels must be <= 50"),
    (lambda: plotting.plot_excess_decay([(1e-3, A, 0.3 / A)], noise=math.nan), ValueError,
     "noise must be finite"),
    (lambda: plotting.plot_excess_decay("x", noise=0.3), TypeError, "curves must be a sequence of"),
    (lambda: plotting.plot_excess_decay([(1e-3, A, A[:2])], noise=0.3), ValueError,
     r"curves\[0\]: excess has shape"),
    (lambda: plotting.plot_excess_decay([(1e-3, A, 0.3 / A)], noise=0.3, fit_range=(5, 2)), ValueError,
     "fit_range must be two alphas lo < hi"),
    (lambda: plotting.plot_excess_decay([(1e-3, A, 0.3 / A)], noise=0.3, simulations=[("a", 1, 2, 3)]),
     TypeError, r"simulations\[0\] must contain real numbers"),
    (lambda: plotting.plot_learning_curves([CURVE], title=3), TypeError, "title must be a str, got int 3"),
    (lambda: plotting.plot_z_histogram(np.zeros(4), title=b"t"), TypeError, "title must be a str"),
    (lambda: plotting.plot_learning_curves([CURVE], path="out/a\x00b"), ValueError,
     r"path 'out/a\\x00b' is no file name: it contains a NUL byte"),
    (lambda: plotting.plot_learning_curves([CURVE], path=3), TypeError, "path must be a str or a path"),
], ids=["phase-str", "levels-0", "levels-1e9", "noise-nan", "curves-str", "excess-shape", "fit-range",
        "simulations-str", "title-int", "title-bytes", "path-nul", "path-int"])
def test_plotting_inputs_go_through_the_shared_checks(call, error, words):
    with pytest.raises(error, match=words):
        call()
    assert plt.get_fignums() == []  # refused: no figure left open


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"top": 2.5}, TypeError, "top must be an integer"), ({"top": 0}, ValueError, "top must be >= 1"),
    ({"top": 3, "cutoff": math.nan}, ValueError, "cutoff must be finite"),
    ({"top": 3, "min_separation": -1}, ValueError, "min_separation must be >= 1"),
    ({"top": 3, "min_separation": 2**64}, ValueError, r"min_separation must be <= 7 \(j - i of a pair"),
], ids=["top-float", "top-0", "cutoff-nan", "separation-negative", "separation-2**64"])
def test_contact_map_inputs_are_checked(kwargs, error, words):
    from replica_mlm.figures.protein_families import plot_contact_map

    s = np.random.default_rng(0).normal(size=(8, 8))
    with pytest.raises(error, match=words):
        plot_contact_map(s + s.T, np.ones((8, 8)), **kwargs)


@pytest.mark.parametrize(("text", "words"), [
    (">a\nACDEFGHIKL\n", "got 1 sequence"),
    (">a\nACDEFGHIKL\n>b\nACDEFGHIKL\n", "got 2 sequence(s), all identical"),
], ids=["one", "two-identical"])
def test_an_alignment_without_covariation_is_refused(tmp_path, text, words):
    """One sequence (or copies of one) has no covariation: contacts wrote 45 'scores' of rounding
    noise (|score| ~ 1e-14) and exited 0; now rm.fit_potts, and with it the command, refuses."""
    from click.testing import CliRunner

    from replica_mlm.cli import main

    path = tmp_path / "one.fasta"
    path.write_text(text)
    for method in ("mean-field", "plm"):
        with pytest.raises(ValueError, match=re.escape(words)):
            rm.fit_potts(rm.MSA.read(path), method=method)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["contacts", str(path), "--out", str(out)])
    assert result.exit_code == 2 and "msa must hold at least 2 different sequences" in result.output
    assert not out.exists()


def _tiny_structure(path) -> None:
    """A 10-residue chain ACDEFGHIKL (N, CA and CB atoms; glycine without CB) on a helix-like coil."""
    names = ["ALA", "CYS", "ASP", "GLU", "PHE", "GLY", "HIS", "ILE", "LYS", "LEU"]
    lines, k = [], 1
    for i, res in enumerate(names):
        x, y, z = 2.3 * math.cos(1.75 * i), 2.3 * math.sin(1.75 * i), 1.5 * i
        for atom, element, dx in (("N", "N", -0.5), ("CA", "C", 0.0), ("CB", "C", 0.6)):
            if atom == "CB" and res == "GLY":
                continue
            lines.append(f"ATOM  {k:5d}  {atom:<3s} {res:3s} A{i + 1:4d}    {x + dx:8.3f}{y:8.3f}{z:8.3f}"
                         f"  1.00  0.00           {element}")
            k += 1
    path.write_text("\n".join([*lines, "END"]) + "\n")


def test_contacts_says_on_the_figure_whether_the_fit_converged(tmp_path, monkeypatch):
    """The contact map of an unconverged fit says so in its title, as the console and the JSON do."""
    pytest.importorskip("biotite")
    from click.testing import CliRunner
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from replica_mlm.cli import main

    path, pdb = tmp_path / "a.fasta", tmp_path / "tiny.pdb"
    path.write_text(">a\nACDEFGHIKL\n>b\nACDEFGHIKV\n>c\nACDQFGHIKL\n>d\nMCDQFGHIKL\n")
    _tiny_structure(pdb)
    texts: list[str] = []
    write = Figure.savefig

    def record(fig, fname, *a, **k):
        texts.extend(t.get_text() for t in fig.findobj(Text) if t.get_visible())
        return write(fig, fname, *a, **k)

    monkeypatch.setattr(Figure, "savefig", record)
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["contacts", str(path), "--pdb", str(pdb), "--method", "plm",
                                       "--max-iter", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "contact_map.png").exists()
    assert any("fit not converged (2 iterations)" in t for t in texts), texts
