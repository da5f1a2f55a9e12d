"""Disk cache of the source code sympy generates for the compiled equations (:mod:`.compiled`).

Deriving and lambdifying the saddle-point equations costs seconds of sympy in every new process;
compiling the generated Python source costs milliseconds. The source is therefore stored in one
JSON file per backend (and the asymptotic series of :func:`.limits.expansions`, as ``srepr``
strings, in a file of their own) in the user's cache directory:

* ``$REPLICA_MLM_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/replica_mlm`` or
  ``~/.cache/replica_mlm`` (Linux and other POSIX), ``~/Library/Caches/replica_mlm`` (macOS),
  ``%LOCALAPPDATA%\\replica_mlm\\Cache`` (Windows) -- the locations of ``platformdirs``, without
  the dependency;
* the file name carries a digest of :func:`fingerprint`: the versions of replica_mlm, sympy,
  numpy, mpmath and Python, and a hash of the source of the derivation (``potentials.py``,
  ``compiled.py`` and this module), so a change of any of them derives afresh;
* files are written with :func:`replica_mlm.io.write_json` (atomically): two processes may write at
  once, a reader sees a whole file; a file that does not parse, holds another fingerprint or
  lacks an entry is ignored and rewritten. Where the folder cannot be written the equations are
  derived in memory, as without a cache.

The cached code is exactly what ``sympy.lambdify`` generates (the test suite compares it with a
fresh derivation); :func:`load` executes it in the namespace lambdify would use, checked name by
name when the source is generated.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from collections.abc import Callable
from functools import cache
from importlib import metadata
from pathlib import Path

import mpmath
import numpy as np

from replica_mlm import io

ENV = "REPLICA_MLM_CACHE_DIR"
#: the modules whose source determines the generated code
DERIVATION = ("potentials.py", "compiled.py", "compiled_cache.py")
#: cache files other than the compiled backends, and the further sources their contents depend on
#: (the asymptotic series of :func:`replica_mlm.theory.limits.expansions`, stored as ``srepr``)
EXTRA_SOURCES = {"expansions": ("limits.py",)}
#: name of the function in every generated source
FUNCTION = "_lambdifygenerated"

_memory: dict[str, dict] = {}


def cache_dir() -> Path:
    """The folder of the cache files (see the module docstring)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local"
        return Path(local) / "replica_mlm" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "replica_mlm"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "replica_mlm"


@cache
def fingerprint(backend: str = "numpy") -> dict:
    """What ``backend``'s cache file depends on: versions and the hash of the derivation's source
    (:data:`DERIVATION`, plus :data:`EXTRA_SOURCES` of that file)."""
    from replica_mlm import __version__

    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in DERIVATION + EXTRA_SOURCES.get(backend, ()):
        digest.update((here / name).read_bytes())
    return {"replica_mlm": __version__, "sympy": metadata.version("sympy"),
            "numpy": np.__version__, "mpmath": mpmath.__version__,
            "python": f"{sys.version_info.major}.{sys.version_info.minor}",
            "source": digest.hexdigest()}


def cache_file(backend: str) -> Path:
    """The cache file of ``backend`` for the current :func:`fingerprint`."""
    digest = io.fingerprint_digest(fingerprint(backend))[:16]
    return cache_dir() / f"compiled-{backend}-{digest}.json"


def _read(path: Path, backend: str) -> dict | None:
    """The entries of a cache file, or None if it is missing, unreadable or not ours."""
    try:
        data = io.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (not isinstance(data, dict) or data.get("fingerprint") != fingerprint(backend)
            or not isinstance(data.get("entries"), dict)):
        return None
    return data["entries"]


def _write(backend: str, entries: dict) -> None:
    try:
        io.write_json(cache_file(backend), {"fingerprint": fingerprint(backend), "entries": entries},
                      indent=1, sort_keys=True)
    except OSError:
        pass  # a read-only or missing home: the equations stay in memory, derived as before


def fetch(backend: str, derive: Callable[[], dict], *,
          complete: Callable[[dict], bool] | None = None) -> dict:
    """The entries of ``backend``'s cache file; if it is unusable, ``derive()`` them and write it.

    ``complete(entries)`` says whether a file read from disk holds everything (default: the
    compiled equations' entries).
    """
    path = str(cache_file(backend))
    if path not in _memory:
        entries = _read(Path(path), backend)
        if entries is None or not (complete or _complete)(entries):
            entries = derive()
            _write(backend, entries)
        _memory[path] = entries
    return _memory[path]


def _complete(entries: dict) -> bool:
    from replica_mlm.theory.compiled import SUM_SETS, _sums_key

    return ("equations" in entries and "estimation" in entries
            and all(_sums_key(names) in entries for names in SUM_SETS))


def store(backend: str, new: dict) -> None:
    """Add ``new`` entries to ``backend``'s cache (in memory and on disk, merged with the file)."""
    path = cache_file(backend)
    entries = _memory.setdefault(str(path), {})
    entries.update(new)
    on_disk = _read(path, backend) or {}
    _write(backend, {**on_disk, **entries})


@cache
def namespace(backend: str) -> dict:
    """The globals the generated code runs in: those of ``sympy.lambdify(modules=backend)``."""
    module = np if backend == "numpy" else mpmath
    names = {name: getattr(module, name) for name in dir(module) if not name.startswith("_")}
    return {**names, backend: module, "builtins": __builtins__}


def load(source: str, backend: str) -> Callable:
    """The function defined by one generated ``source``."""
    ns = namespace(backend)
    local: dict = {}
    exec(compile(source, f"<replica_mlm compiled {backend}>", "exec"), ns, local)
    return local[FUNCTION]


def _global_names(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _global_names(const)
    return names


def lambdify_source(args, expr, backend: str, *, cse: bool, rename: Callable) -> str:
    """``sympy.lambdify``'s source for ``expr`` in ``args`` (renamed to ``rename(arg)``).

    Raises
    ------
    AssertionError
        If the code uses a global that :func:`namespace` does not hold as lambdify does.
    """
    import sympy as sp

    new = [sp.Symbol(rename(a)) for a in args]
    subs = dict(zip(args, new, strict=True))
    expr = [e.xreplace(subs) for e in expr] if isinstance(expr, list) else expr.xreplace(subs)
    fn = sp.lambdify(new, expr, modules=backend, cse=cse)
    source = inspect.getsource(fn)
    ns = namespace(backend)
    for name in _global_names(fn.__code__):
        if name in fn.__globals__ and ns.get(name) is not fn.__globals__[name]:
            raise AssertionError(f"generated code uses {name!r}, which the cache namespace lacks")
    return source
