"""Progress bars of long calls (replica_mlm._base.progress): on stderr when asked (progress=True), off
with progress=False, and off by default (progress=None) when stderr is not a terminal (as under
pytest); the phase diagrams keep their documented default, progress=False."""

from __future__ import annotations

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm._base.progress import shown

SITE = rm.GaussianPotts.random(L=20, shift=3.0, rng=0).masked_site(0)
ISING = rm.PottsModel.random_ising(L=18, beta=0.3, rng=0)  # L > 16: the covariance is sampled
POTTS = rm.PottsModel.random(L=8, q=3, beta=0.3, rng=0)  # q > 2: the multinomial pseudo-likelihood

CALLS = {
    "simulate": lambda progress: rm.simulate(SITE, alpha=[1.5, 2.0], lam=0.1, seeds=3, rng=0,
                                             progress=progress),
    "simulate (Ising pseudo-likelihood)": lambda progress: rm.simulate(
        ISING, site=2, alpha=2.0, lam=0.1, seeds=2, rng=0, n_test=50, progress=progress),
    "simulate (Potts pseudo-likelihood)": lambda progress: rm.simulate(
        POTTS, site=1, alpha=3.0, lam=0.1, seeds=2, rng=0, n_test=50, progress=progress),
    "optimal_lambda": lambda progress: rm.optimal_lambda(SITE, alpha=[1.0, 2.0], progress=progress),
    "phase_diagram": lambda progress: rm.phase_diagram(SITE, alpha=[0.5, 2.0], lam=[0.01, 0.1],
                                                       progress=progress),
    "shift_phase_diagram": lambda progress: rm.shift_phase_diagram(alpha=[0.5, 2.0], shift=[3.0, 4.0],
                                                                   lam=0.1, progress=progress),
    "masked_site": lambda progress: ISING.masked_site(2, samples=400, progress=progress),
    "learning_curve (general engine)": lambda progress: rm.learning_curve(
        SITE, alpha=[1.5, 2.0], lam=0.1, loss="logistic", channel="sign", progress=progress),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_bar_on_stderr_only_when_asked(name, capfd):
    first = CALLS[name](True)
    out, err = capfd.readouterr()
    assert out == "" and ("/s]" in err or "s/" in err), err[-300:]  # a tqdm rate on stderr
    second = CALLS[name](False)
    assert capfd.readouterr() == ("", "")
    if "phase" not in name:  # the phase diagrams take True or False (default False)
        CALLS[name](None)  # stderr is captured, not a terminal: no bar
        assert capfd.readouterr() == ("", "")
    if name == "simulate":  # the bar changes nothing
        assert np.array_equal(first[1].eg, second[1].eg)
    if "pseudo-likelihood" in name:  # a bar over the seeds; the same numbers without it
        assert "pseudo-likelihood: seeds" in err, err[-300:]
        assert np.array_equal(first.eg, second.eg)


def test_progress_takes_only_true_false_or_none():
    assert shown(True) and not shown(False)
    for bad in ("yes", 1, 0, np.bool_(True)):
        with pytest.raises(TypeError, match="progress must be True, False or None"):
            shown(bad)


def test_sample_shows_its_pilot_run_and_its_sampling_and_draws_the_same(capfd):
    """PottsModel.sample without sweeps_between/burn_in runs a pilot first: a bar over its sweeps,
    then over the saving sweeps; the bars change no number (same seed, with and without)."""
    model = rm.PottsModel.random(L=6, q=3, beta=0.3, rng=0)
    shown_bars = model.sample(50, rng=1, progress=True)
    err = capfd.readouterr().err
    assert "sampler pilot run" in err and "sampling 50 sequences" in err, err[-300:]
    assert np.array_equal(shown_bars, model.sample(50, rng=1, progress=False))
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("args", [
    ["phase", "--L", "12", "--points", "6", "--lam-points", "4"],
    ["curve", "--L", "12", "--points", "4", "--loss", "logistic", "--channel", "sign"],
], ids=["phase", "curve-general-engine"])
def test_the_long_commands_draw_a_bar_when_asked(args, tmp_path):
    """``phase`` was silent for 27 s: with --progress (the default on a terminal) its sweep draws
    a bar on stderr, and the console's last line says whether every point converged."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-m", "replica_mlm.cli", *args, "--progress", "--out",
                          str(tmp_path / "o")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert run.returncode == 0, run.stderr[-500:]
    assert "/s]" in run.stderr or "s/" in run.stderr, run.stderr[-300:]
    assert "converged" in run.stdout, run.stdout
