"""Disk cache of the source code sympy generates for the compiled equations (:mod:`.compiled`).

Deriving and lambdifying the saddle-point equations costs seconds of sympy in every new process;
compiling the generated Python source costs milliseconds. The source is therefore stored in one
JSON file per backend (and the asymptotic series of :func:`.limits.expansions`, as ``srepr``
strings, in a file of their own) in the user's cache directory:

* ``$REPLICA_MLM_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/replica_mlm`` or
  ``~/.cache/replica_mlm`` (Linux and other POSIX), ``~/Library/Caches/replica_mlm`` (macOS),
  ``%LOCALAPPDATA%\\replica_mlm\\Cache`` (Windows) -- the locations of ``platformdirs``, without
  the dependency;
* a third file, ``"numeric"``, holds the numerical functions of the built-in losses and channels
  of the general engine (:func:`cached_functions`), so that a warm cache solves them without sympy;
* the file name carries a digest of :func:`fingerprint`: the versions of replica_mlm, sympy,
  numpy, mpmath and Python, and a hash of the source of the derivation (``potentials.py``,
  ``compiled.py`` and this module), so a change of any of them derives afresh;
* files are written with :func:`replica_mlm._base.io.write_json` (atomically, mode ``0o600``): two
  processes may write at once, a reader sees a whole file; a file that does not parse, holds
  another fingerprint or lacks an entry is ignored and rewritten, and so is a file whose entries
  fail to load (any error, not only an unreadable file). Where the folder cannot be written the
  equations are derived in memory, as without a cache.

What the cache trusts, and how it is protected
    The cached code is exactly what ``sympy.lambdify`` generates (the test suite compares it with
    a fresh derivation), and :func:`load` executes it; the expansions are ``sympify``-ed, which is
    an ``eval``. Anyone who could write a cache file could therefore run code in the next process
    that reads it. So (:mod:`.cache_guard`):

    * the folder is the user's own: created with mode ``0o700``; a folder, cache file or key file
      that is a symbolic link, not a regular file or directory, owned by another user, or writable
      by its group or by others is refused: the cache is not used in this process (the equations
      are derived in memory) and one :class:`~.cache_guard.CacheWarning` says which path and why;
    * files are read with ``O_NOFOLLOW | O_NONBLOCK``, checked with ``fstat`` before reading (a
      FIFO does not block), and read only up to 64 MiB;
    * every entry (``"equations"``, ``"estimation"``, each ``"sums:..."``; each expansion) carries an
      HMAC-SHA256 under a per-user random key (the file ``hmac-key``, mode ``0o600``, created
      race-free), computed over the backend, the fingerprint's digest, the entry's name and its
      content (all of its sources or ``srepr`` strings and their names). Only an entry whose MAC
      verifies is used; one that fails is derived afresh and rewritten. A keyed MAC, not a
      checksum: whoever edits a file could recompute a checksum (the file name's hash is public
      too), but not the MAC without the key;
    * as a second line, :func:`load` compiles only a single plain ``def`` (no decorator, default,
      annotation or statement besides it; no name but its arguments, its temporaries and the
      backend's functions, no ``_``-attribute), and :func:`sympify_srepr` only calls of a few
      sympy constructors on numbers and symbol names.

    Why sign code rather than store data only: the cached functions are Python source from
    ``sympy.lambdify`` (arithmetic, ``cse`` temporaries, backend functions); a data-only cache
    would need an expression format and an interpreter of its own, and would then no longer be
    checked against what lambdify generates.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import hmac
import inspect
import os
import sys
import warnings
from collections.abc import Callable
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import mpmath
import numpy as np

from replica_mlm._base import io, run_folder
from replica_mlm.theory.symbolic import cache_guard, numeric_functions
from replica_mlm.theory.symbolic.cache_guard import CacheWarning

ENV = "REPLICA_MLM_CACHE_DIR"
#: the modules whose source determines the generated code
DERIVATION = ("symbolic/potentials.py", "symbolic/compiled.py", "symbolic/compiled_cache.py")
#: cache files other than the compiled backends, and the further sources their contents depend on
#: (the asymptotic series of :func:`replica_mlm.theory.studies.asymptotics.expansions`, stored as ``srepr``)
EXTRA_SOURCES = {"expansions": ("studies/asymptotics.py",),
                 "numeric": ("sides/losses.py", "sides/channels", "symbolic/expressions.py",
                             "symbolic/numeric_functions.py")}
#: name of the function in every generated source
FUNCTION = "_lambdifygenerated"
#: the sympy constructors (called) and singletons (named) an expansion's ``srepr`` may hold
SREPR_CALLS = frozenset({"Add", "Mul", "Pow", "Integer", "Rational", "Float", "Symbol"})
SREPR_NAMES = frozenset({"oo", "zoo", "nan", "pi", "E", "I"})

#: the entries of each cache file in use, by path
_memory: dict[str, dict] = {}
#: the entries this process derived itself, by path (an error loading them is not the file's)
_derived: dict[str, dict] = {}
#: cache folders refused in this process, and whether the one warning has been given
_refused: dict[str, str] = {}
_warned = False
#: whether this process has said that it derives with sympy (:func:`notice`)
_noticed = False


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
    from replica_mlm._version import __version__

    here = Path(__file__).parents[1]  # replica_mlm/theory: the paths above are relative to it
    digest = hashlib.sha256()
    for name in DERIVATION + EXTRA_SOURCES.get(backend, ()):
        path = here / name  # a module, or a folder of them (every channel in its own file)
        for part in sorted(path.glob("*.py")) if path.is_dir() else (path,):
            digest.update(part.read_bytes())
    return {"replica_mlm": __version__, "sympy": metadata.version("sympy"),
            "numpy": np.__version__, "mpmath": mpmath.__version__,
            "python": f"{sys.version_info.major}.{sys.version_info.minor}",
            "source": digest.hexdigest()}


def cache_file(backend: str) -> Path:
    """The cache file of ``backend`` for the current :func:`fingerprint`."""
    digest = run_folder.fingerprint_digest(fingerprint(backend))[:16]
    return cache_dir() / f"compiled-{backend}-{digest}.json"


def _refuse(error: cache_guard.UnsafeCache) -> None:
    """Use no cache in this folder from now on; warn once per process."""
    global _warned
    _refused[str(cache_dir())] = error.reason
    if not _warned:
        _warned = True
        warnings.warn(f"replica_mlm does not use its equation cache: {error.path} {error.reason}; "
                      f"the equations are derived in memory. Remove it, or set {ENV} to a folder of "
                      f"your own.", CacheWarning, stacklevel=3)


def _sign(key: bytes, backend: str, name: str, value) -> str:
    """The MAC of entry ``name`` holding ``value`` (its sources, in canonical JSON)."""
    content = io.dumps(value, sort_keys=True)
    return cache_guard.mac(key, backend, run_folder.fingerprint_digest(fingerprint(backend)), name, content)


def _read(path: Path, backend: str, *, whole: bool = False) -> dict | None:
    """The entries of a cache file whose MAC verifies, or None if it is missing, unreadable or
    not ours (with ``whole``: also if any of its entries fails its MAC).

    Raises
    ------
    cache_guard.UnsafeCache
        If the folder, the file or the key fails the checks of :mod:`.cache_guard`.
    """
    if not cache_guard.private_folder(path.parent, create=False):
        return None
    raw = cache_guard.read_private(path)
    key = cache_guard.secret_key(path.parent, create=False)
    if raw is None or key is None:
        return None
    try:
        data = io.loads(raw.decode("utf-8"))
        if (not isinstance(data, dict) or data.get("fingerprint") != fingerprint(backend)
                or not isinstance(data.get("entries"), dict) or not isinstance(data.get("macs"), dict)):
            return None
        macs = data["macs"]
        verified = {name: value for name, value in data["entries"].items()
                    if isinstance(macs.get(name), str)
                    and hmac.compare_digest(macs[name].encode(), _sign(key, backend, name, value).encode())}
        return None if whole and len(verified) < len(data["entries"]) else verified
    except Exception:  # anything a file can provoke: bad UTF-8, RecursionError, MemoryError, ...
        return None


def _read_checked(path: Path, backend: str, *, whole: bool = False) -> dict | None:
    """:func:`_read`, with a refused folder or file turned into no cache (and the warning)."""
    if str(cache_dir()) in _refused:
        return None
    try:
        return _read(path, backend, whole=whole)
    except cache_guard.UnsafeCache as error:
        _refuse(error)
    except OSError:
        pass  # unreadable: derived, and rewritten if the folder can be written
    return None


def _write(backend: str, entries: dict) -> None:
    folder = cache_dir()
    if str(folder) in _refused:
        return
    try:
        cache_guard.private_folder(folder, create=True)
        key = cache_guard.secret_key(folder, create=True)
        if key is None:
            return
        macs = {name: _sign(key, backend, name, value) for name, value in entries.items()}
        io.write_json(cache_file(backend), {"fingerprint": fingerprint(backend), "entries": entries,
                                            "macs": macs}, indent=1, sort_keys=True, permissions=0o600)
    except cache_guard.UnsafeCache as error:
        _refuse(error)
    except OSError:
        pass  # a read-only or missing home: the equations stay in memory, derived as before


def notice(what: str) -> None:
    """Say once per process, on a terminal, that ``what`` is being derived with sympy (a cold
    cache); silent where stderr is not a terminal (pipes, files, tests), as for any library."""
    global _noticed
    if _noticed:
        return
    _noticed = True
    stream = sys.stderr
    if stream is not None and stream.isatty():
        print(f"replica_mlm: deriving {what} with sympy, once (cached in {cache_dir()})", file=stream)


def _derive(path: str, backend: str, derive: Callable[[], dict]) -> dict:
    if backend in ("numpy", "mpmath"):
        notice(f"the saddle-point equations ({backend})")
    entries = _derived[path] = _memory[path] = derive()
    _write(backend, entries)
    return entries


def fetch(backend: str, derive: Callable[[], dict], *, complete: Callable[[dict], bool] | None = None,
          convert: Callable[[dict], Any] | None = None) -> Any:
    """The entries of ``backend``'s cache file; if it is unusable, ``derive()`` them and write it.

    A file is used only if every entry it holds verifies, and ``complete(entries)`` says whether
    it holds everything (the caller knows its entries: :mod:`.compiled` passes
    :func:`.compiled.complete`; default: no further check). With ``convert``, returns
    ``convert(entries)``; should it raise (any exception) on entries read from disk, they are
    derived afresh, rewritten and converted again.
    """
    path = str(cache_file(backend))
    if path not in _memory:
        entries = _read_checked(Path(path), backend, whole=True)
        if entries is None or (complete is not None and not complete(entries)):
            _derive(path, backend, derive)
        else:
            _memory[path] = entries
    entries = _memory[path]
    if convert is None:
        return entries
    try:
        return convert(entries)
    except Exception:
        if _derived.get(path) is entries:
            raise  # the derivation's own error, not the file's
    return convert(_derive(path, backend, derive))


def cached_functions(key: str, derive: Callable[[], dict]) -> dict:
    """The functions of entry ``key`` of the ``"numeric"`` cache (the built-in losses and
    channels): ``derive()`` gives ``{name: source or list of sources}`` (with sympy) where the
    entry is missing or fails to load, and is stored; the result has the same shape, functions in
    place of sources."""
    def load_all(sources: dict) -> dict:
        return {name: [load(s, "numeric") for s in src] if isinstance(src, list) else load(src, "numeric")
                for name, src in sources.items()}

    entries = fetch("numeric", dict)  # the cache file's verified entries, or {}
    if key in entries:
        try:
            return load_all(entries[key])
        except Exception:  # whatever a cached entry provokes: derived afresh below
            pass
    notice(f"the numerical functions of {key}")
    sources = derive()
    store("numeric", {key: sources})
    return load_all(sources)


def store(backend: str, new: dict) -> None:
    """Add ``new`` entries to ``backend``'s cache (in memory and on disk, merged with the file)."""
    path = cache_file(backend)
    entries = _memory.setdefault(str(path), {})
    entries.update(new)
    on_disk = _read_checked(path, backend) or {}
    _write(backend, {**on_disk, **entries})


@cache
def namespace(backend: str) -> dict:
    """The globals the generated code runs in: those of ``sympy.lambdify(modules=backend)``;
    ``"numeric"`` (the built-in losses and channels): numpy's and the custom functions of
    :data:`.numeric_functions.NUMERIC`, as ``lambdify(modules=[NUMERIC, "numpy"])``."""
    if backend == "numeric":  # lambdify writes Max and Min as reduce(maximum, [...])
        return {**namespace("numpy"), **numeric_functions.NUMERIC, "reduce": functools.reduce}
    module = np if backend == "numpy" else mpmath
    names = {name: getattr(module, name) for name in dir(module) if not name.startswith("_")}
    return {**names, backend: module, "builtins": __builtins__}


def load(source: str, backend: str) -> Callable:
    """The function defined by one generated ``source``.

    Raises
    ------
    ValueError
        If ``source`` is not a single plain function definition as lambdify writes it (see
        :func:`_function_tree`).
    SyntaxError
        If it does not parse.
    """
    local: dict = {}
    code = compile(_function_tree(source, backend), f"<replica_mlm compiled {backend}>", "exec",
                   dont_inherit=True)
    exec(code, namespace(backend), local)
    return local[FUNCTION]


def _function_tree(source: str, backend: str) -> ast.Module:
    """``source`` parsed, if running it does nothing but define the function :data:`FUNCTION`.

    lambdify writes one ``def`` whose body assigns temporaries and returns; nothing in it runs at
    definition time unless it has decorators, defaults or annotations, so those are refused, and so
    are any other statement, any attribute with a leading underscore, and any name that is not an
    argument, a temporary or a function of the backend (:func:`namespace`, without ``builtins``:
    no ``eval``, ``open``, ``__import__``, ...).
    """
    tree = ast.parse(source)
    fn = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(fn, ast.FunctionDef) or fn.name != FUNCTION:
        raise ValueError(f"cached source is not a single definition of {FUNCTION}")
    a = fn.args
    args = [arg for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if arg is not None]
    if (fn.decorator_list or fn.returns or a.defaults or a.kw_defaults or getattr(fn, "type_params", None)
            or any(arg.annotation for arg in args)):
        raise ValueError("cached source has a decorator, default or annotation, which would run")
    if not all(isinstance(stmt, ast.Assign | ast.Return) for stmt in fn.body):
        raise ValueError("cached source has statements other than assignments and a return")
    known = ({arg.arg for arg in args} | (namespace(backend).keys() - {"builtins"})
             | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)})
    for node in ast.walk(fn):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")) or (
                isinstance(node, ast.Name) and (node.id not in known or node.id.startswith("_"))):
            raise ValueError(f"cached source uses {ast.unparse(node)!r}, which lambdify does not write")
    return tree


def sympify_srepr(text: str):
    """The sympy expression of an ``srepr`` string that calls only :data:`SREPR_CALLS`.

    Raises
    ------
    ValueError
        If ``text`` holds anything but those calls on integers (strings: names of symbols and
        digits of floats; keywords: booleans and integers) and :data:`SREPR_NAMES`.
    SyntaxError
        If it does not parse.
    """
    import sympy as sp

    _check_srepr(ast.parse(text, mode="eval").body)
    return sp.sympify(text)


def _check_srepr(node: ast.AST) -> None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return
    if isinstance(node, ast.Name) and node.id in SREPR_NAMES:
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SREPR_CALLS:
        args = node.args
        if (node.func.id in ("Symbol", "Float") and args and isinstance(args[0], ast.Constant)
                and type(args[0].value) is str):
            args = args[1:]
        for arg in args:
            _check_srepr(arg)
        if all(kw.arg is not None and isinstance(kw.value, ast.Constant)
               and type(kw.value.value) in (bool, int) for kw in node.keywords):
            return
    raise ValueError(f"a cached expansion holds {ast.unparse(node)[:80]!r}, not a call of "
                     f"{sorted(SREPR_CALLS)} on numbers")


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
    modules = [numeric_functions.NUMERIC, "numpy"] if backend == "numeric" else backend
    fn = sp.lambdify(new, expr, modules=modules, cse=cse)
    source = inspect.getsource(fn)
    ns = namespace(backend)
    for name in _global_names(fn.__code__):
        if name in fn.__globals__ and ns.get(name) is not fn.__globals__[name]:
            raise AssertionError(f"generated code uses {name!r}, which the cache namespace lacks")
    return source
