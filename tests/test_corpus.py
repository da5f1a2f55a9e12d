"""Nothing changes for users' numbers: every call of the fixed corpus (tests/corpus.py: over 500
points over the routes, tasks, losses and channels) gives today's results, identical or within 4 eps
relative, as frozen in tests/data/corpus.json."""

from __future__ import annotations

import json

import corpus
import pytest

FROZEN = json.loads(corpus.PATH.read_text())
CALLS = dict(corpus._calls())


def test_the_corpus_is_large_enough():
    assert set(FROZEN) == set(CALLS)
    assert corpus.count_points(FROZEN) >= 500


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_corpus_call_gives_the_frozen_numbers(name):
    now = corpus._flat(CALLS[name]())
    frozen = FROZEN[name]
    assert set(now) == set(frozen), f"{name}: fields changed"
    bad = [k for k in frozen if not corpus.same(json.loads(json.dumps(now[k])), frozen[k])]
    shown = [(k, now[k], frozen[k]) for k in bad[:3]]
    assert not bad, f"{name}: {shown} differ beyond {corpus.EPS_FACTOR} eps"
