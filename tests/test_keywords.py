"""A keyword a public function does not take: a TypeError that names it and suggests the closest
keyword the function takes (replica_mlm._base.keywords), for every public function that takes keywords."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import replica_mlm as rm
from replica_mlm._base.keywords import keywords, unknown_keyword


def _public_functions() -> dict[str, object]:
    out = {name: getattr(rm, name) for name in rm.__all__
           if inspect.isfunction(getattr(rm, name, None))}
    out.update({f"plotting.{name}": getattr(rm.plotting, name) for name in rm.plotting.__all__
                if inspect.isfunction(getattr(rm.plotting, name))})
    from replica_mlm.figures import protein_families

    out.update({f"protein_families.{n}": getattr(protein_families, n) for n in protein_families.__all__})
    return out


def _keyword_names(func) -> list[str]:
    return [p.name for p in inspect.signature(func).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


FUNCTIONS = {name: f for name, f in _public_functions().items()
             if (_keyword_names(f) and not any(p.kind is p.VAR_KEYWORD
                                               for p in inspect.signature(f).parameters.values()))
             or name in ("solve", "learning_curve")}


def test_the_table_holds_the_main_functions():
    assert {"solve", "learning_curve", "simulate", "optimal_lambda", "phase_diagram", "load",
            "plotting.plot_learning_curves", "plotting.plot_phase_diagram"} <= set(FUNCTIONS)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_misspelt_keyword_is_named_with_the_closest_one(name):
    func = FUNCTIONS[name]
    for right in _keyword_names(func):
        typo = right + right[-1]  # one letter doubled: "lam" -> "lamm"
        with pytest.raises(TypeError) as info:
            func(**{typo: 1})
        message = str(info.value)
        assert f"unexpected keyword argument {typo!r}; did you mean " in message, message
        close = message.split("did you mean ")[1].strip("'?")
        assert close in _keyword_names(func) or close in rm.theory.solve.SOLVER_OPTIONS


def test_the_issue_example():
    site = rm.GaussianPotts.random(L=20, shift=3.0, rng=0).masked_site(0)
    with pytest.raises(TypeError, match=r"solve\(\) got an unexpected keyword argument 'lamda'; "
                                        r"did you mean 'lam'\?"):
        rm.solve(site, alpha=2.0, lamda=0.1)
    with pytest.raises(TypeError, match="'seed'; did you mean 'rng'"):  # not 'seeds': an alias
        rm.simulate(site, alpha=2.0, lam=0.1, seed=0)
    with pytest.raises(TypeError, match="'lambda'; did you mean 'lam'"):
        rm.learning_curve(site, alpha=np.array([1.0, 2.0]), **{"lambda": 0.1})
    # a solver option the default method does not take: said without internal names
    with pytest.raises(ValueError, match=r"route 'root' of learning_curve takes no options; got seed "
                                         r"\(rm.show_options\('root'\) lists each\)") as info:
        rm.learning_curve(site, alpha=np.array([1.0, 2.0]), lam=0.1, seed=0)
    assert "_solve" not in str(info.value)
    # right keywords still work, and the numbers are those of the undecorated function
    assert rm.solve(site, alpha=2.0, lam=0.1).eg == rm.solve.__wrapped__(site, alpha=2.0, lam=0.1).eg


def test_the_helper():
    @keywords
    def f(*, alpha, lam):
        return alpha + lam

    assert f(alpha=1, lam=2) == 3
    expected = r"f\(\) got an unexpected keyword argument 'zzz'; it takes 'alpha', 'lam'"
    with pytest.raises(TypeError, match=expected):
        f(alpha=1, zzz=2)
    assert "did you mean 'lam'" in str(unknown_keyword("g", "lamb", ["lam", "alpha"]))
    assert inspect.signature(f).parameters.keys() == {"alpha", "lam"}
