"""The disk cache of the compiled equations (theory/compiled_cache.py) and the named arguments of
the compiled functions."""

import json
import os
import subprocess
import sys

import mpmath
import numpy as np
import pytest

from replica_mlm.theory import compiled as C
from replica_mlm.theory import compiled_cache

WRITE = ("import replica_mlm.theory.compiled as c; c.compiled('numpy'); "
         "print(c.compiled_cache.cache_file('numpy'))")


def _flat(entries, prefix=""):
    """``{dotted key: source}`` of a cache's entries."""
    out = {}
    for key, value in entries.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        elif isinstance(value, list):
            out.update({f"{prefix}{key}.{i}": v for i, v in enumerate(value)})
        else:
            out[prefix + key] = value
    return out


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty cache folder; the in-memory copies of the cache are forgotten."""
    monkeypatch.setenv(compiled_cache.ENV, str(tmp_path))
    monkeypatch.setattr(compiled_cache, "_memory", {})
    return tmp_path


def test_cache_file_equals_a_fresh_derivation():
    # the session's cache folder (tests/conftest.py), filled by whichever process came first
    C.compiled("numpy")
    stored = json.loads(compiled_cache.cache_file("numpy").read_text(encoding="utf-8"))
    assert stored["fingerprint"] == compiled_cache.fingerprint()
    fresh = _flat(C.derive_sources("numpy"))
    cached = _flat(stored["entries"])
    assert cached.keys() >= fresh.keys() and len(fresh) > 50
    assert [k for k in fresh if cached[k] != fresh[k]] == []


@pytest.mark.slow
def test_cache_written_by_two_processes_equals_a_fresh_derivation(fresh_cache):
    # two new processes derive and write the same file at once (atomic writes: one wins, whole)
    env = {**os.environ, compiled_cache.ENV: str(fresh_cache)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITE], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    paths = {p.communicate(timeout=600)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    (path,) = paths
    assert path == str(compiled_cache.cache_file("numpy"))
    assert sorted(os.listdir(fresh_cache)) == [os.path.basename(path)]  # no temporary file left
    stored = json.loads(open(path, encoding="utf-8").read())
    assert stored["fingerprint"] == compiled_cache.fingerprint()
    fresh = _flat(C.derive_sources("numpy"))
    cached = _flat(stored["entries"])
    assert cached.keys() == fresh.keys()
    assert [k for k in fresh if cached[k] != fresh[k]] == []
    assert len(fresh) > 50


def test_functions_from_the_cache_evaluate_like_lambdify(fresh_cache):
    # the cache's namespace runs the generated code as lambdify's does: same numbers, bit for bit
    import sympy as sp

    from replica_mlm.theory import potentials as P

    red = P.reduce()
    rng = np.random.default_rng(0)
    args = {name: rng.uniform(0.1, 2.0, 7) for name in C.SUM_NAMES}
    args.update(alpha=rng.uniform(0.1, 3.0, 7), noise=0.3, V_hat=rng.uniform(0.1, 1.0, 7))
    stable = C.compiled("numpy").stable
    symbols = (P.alpha, P.noise, P.V_hat, *P.SUMS)
    for name, expr in red.stable.items():
        reference = sp.lambdify(symbols, expr, modules="numpy")
        positional = [args[C.py_name(s)] for s in symbols]
        assert np.array_equal(stable[name](**args), reference(*positional)), name
    with mpmath.workdps(40):
        x = [mpmath.mpf(1) / 3, mpmath.mpf(2) / 7, mpmath.mpf(5) / 11]
        got = C.compiled("mpmath").newton(kappa=x[0], S_1c=x[1], delta=x[2], lam=mpmath.mpf("0.1"))
        newton = sp.lambdify((P.kappa, P.S1C, P.delta, P.lam), red.newton, modules="mpmath")
        ref = newton(*x, mpmath.mpf("0.1"))
        assert got == ref and abs(got - (mpmath.mpf("0.1") / x[0] - x[1] + x[2])) < mpmath.mpf(10) ** -38


@pytest.mark.parametrize("content", ["{not json", json.dumps({"fingerprint": {"sympy": "0"}, "entries": {}}),
                                     json.dumps({"fingerprint": None, "entries": {"equations": 1}})])
def test_corrupted_or_foreign_cache_file_is_ignored_and_rewritten(fresh_cache, content):
    path = compiled_cache.cache_file("numpy")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    calls = []
    complete = {"equations": {}, "estimation": [], **{C._sums_key(n): "" for n in C.SUM_SETS}}

    def derive():
        calls.append(1)
        return complete

    compiled_cache.fetch("numpy", derive)
    assert calls == [1]
    stored = json.loads(path.read_text())
    assert stored["fingerprint"] == compiled_cache.fingerprint() and stored["entries"] == complete
    compiled_cache._memory.clear()  # as in a new process: the file is read, nothing derived
    assert compiled_cache.fetch("numpy", lambda: pytest.fail("derived again")) == complete


def test_fingerprint_and_location():
    fp = compiled_cache.fingerprint()
    assert set(fp) == {"replica_mlm", "sympy", "numpy", "mpmath", "python", "source"}
    import sympy

    import replica_mlm

    assert fp["replica_mlm"] == replica_mlm.__version__ and fp["sympy"] == sympy.__version__
    assert str(compiled_cache.cache_dir()) == os.environ[compiled_cache.ENV]
    name = compiled_cache.cache_file("mpmath").name
    assert name.startswith("compiled-mpmath-") and name.endswith(".json")


def test_unwritable_cache_folder_falls_back_to_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(compiled_cache.ENV, str(blocker / "cache"))  # a folder below a file
    monkeypatch.setattr(compiled_cache, "_memory", {})
    entries = compiled_cache.fetch("numpy", lambda: {"equations": {}})
    assert entries == {"equations": {}} and not (blocker / "cache").exists()


def test_compiled_functions_take_named_arguments():
    fns = C.compiled("numpy")
    kw = dict(kappa=0.3, S_1c=0.4, delta=-0.2, lam=0.05)
    assert fns.newton(**kw) == pytest.approx(0.05 / 0.3 - 0.4 - 0.2, rel=1e-15)
    assert fns.newton(**kw) == fns.newton(0.3, 0.4, -0.2, 0.05)
    assert not hasattr(fns, "root")
    assert set(fns.sums) >= {"S_1c_prime", "kR_prime", "kS_2c_prime", "R_prime", "S_2c_prime"}
    with pytest.raises(TypeError):
        fns.newton(kappa=0.3, S_1c=0.4, delta=-0.2, lam=0.05, alpha=1.0)
    with pytest.raises(ValueError, match="backend must be"):
        C.compiled("torch")
    with pytest.raises(ValueError, match="unknown spectral sums"):
        C.compiled_sums(("S_1", "nope"))


def test_warm_cache_first_solve_needs_no_sympy():
    """With the cache written, a new process imports the package and solves the square-loss
    saddle point without importing sympy (the derivation is what cost seconds at first use).
    Naming a loss or channel (strings, instances of the built-ins) imports no sympy either: the
    square/gaussian pair is recognised by name, and the other built-ins are derived, with sympy,
    only when their expressions are needed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def run(script: str) -> list[str]:
        return subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                              env=env).stdout.split()

    run(WRITE)
    solve = ("import sys, replica_mlm as rm; "
             "sp = rm.solve(rm.GaussianPotts.random(L=20, rng=0).masked_site(0), alpha=2.0, lam=0.1); "
             "print(sp.converged, 'sympy' in sys.modules)")
    assert run(solve) == ["True", "False"]
    # a loss other than the square one goes through the engine, which derives with sympy
    assert run(solve.replace("lam=0.1)", "lam=0.1, loss='huber', channel='gaussian')")) == ["True", "True"]
    named = ("import sys, replica_mlm as rm; from replica_mlm.theory import channels, losses; "
             "task = rm.GaussianPotts.limit(shift=3.0); "
             "named = [losses.resolve(n) for n in losses.NAMED] + "
             "[channels.resolve(n) for n in channels.NAMED]; "
             "a = rm.solve(task, alpha=0.5, lam=0.1, loss=' Square', channel='GAUSSIAN'); "
             "b = rm.solve(task, alpha=0.5, lam=0.1, loss=rm.losses.Square(), channel=channels.gaussian()); "
             "c = rm.learning_curve(task, alpha=[0.5, 2.0], lam=[0.0, 0.1]); "
             "print(a == b, a.method, c[1].method, 'sympy' in sys.modules, rm.losses.Huber(2.0).name, "
             "*[x.name for x in named]); "
             "losses.resolve('hinge').kinks; print('sympy' in sys.modules)")
    assert run(named) == ["True", "root", "root", "False", "huber(delta=2)", "square", "absolute",
                          "huber(delta=1)", "logistic", "hinge", "gaussian", "sign", "logit", "True"]


def test_expansions_are_cached_beside_the_equations():
    """The asymptotic series (theory/limits.py, ~10 CPU-s of sympy) are stored as srepr strings in
    their own file, keyed also by the source of limits.py; what the file holds sympifies to the
    expansions in use (whose leading terms tests/test_asymptotics.py checks against closed forms)."""
    import sympy as sp

    import replica_mlm as rm

    ex = rm.expansions()
    path = compiled_cache.cache_file("expansions")
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["fingerprint"] == compiled_cache.fingerprint("expansions")
    assert stored["fingerprint"]["source"] != compiled_cache.fingerprint("numpy")["source"]
    assert list(ex) == ["small_alpha", "large_alpha", "peak"] and set(stored["entries"]) == set(ex)
    for name, e in ex.items():
        d = stored["entries"][name]
        assert sp.sympify(d["series"]) == e.series and sp.sympify(d["variable"]) == e.variable
        assert tuple(sp.sympify(c) for c in d["coefficients"]) == e.coefficients
