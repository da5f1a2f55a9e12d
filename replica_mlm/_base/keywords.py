"""Keyword arguments a function does not take: one TypeError that names the typo and suggests the
closest name it does take (a part of the shared input checks, :mod:`replica_mlm._base.checks`).

``rm.solve(site, alpha=2.0, lamda=0.1)`` would otherwise say "missing argument 'lam'" without naming
``lamda``, and a keyword swallowed by ``**options`` would surface deep inside a solver under an
internal name. Every public function that takes keywords is decorated with :func:`keywords`.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable

__all__ = ["ALIASES", "keywords", "unknown_keyword"]

#: names from other libraries and their name here, suggested before any spelling neighbour
#: (``seed=`` is close to ``seeds`` in spelling, but the seed of a function here is ``rng``)
ALIASES = {"seed": "rng", "random_state": "rng", "lambda": "lam", "lambda_": "lam", "alphas": "alpha"}


def unknown_keyword(function: str, given: str, accepted: Iterable[str]) -> TypeError:
    """The TypeError for keyword ``given`` that ``function`` does not take, with the closest of
    ``accepted`` (difflib) as a suggestion, or the list of accepted keywords if none is close."""
    accepted = sorted(set(accepted))
    alias = ALIASES.get(given.lower())
    close = [alias] if alias in accepted else difflib.get_close_matches(given, accepted, n=1, cutoff=0.6)
    hint = (f"; did you mean {close[0]!r}?" if close
            else f"; it takes {', '.join(repr(a) for a in accepted)}" if accepted else "; it takes none")
    return TypeError(f"{function}() got an unexpected keyword argument {given!r}{hint}")


def keywords(func: Callable | None = None, *, options: Iterable[str] = ()):
    """Decorator: calling ``func`` with a keyword it does not take raises :func:`unknown_keyword`'s
    TypeError before the call.

    The keywords taken are ``func``'s named parameters and ``options``: the documented names a
    ``**options`` parameter passes on (e.g. a solver's ``tol``). Without ``options`` a ``**kwargs``
    parameter takes any keyword. The check is one set lookup per keyword given.
    """
    def decorate(f: Callable) -> Callable:
        params = inspect.signature(f).parameters.values()
        named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        accepted = frozenset(named | set(options))
        open_ended = any(p.kind is p.VAR_KEYWORD for p in params) and not options
        if open_ended:
            return f
        name = f.__name__

        @functools.wraps(f)
        def checked(*args, **kwargs):
            for key in kwargs:
                if key not in accepted:
                    raise unknown_keyword(name, key, accepted)
            return f(*args, **kwargs)

        return checked

    return decorate if func is None else decorate(func)
