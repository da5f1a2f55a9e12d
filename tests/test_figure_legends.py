"""Every figure the package draws: each legend entry looks like the artist it labels (line
style, width, marker, colour: some line of its axes is drawn so), and no two texts overlap (their
extents as Agg renders them).

Figures are checked where they are written: :func:`checked` wraps ``Figure.savefig``, so the
plotting functions, the command line (``replica-mlm curve``, ``phase``, ``simulate``, ``potts``,
``attractor``) and the validation figures are checked as they are drawn, on small inputs.
"""

from __future__ import annotations

import contextlib
import types

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text

import replica_mlm as rm
from replica_mlm import plotting
from replica_mlm.cli import main
from replica_mlm.figures.protein_families import plot_contact_map


def _dashes(artist, k: int = 0):
    """The unscaled dash pattern of a line or of a collection's k-th line: None if solid."""
    if isinstance(artist, Line2D):
        if artist.get_linestyle() in ("None", "none", " ", ""):
            return "none"
        offset, seq = artist._unscaled_dash_pattern
    else:
        styles = artist._us_linestyles
        offset, seq = styles[k % len(styles)]
    return None if not seq else (round(float(offset), 3), tuple(round(float(s), 3) for s in seq))


def _look(ln: Line2D) -> tuple:
    """(colour, width, dashes, marker) of a line; no width for markers without a line."""
    dashes = _dashes(ln)
    width = None if dashes == "none" else _width(ln.get_linewidth())
    return _colour(ln.get_color()), width, dashes, str(ln.get_marker())


def _width(w) -> float:
    return round(float(w), 1)


def _colour(c) -> tuple:
    return tuple(round(v, 3) for v in to_rgba(c))


def _line_styles(ax) -> set:
    """What the lines drawn on ``ax`` look like: ("line", colour, width, dashes) for each line with
    a line (lines, error bars, contours) and ("marker", colour, marker) for each with markers."""
    out = set()
    for ln in ax.get_lines():
        colour, width, dashes, marker = _look(ln)
        if dashes != "none":
            out.add(("line", colour, width, dashes))
        if marker not in ("None", "none", ""):
            out.add(("marker", colour, marker))
    for coll in ax.collections:
        colors = coll.get_edgecolor() if len(coll.get_edgecolor()) else coll.get_facecolor()
        widths = np.atleast_1d(coll.get_linewidth())
        for k, c in enumerate(colors):
            out.add(("line", _colour(c), _width(widths[k % len(widths)]), _dashes(coll, k)))
    return out


def _hatches(ax) -> set:
    found = set()
    for a in [*ax.collections, *ax.patches]:
        found |= {h for h in [a.get_hatch(), *(getattr(a, "hatches", None) or [])] if h}
    return found


def _legends(fig) -> list[tuple[Legend, list]]:
    """Each legend of ``fig`` with the axes whose artists it may label."""
    out = []
    for ax in fig.axes:
        if ax.get_legend() is not None:
            out.append((ax.get_legend(), [ax]))
    out += [(leg, list(fig.axes)) for leg in fig.legends]
    return out


def _entries(leg: Legend) -> list[tuple]:
    """(the drawing area of the handle, the label) of each entry of a legend."""
    from matplotlib.offsetbox import DrawingArea, HPacker, TextArea

    out = []
    for packer in leg._legend_handle_box.findobj(lambda a: isinstance(a, HPacker)):
        kids = packer.get_children()
        if len(kids) == 2 and isinstance(kids[0], DrawingArea) and isinstance(kids[1], TextArea):
            out.append((kids[0], kids[1].get_text()))
    return out


def legend_problems(fig) -> list[str]:
    """Legend entries whose look no artist of the axes they label has."""
    problems = []
    for leg, axes in _legends(fig):
        drawn = set().union(*(_line_styles(ax) for ax in axes))
        hatches = set().union(*(_hatches(ax) for ax in axes))
        for box, label in _entries(leg):
            for handle in box.findobj(lambda a: isinstance(a, Line2D | Patch)):
                if isinstance(handle, Patch):
                    if handle.get_hatch() and handle.get_hatch() not in hatches:
                        problems.append(f"{label!r}: hatch {handle.get_hatch()!r} is drawn nowhere")
                    continue
                if len(handle.get_xdata()) == 0 and str(handle.get_marker()) in ("None", "none", ""):
                    continue
                if _dashes(handle) == "none" and str(handle.get_marker()) in ("None", "none", ""):
                    continue  # an empty handle: a note in the legend
                colour, width, dashes, marker = _look(handle)
                # an error bar's entry draws its line and its marker apart: each must be drawn so
                wanted = ([("line", colour, width, dashes)] if dashes != "none" else []) + (
                    [("marker", colour, marker)] if marker not in ("None", "none", "") else [])
                for look in wanted:
                    if look not in drawn:
                        problems.append(f"{label!r}: legend {look} matches no line drawn")
    return problems


def _styles(ln: Line2D) -> set:
    """What tells series of one axes apart, whatever their colour: the dash pattern of a line's
    line and its marker, apart (a legend draws a line with markers as two handles)."""
    dashes, marker = _dashes(ln), str(ln.get_marker())
    return ({("line", dashes)} if dashes != "none" else set()) | (
        {("marker", marker)} if marker not in ("None", "none", "") else set())


def unlabelled_problems(fig) -> list[str]:
    """Series without a legend entry: a line (not white: an underlay) of an axes that a legend
    labels, whose dash pattern and marker no entry of that legend shows."""
    problems = []
    for leg, axes in _legends(fig):
        shown = set().union(*(_styles(h) for box, _ in _entries(leg) for h in box.findobj(Line2D)))
        for ax in axes:
            for ln in ax.get_lines():
                if len(ln.get_xdata()) == 0 or _colour(ln.get_color()) == _colour("white"):
                    continue
                if str(ln.get_marker()) in ("_", "|"):  # an error bar's caps: its marker has the entry
                    continue
                if not _styles(ln) <= shown:
                    problems.append(f"a line {sorted(_styles(ln) - shown)} of {ax.get_title()[:30]!r} has "
                                    "no legend entry")
    return problems


def _texts(fig, renderer) -> list[tuple[str, object]]:
    """Every text drawn: titles, labels, tick labels in view, annotations, legend and contour texts."""
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        bbox = t.get_window_extent(renderer)
        if bbox.width < 1 or bbox.height < 1:
            continue
        out.append((t, bbox))
    for ax in fig.axes:  # tick labels: only those of the ticks in view
        for axis in (ax.xaxis, ax.yaxis):
            shown = {id(lab) for tick in axis._update_ticks() for lab in (tick.label1, tick.label2)}
            out = [(t, b) for t, b in out if not _is_tick_label(t, axis) or id(t) in shown]
    return out


def _is_tick_label(t, axis) -> bool:
    return any(t is tick.label1 or t is tick.label2 for tick in [*axis.majorTicks, *axis.minorTicks])


def overlap_problems(fig) -> list[str]:
    """Pairs of texts whose extents overlap by more than a pixel each way."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = _texts(fig, renderer)
    problems = []
    for i, (a, ba) in enumerate(texts):
        for b, bb in texts[i + 1:]:
            w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
            h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
            if w > 1 and h > 1:
                problems.append(f"texts {a.get_text()!r} and {b.get_text()!r} overlap ({w:.0f} x {h:.0f} px)")
    return problems


@contextlib.contextmanager
def checked(*, unlabelled: bool = False):
    """Check every figure written in the block (``Figure.savefig``); yields the problems found.
    ``unlabelled``: also series without a legend entry (the command-line figures)."""
    found: dict[str, list[str]] = {}
    original = Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        fmt = kwargs.get("format") or str(getattr(fname, "name", fname)).rsplit(".", 1)[-1]
        if fmt != "pdf":  # the PNG and the PDF are one figure
            title = next((ax.get_title() for ax in self.axes if ax.get_title()), "")
            problems = legend_problems(self) + overlap_problems(self)
            problems += unlabelled_problems(self) if unlabelled else []
            found[f"figure {len(found)} ({title[:40]!r})"] = problems
        return original(self, fname, *args, **kwargs)

    Figure.savefig = savefig
    try:
        yield found
    finally:
        Figure.savefig = original
        plt.close("all")


def _assert_clean(found: dict, at_least: int) -> None:
    assert len(found) >= at_least, f"only {len(found)} figures were written: {sorted(found)}"
    bad = {name: p for name, p in found.items() if p}
    assert not bad, "\n".join(f"{name}: {p}" for name, ps in bad.items() for p in ps)


# --- the checks catch what they are for ---------------------------------------------------


def test_the_checks_see_a_wrong_legend_and_an_overlap():
    with plt.rc_context(plotting.STYLE):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1], color="black")  # the cycler's first style: solid
        ax.plot([0, 1], [1, 0], color="black")  # the cycler's second: dashed, not asked for
        ax.legend(handles=[Line2D([], [], color="black", ls="-", label="a"),
                           Line2D([], [], color="black", ls="-.", label="b")])
        ax.text(0.5, 0.5, "one text")
        ax.text(0.5, 0.5, "another text")
    legend = legend_problems(fig)
    assert len(legend) == 1 and "'b'" in legend[0]
    assert any("'one text' and 'another text'" in p for p in overlap_problems(fig))
    unlabelled = unlabelled_problems(fig)  # the dashed line: "b" is dash-dot
    assert len(unlabelled) == 1 and "(3.7, 1.6)" in unlabelled[0], unlabelled
    ax.plot([0, 1], [0.5, 0.5], color="0.5", ls=":")  # a series with no entry
    ax.plot([0.5], [0.5], "o", color="0.5")  # and markers with none
    assert len(unlabelled_problems(fig)) == 3, unlabelled_problems(fig)
    plt.close(fig)


# --- every figure ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    site = rm.GaussianPotts.random(L=60, shift=3.0, rng=0).masked_site(0)
    alpha = np.linspace(0.05, 4, 60)
    return types.SimpleNamespace(
        site=site,
        curves=rm.learning_curve(site, alpha=alpha, lam=[0.0, 1e-3, 0.1]),
        sims=rm.simulate(site, alpha=[0.5, 2.0, 3.5], lam=[1e-3, 0.1], seeds=4, rng=0),
        best=rm.optimal_lambda(site, alpha=np.linspace(0.2, 4, 6)),
    )


def test_plotting_functions(small):
    """Drawn without a path (the writer adds nothing to a figure; the commands below write)."""
    limit = rm.GaussianPotts.limit(3.0)
    pd = rm.phase_diagram(limit, alpha=np.linspace(0.1, 3, 24), lam=np.geomspace(1e-4, 10, 12))
    sd = rm.shift_phase_diagram(alpha=np.linspace(0.1, 3, 24), shift=np.linspace(2.2, 5, 8), lam=0.01)
    rng = np.random.default_rng(0)
    a = np.geomspace(2, 200, 30)
    rows = [{"loss": "square", "channel": "gaussian", "lam": 0.1, "alpha": 2.0, "eg_mean": 0.5,
             "eg_stderr": 0.01, "test_loss_mean": 0.5, "test_loss_stderr": 0.01}]
    figures = {
        "curves": lambda: plotting.plot_learning_curves(small.curves, title="curves"),
        "curves, simulations, optimal": lambda: plotting.plot_learning_curves(
            small.curves[1:], simulations=small.sims, optimal=small.best),
        "optimal alone": lambda: plotting.plot_learning_curves([small.best]),
        "phase": lambda: plotting.plot_phase_diagram(pd, title="phase"),
        "shift phase": lambda: plotting.plot_phase_diagram(sd),
        "z histogram": lambda: plotting.plot_z_histogram(rng.standard_normal(60),
                                                         excluded=rng.standard_normal(6) + 2),
        "excess decay": lambda: plotting.plot_excess_decay(
            [(lam, a, 0.3 / a + lam) for lam in (1e-3, 1e-2)], noise=0.3, fit_range=(20, 200),
            simulations=[(10.0, 1e-3, 0.031, 0.002)]),
        "erm": lambda: plotting.plot_erm_curves({("square", "gaussian"): small.curves[2]}, rows, alpha_c=1.5),
        "erm, two pairs": lambda: plotting.plot_erm_curves(
            {("square", "gaussian"): small.curves[2], ("absolute", "gaussian"): small.curves[1]},
            [*rows, dict(rows[0], loss="absolute", lam=small.curves[1].lam)]),
    }
    problems = []
    for name, draw in figures.items():
        fig = draw()
        found = legend_problems(fig) + overlap_problems(fig) + unlabelled_problems(fig)
        problems += [f"{name}: {p}" for p in found]
        plt.close(fig)
    assert not problems, "\n".join(problems)


def test_contact_map(tmp_path):
    rng = np.random.default_rng(0)
    L = 30
    s = rng.standard_normal((L, L))
    scores = (s + s.T) / 2
    pos = np.cumsum(rng.normal(size=(L, 3)) * 2.0, axis=0)
    dist = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
    with checked(unlabelled=True) as found:
        fig = plot_contact_map(scores, dist, top=20, path=tmp_path / "map")
    _assert_clean(found, 1)
    # the predicted pairs' markers are not cut by the axes: a pair in the first or last column
    # keeps its whole marker at the edge (the structure's squares fill their cells and are clipped)
    markers = [c for c in fig.axes[0].collections if "predicted" in c.get_label()]
    assert len(markers) == 2 and not any(c.get_clip_on() for c in markers)


@pytest.mark.parametrize("args", [
    ["phase", "--L", "40", "--points", "20", "--lam-points", "10"],
    ["phase", "--axis", "shift", "--limit", "--points", "20", "--shift-points", "8"],
    ["simulate", "--L", "40", "--alpha", "0.5", "--alpha", "2", "--lam", "0.01", "--lam", "0.1",
     "--seeds", "3"],
    ["dynamics", "--L", "40", "--points", "41", "--flow-alpha", "0.5", "--flow-alpha", "2"],
], ids=["phase", "phase-shift", "simulate", "dynamics"])
def test_command_line_figures(args, tmp_path):
    """Every command's figure passes the legend checks (the curve command's, under each channel,
    and the phase command's with the logistic loss: in the tests of what those figures say,
    below, which run the same commands)."""
    with checked(unlabelled=True) as found:
        res = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "out")])
        assert res.exit_code == 0, res.output
    _assert_clean(found, 1)


def _count_tick_labels(monkeypatch) -> list[tuple[str, int]]:
    """Record, for each figure saved, the labelled ticks in view on each axis of its first axes."""
    counts: list[tuple[str, int]] = []
    write = Figure.savefig

    def count(fig, fname, *a, **k):
        fig.canvas.draw()
        ax = fig.axes[0]
        views = ((ax.xaxis, sorted(ax.get_xlim()), 0), (ax.yaxis, sorted(ax.get_ylim()), 1))
        for axis, (lo, hi), k_pos in views:
            shown = [t for t in axis.get_ticklabels(which="both")
                     if t.get_visible() and t.get_text().strip() and lo <= t.get_position()[k_pos] <= hi]
            counts.append((axis.axis_name, len(shown)))
        return write(fig, fname, *a, **k)

    monkeypatch.setattr(Figure, "savefig", count)
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("section", ["mlm", "limit", "erm", "discrete", "potts", "attractor", "bayes",
                                     "figure2"])
def test_validation_figures(section, tmp_path):
    """The validation's figures, section by section at the quick settings (minutes: opt-in), series
    without a legend entry included (the dynamics section's figure: test_dynamics_section_figure)."""
    with checked(unlabelled=True) as found:
        res = CliRunner().invoke(main, ["validate", "--quick", "--section", section, "--out", str(tmp_path)])
        assert res.exit_code in (0, 1), res.output  # a failed claim is the report's business, not this test's
    _assert_clean(found, 1)


def test_dynamics_section_figure(tmp_path):
    """The dynamics section's figure (seconds): every series in its legend, the flows' ERM end
    points and early-stopping optima included (one entry each, as on ``replica-mlm dynamics``)."""
    with checked(unlabelled=True) as found:
        res = CliRunner().invoke(main, ["validate", "--quick", "--section", "dynamics", "--out",
                                        str(tmp_path)])
        assert res.exit_code in (0, 1), res.output
    _assert_clean(found, 1)


def test_site_learning_curves(tmp_path):
    """Two protein sites on a small alignment, held-out design alone and under the pool as the
    population (two rows, a legend per row): theory lines, measured error bars, teacher floors."""
    pytest.importorskip("biotite")
    pytest.importorskip("pandas")
    from replica_mlm.figures.protein_families import plot_site_learning_curves
    from replica_mlm.proteins import datasets
    from replica_mlm.proteins.learning_curve import site_learning_curve

    folder, name = datasets.FAMILIES["rhomboid"][:2]
    msa = rm.MSA.read(datasets.data_folder() / folder / name).filter(0.2).subset(np.arange(200))
    curves = [site_learning_curve(msa, site, M=[20, 60], lam=0.1, subsamples=3, columns=np.arange(6), rng=1)
              for site in (1, 4)]
    from replica_mlm.proteins.pool_curve import pool_learning_curve

    pool = [pool_learning_curve(msa, site, M=[20, 60], lam=0.1, subsamples=3, columns=np.arange(6), rng=1)
            for site in (1, 4)]
    with checked(unlabelled=True) as found:
        plot_site_learning_curves(curves, path=tmp_path / "sites", title="two sites")
        plot_site_learning_curves(curves, pool=pool, path=tmp_path / "both", title="two designs")
    _assert_clean(found, 2)
    with pytest.raises(ValueError, match="pool must hold"):
        plot_site_learning_curves(curves, pool=pool[::-1])


@pytest.mark.parametrize("command", ["potts", "attractor"])
def test_section_command_figures(command, tmp_path, monkeypatch):
    """``replica-mlm potts`` and ``replica-mlm attractor`` on smaller data than --quick: the same
    figures and artists, drawn by the command (a failed claim on so little data is not this test's
    business: exit status 0 or 1). The potts command's four figures (reconstruction, test loss,
    small lam, and the Gibbs sampler's autocorrelation diagnostics) and the attractor's: every
    entry drawn so, every series in a legend, no overlapping texts."""
    from dataclasses import replace

    from replica_mlm.validation import attractor_section, potts_section

    if command == "potts":
        quick = potts_section.settings_for(True)
        monkeypatch.setattr(potts_section, "settings_for", lambda _: replace(
            quick, L=5, q=3, Ms=(40, 100), reps=2, n_test=200, small_lam_Ms=(3, 6, 12), small_lam_reps=2,
            plm_max_M=100, max_iter=100))
    else:
        monkeypatch.setattr(attractor_section, "_sizes", lambda _: (
            {"n_train": 60, "n_test": 30, "n_eval": 30}, {"L": 8, "n_train": 80, "n_test": 80, "n_eval": 30}))
        monkeypatch.setattr(attractor_section, "DEFAULT_SETTINGS",
                            replace(attractor_section.DEFAULT_SETTINGS, epochs=5))
    write = Figure.savefig  # the PDF is the PNG's figure again (checked() skips it): not written, for time

    def png_only(fig, fname, *args, **kwargs):
        if str(getattr(fname, "name", fname)).endswith(".pdf") or kwargs.get("format") == "pdf":
            return None
        return write(fig, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", png_only)
    with checked(unlabelled=True) as found:
        res = CliRunner().invoke(main, [command, "--out", str(tmp_path / "out")])
        assert res.exit_code in (0, 1), res.output
        assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    _assert_clean(found, 4)


def _record_saved_texts(monkeypatch) -> list[str]:
    """A list that collects the visible texts of every figure the package saves from now on."""
    seen: list[str] = []
    write = Figure.savefig

    def record(fig, fname, *a, **k):
        seen.extend(t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip())
        return write(fig, fname, *a, **k)

    monkeypatch.setattr(Figure, "savefig", record)
    return seen


@pytest.mark.parametrize("args, claims, never", [
    (["--loss", "logistic", "--channel", "sign"], ["(chance)", "logistic loss, sign channel"],
     ["C_{ii}", "noise floor", "sigma", "interpolation"]),
    ([], ["(no learning)", r"\sigma^2", "noise floor", "interpolation"], ["chance", "loss,"]),
    (["--loss", "absolute"], ["(no learning)", "noise floor", "absolute loss, gaussian channel"],
     ["chance", "interpolation"]),  # alpha = 1 is the square loss's threshold
], ids=["sign", "gaussian", "absolute"])
def test_curve_figure_says_only_what_is_true(args, claims, never, tmp_path, monkeypatch):
    """The curve figure's title and legend name the channel's own references (chance 1/2 for a
    classification error; C_ii and the noise floor sigma^2 only for the gaussian channel, whose e_g
    is a squared error of the label, at least sigma^2 whatever the loss), and the title's claim on
    where e_g beats the reference holds on the curve written beside it."""
    import csv

    seen = _record_saved_texts(monkeypatch)
    counts = _count_tick_labels(monkeypatch)
    out = tmp_path / "out"
    with checked(unlabelled=True) as found:
        res = CliRunner().invoke(main, ["curve", "--L", "60", "--points", "40", "--lam", "0.01", "--lam",
                                        "0.1", *args, "--out", str(out)])
        assert res.exit_code == 0, res.output
    _assert_clean(found, 1)  # the legend checks of every command's figure
    # each axis carries at least three labelled ticks in view (a classification error between 0.45
    # and 0.5 on a log axis had shown two)
    assert counts and all(n >= 3 for _, n in counts), counts
    text = "\n".join(seen)
    for claim in claims:
        assert claim in text, f"{claim!r} not in the figure: {text}"
    for word in never:
        assert word not in text, f"{word!r} drawn on the figure: {text}"
    rows = [r for r in csv.DictReader(open(out / "curve.csv")) if float(r["lam"]) == 0.01]
    eg = np.array([float(r["eg"]) for r in rows])
    if "sign" in args:  # the title's claim on chance, checked against the numbers
        title = next(t for t in seen if "chance" in t and "At" in t)
        assert ("at every" in title) == bool(np.all(eg < 0.5)), (title, eg.max())


def test_phase_figure_legend_names_only_what_is_drawn(tmp_path, monkeypatch):
    """Logistic loss, sign channel: no alpha = 1 (the square loss's threshold), the hatch's entry
    only if some point has d eg/d alpha > 0, and the optimal-lam entry a line only where the line
    is inside the axes (else a note saying on which side), all checked against phase*.csv."""
    import csv

    seen = _record_saved_texts(monkeypatch)
    out = tmp_path / "out"
    with checked(unlabelled=True) as found:
        res = CliRunner().invoke(main, ["phase", "--L", "40", "--points", "10", "--lam-points", "5", "--loss",
                                        "logistic", "--channel", "sign", "--out", str(out)])
        assert res.exit_code == 0, res.output
    _assert_clean(found, 1)  # the legend checks of every command's figure
    text = "\n".join(seen)
    assert "interpolation" not in text and "logistic loss, sign channel" in text
    grid = list(csv.DictReader(open(out / "phase.csv")))
    assert ("more data hurts" in text) == any(float(r["deg_dalpha"]) > 0 for r in grid)
    lam = sorted({float(r["lam"]) for r in grid})
    lines = list(csv.DictReader(open(out / "phase_lines.csv")))
    best = [float(r["lam"]) for r in lines if r["line"] == "optimal_lam"]
    if all(b > lam[-1] for b in best):
        assert r"$\lambda$ range shown" in text and "above" in text
    elif any(lam[0] <= b <= lam[-1] for b in best):
        assert r"optimal $\lambda^*(\alpha)$" in seen
