"""Every gallery example (docs/examples/plot_*.py) runs and draws its figures.

The docs build (tests/test_docs.py) runs one example inside Sphinx; the others run here, one test
each, so that pytest-xdist spreads them over the workers. They are the scripts of the gallery,
unchanged: a few seconds each at their small sizes.
"""

import runpy
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pytest
from test_docs import BUILD_EXAMPLE, EXAMPLES

matplotlib.use("Agg")  # no display: the figures are only drawn

SCRIPTS = [p for p in EXAMPLES if p.stem != BUILD_EXAMPLE]


def test_every_example_is_run_somewhere():
    assert {p.stem for p in SCRIPTS} | {BUILD_EXAMPLE} == {p.stem for p in EXAMPLES}
    assert BUILD_EXAMPLE in {p.stem for p in EXAMPLES}


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_example_runs(script: Path):
    plt.close("all")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow, no sampler that did not mix
        runpy.run_path(str(script), run_name="__main__")
    figures = [plt.figure(n) for n in plt.get_fignums()]
    plt.close("all")
    assert figures, f"{script.name} drew no figure"
    assert all(f.axes for f in figures)
