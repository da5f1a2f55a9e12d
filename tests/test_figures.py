"""Figures: the package style, the one writer (300 dpi PNG + PDF, nothing clipped) and image
comparisons of the main figures against baselines in tests/baseline/.

The figures are drawn from synthetic, deterministic inputs (closed forms, no solver), so that these
tests take a few seconds. The baselines are small PNGs (72 dpi, Agg, DejaVu fonts of matplotlib)
compared by :func:`_difference`: same size, RMS of the pixel difference (``compare_images``) and the
fraction of clearly changed pixels. To accept a
deliberate change of a figure, regenerate them with ``REPLICA_MLM_NEW_BASELINES=1 pytest
tests/test_figures.py`` and look at the new PNGs before committing them.
"""

from __future__ import annotations

import itertools
import os
import types
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.testing.compare import compare_images
from PIL import Image

from replica_mlm import plotting
from replica_mlm.theory.studies.phase import PhaseDiagram

BASELINE = Path(__file__).with_name("baseline")
#: RMS pixel difference (0-255) accepted: anti-aliasing and font hinting of another FreeType
#: build stay well below it; a moved line, a changed colour or a missing legend entry do not
TOL = 3.0
#: fraction of pixels allowed to change by more than 40 of 255 (see _difference)
MAX_CHANGED = 2e-4
#: dpi of the compared PNGs (small files in the repository)
DPI = 72
RIDGE = (0.0, 1e-2, 1e-1)
RHO, NOISE = 0.05, 0.33


def _isotropic_eg(alpha: np.ndarray, lam: float) -> np.ndarray:
    """Closed-form test error of ridge with isotropic inputs (Hastie et al. 2022, theorem 2), a
    deterministic stand-in for a learning curve: teacher power RHO, noise NOISE, ratio g = 1/alpha.

    lam = 0 (minimum norm): NOISE + RHO (1 - alpha) + NOISE alpha / (1 - alpha) below alpha = 1,
    NOISE + NOISE / (alpha - 1) above. lam > 0: NOISE + RHO lam^2 m'(-lam) + NOISE g (m(-lam) -
    lam m'(-lam)), m the Stieltjes transform of the Marchenko-Pastur law of ratio g.
    """
    a = np.asarray(alpha, dtype=float)
    if lam == 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a < 1, NOISE + RHO * (1 - a) + NOISE * a / (1 - a), NOISE + NOISE / (a - 1))
    g = 1 / a

    def m(z):
        return (1 - g - z - np.sqrt((1 - g - z) ** 2 - 4 * g * z)) / (2 * g * z)

    h = 1e-5 * lam
    dm = (m(-lam + h) - m(-lam - h)) / (2 * h)
    return NOISE + RHO * lam**2 * dm + NOISE * g * (m(-lam) - lam * dm)


def _curves(alpha):
    return [types.SimpleNamespace(alpha=alpha, eg=_isotropic_eg(alpha, lam), lam=lam, rho=RHO, noise=NOISE)
            for lam in RIDGE]


def _learning_figure():
    alpha = np.linspace(0.02, 12.0, 600)
    curves = _curves(alpha)
    sims = []
    gen = np.random.default_rng(3)
    for lam in RIDGE:
        for a in (0.4, 0.8, 1.3, 2.0, 3.0):
            true = float(_isotropic_eg(np.array([a]), lam)[0])
            se = 0.02 * true
            sims.append((a, lam, true + se * gen.standard_normal(), se))
    return plotting.plot_learning_curves(curves, simulations=sims,
                                         title=r"synthetic: isotropic ridge, $\rho = 0.05$")


def _phase_figure():
    alpha = np.linspace(0.05, 4.0, 60)
    lam = np.geomspace(1e-4, 10.0, 40)
    eg = np.array([_isotropic_eg(alpha, x) for x in lam])
    deg = np.gradient(eg, alpha, axis=1)
    peak = np.array([alpha[np.argmax(row)] if 0 < np.argmax(row) < alpha.size - 1 else np.nan for row in eg])
    opt = lam[np.argmin(eg, axis=0)]
    pd = PhaseDiagram(alpha=alpha, axis="lam", y=lam, lam=lam, shift=None, eg=eg, train_loss=eg,
                      deg_dalpha=deg, optimal_lam=opt, optimal_eg=eg.min(axis=0), peak_alpha=peak,
                      rho=RHO, noise=NOISE)
    return plotting.plot_phase_diagram(pd, title="synthetic phase diagram")


def _excess_figure():
    a = np.geomspace(0.5, 3e4, 200)
    curves = [(lam, a, _isotropic_eg(a, lam) - NOISE) for lam in RIDGE[1:]]
    sims = [(x, lam, float(_isotropic_eg(np.array([x]), lam)[0] - NOISE) * 1.01, 0.03 * NOISE / x)
            for lam in RIDGE[1:] for x in (3.0, 10.0, 30.0)]
    return plotting.plot_excess_decay(curves, noise=NOISE, fit_range=(1e3, 1e4), simulations=sims,
                                      title="synthetic decay")


FIGURES = {"learning_curves": _learning_figure, "phase_diagram": _phase_figure,
           "excess_decay": _excess_figure}


def _render(fig, path: Path) -> Path:
    (png,) = plotting.save(fig, path, formats=(".png",), dpi=DPI)
    plt.close(fig)
    return png


def _difference(expected: Path, actual: Path) -> str | None:
    """None if ``actual`` is ``expected`` up to rendering noise, else what differs.

    Same size (a layout change changes the tight box), RMS difference <= TOL
    (``compare_images``) and at most MAX_CHANGED of the pixels off by more than 40 of 255 in a
    channel: a restyled line changes about 8e-4 of them, anti-aliasing noise none.
    """
    with Image.open(expected) as a, Image.open(actual) as b:
        if a.size != b.size:
            return f"size {b.size} instead of {a.size}"
        A = np.asarray(a.convert("RGB"), dtype=int)
        B = np.asarray(b.convert("RGB"), dtype=int)
    changed = float(np.mean(np.abs(A - B).max(axis=2) > 40))
    rms = compare_images(str(expected), str(actual), tol=TOL, in_decorator=True)
    if changed > MAX_CHANGED or rms is not None:
        return f"{changed:.2e} of the pixels changed, RMS {rms['rms'] if rms else 'within tolerance'}"
    return None


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figure_matches_baseline(name, tmp_path):
    png = _render(FIGURES[name](), tmp_path / name)
    expected = BASELINE / f"{name}.png"
    if os.environ.get("REPLICA_MLM_NEW_BASELINES"):
        BASELINE.mkdir(exist_ok=True)
        expected.write_bytes(png.read_bytes())
    assert expected.exists(), f"no baseline {expected}: see this module's docstring"
    diff = _difference(expected, png)
    assert diff is None, f"{name}: figure differs from its baseline: {diff}"


def test_comparison_detects_a_material_change(tmp_path):
    """The comparison is tight enough: one curve in another dash pattern, or no legend, fails."""
    fig = _learning_figure()
    fig.axes[0].get_lines()[1].set_linestyle(":")
    changed = _render(fig, tmp_path / "restyled")
    fig = _learning_figure()
    fig.axes[0].get_legend().remove()
    no_legend = _render(fig, tmp_path / "no_legend")
    for png in (changed, no_legend):
        assert _difference(BASELINE / "learning_curves.png", png) is not None, png.name


def _canvas_check(fig, png: Path, dpi: float) -> None:
    """The PNG is the tight box of the figure plus the margin, at ``dpi``; every label is inside it."""
    fig.set_dpi(dpi)  # text extents depend on the renderer's dpi (hinting): measure at the saved one
    renderer = fig.canvas.get_renderer()
    pad = plotting.STYLE["savefig.pad_inches"]
    tight = fig.get_tightbbox(renderer)  # inches
    with Image.open(png) as im:
        assert im.info["dpi"][0] == pytest.approx(dpi, abs=0.5)
        width, height = im.size
    assert width == pytest.approx((tight.width + 2 * pad) * dpi, abs=1)  # rounding to pixels
    assert height == pytest.approx((tight.height + 2 * pad) * dpi, abs=1)
    texts = [t for ax in fig.axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts)]
    texts += [t for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    for ax in fig.axes:  # tick labels of the ticks in view (matplotlib draws only those)
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        texts += [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]
        texts += [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
    drawn = [t for t in texts if t.get_visible() and t.get_text().strip()]
    assert len(drawn) > 10
    for t in drawn:
        box = t.get_window_extent(renderer).transformed(fig.dpi_scale_trans.inverted())
        assert tight.x0 - 1e-6 <= box.x0 and box.x1 <= tight.x1 + 1e-6, t.get_text()
        assert tight.y0 - 1e-6 <= box.y0 and box.y1 <= tight.y1 + 1e-6, t.get_text()


def test_learning_curve_saved_at_300_dpi_with_every_label_inside(tmp_path):
    """The mlm_fig3_left path: plot_learning_curves, then plotting.save outside any style context
    (as replica_mlm.validation.mlm_section does). Before the fix it came out at 150 dpi, 720 x 510 px,
    its x label cut off."""
    fig = _learning_figure()
    assert not plt.rcParams["savefig.bbox"]  # outside the style: matplotlib's defaults
    png, pdf = plotting.save(fig, tmp_path / "mlm_fig3_left")
    assert pdf.read_bytes().startswith(b"%PDF") and png.suffix == ".png"
    _canvas_check(fig, png, 300)
    plt.close(fig)


def test_style_is_package_data_and_usable_by_name():
    assert Path(plotting.STYLE_FILE).is_file()
    with plt.style.context(plotting.STYLE_NAME):
        assert plt.rcParams["savefig.dpi"] == 300 and plt.rcParams["mathtext.fontset"] == "dejavusans"
        cycle = plt.rcParams["axes.prop_cycle"].by_key()
        # every colour comes with a dash pattern, and consecutive lines differ in their dashes
        # (distinct in greyscale print), over at least four patterns
        dashes = cycle["linestyle"]
        assert len(set(dashes)) >= 4 and all(a != b for a, b in itertools.pairwise(dashes))
        assert len(set(cycle["color"])) == len(cycle["color"]) == len(dashes)
    with plt.style.context(plotting.STYLE):
        assert plt.rcParams["savefig.bbox"] == "tight"
    assert plt.rcParams["savefig.bbox"] != "tight"  # the context restored matplotlib's default


def test_save_accepts_path_with_suffix_and_writes_png_and_pdf(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    written = plotting.save(fig, tmp_path / "sub" / "figure.pdf")
    plt.close(fig)
    assert [p.name for p in written] == ["figure.png", "figure.pdf"]
    assert all(p.stat().st_size > 0 for p in written)


def test_save_measures_the_figure_once_and_keeps_every_margin(tmp_path):
    """plotting.save lays the figure out once for both files (plotting._tight_boxes): the PNG is
    byte for byte what matplotlib's own ``bbox_inches="tight"`` writes; the PDF's page is at least
    matplotlib's own tight PDF page in both directions (its text metrics are wider than Agg's, so
    it gets twice the margin) and at most two margins larger."""
    import re

    fig = _learning_figure()
    png, pdf = plotting.save(fig, tmp_path / "once")
    rc = {k: v for k, v in plotting.STYLE.items() if k.startswith(("savefig.", "pdf."))}
    with plt.rc_context(rc):
        fig.savefig(tmp_path / "own.png")
        fig.savefig(tmp_path / "own.pdf", metadata={"CreationDate": None})
    plt.close(fig)
    assert png.read_bytes() == (tmp_path / "own.png").read_bytes()

    def page(path):
        box = re.search(rb"/MediaBox \[ ([\d. ]+) \]", path.read_bytes()).group(1)
        return np.array([float(x) for x in box.split()])[2:]

    ours, own = page(pdf), page(tmp_path / "own.pdf")
    margin = 72 * plotting.STYLE["savefig.pad_inches"]
    assert np.all(ours >= own) and np.all(ours <= own + 2 * margin), (ours, own)


def test_beats_no_learning_against_closed_form():
    """beats_no_learning returns the first grid alpha after the peak with eg < C_ii; for lam = 0 the
    closed form eg = NOISE + NOISE / (alpha - 1) crosses C_ii = RHO + NOISE at 1 + NOISE / RHO."""
    alpha = np.linspace(0.02, 12.0, 6000)
    c = _curves(alpha)[0]
    got = plotting.beats_no_learning(c)
    exact = 1 + NOISE / RHO
    assert exact < got <= exact + (alpha[1] - alpha[0]) + 1e-12
    short = types.SimpleNamespace(alpha=alpha[alpha < 4], eg=c.eg[alpha < 4], lam=0.0, rho=RHO, noise=NOISE)
    assert np.isnan(plotting.beats_no_learning(short))
