"""The disk cache of the compiled equations (theory/symbolic/compiled_cache.py) and the named arguments of
the compiled functions."""

import json
import os
import stat
import subprocess
import sys
import warnings

import mpmath
import numpy as np
import pytest

from replica_mlm.theory.symbolic import compiled as C
from replica_mlm.theory.symbolic import compiled_cache

WRITE = ("import replica_mlm.theory.symbolic.compiled as c; c.compiled('numpy'); "
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
    # no temporary file left; one key, which both processes used (the file verifies)
    assert sorted(os.listdir(fresh_cache)) == sorted([os.path.basename(path), "hmac-key"])
    stored = json.loads(open(path, encoding="utf-8").read())
    assert compiled_cache._read(compiled_cache.cache_file("numpy"), "numpy") == stored["entries"]
    assert stored["fingerprint"] == compiled_cache.fingerprint()
    fresh = _flat(C.derive_sources("numpy"))
    cached = _flat(stored["entries"])
    assert cached.keys() == fresh.keys()
    assert [k for k in fresh if cached[k] != fresh[k]] == []
    assert len(fresh) > 50


def test_functions_from_the_cache_evaluate_like_lambdify(fresh_cache):
    # the cache's namespace runs the generated code as lambdify's does: same numbers, bit for bit
    import sympy as sp

    from replica_mlm.theory.symbolic import potentials as P
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
    only when their expressions are needed (and then cached: a later process needs no sympy)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def run(script: str) -> list[str]:
        return subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                              env=env).stdout.split()

    run(WRITE)
    solve = ("import sys, replica_mlm as rm; "
             "sp = rm.solve(rm.GaussianPotts.random(L=20, rng=0).masked_site(0), alpha=2.0, lam=0.1); "
             "print(sp.converged, 'sympy' in sys.modules)")
    assert run(solve) == ["True", "False"]
    # a built-in loss other than the square one goes through the engine: its functions are derived
    # with sympy once, then read from the cache (issue 29)
    huber = solve.replace("lam=0.1)", "lam=0.1, loss='huber', channel='gaussian')")
    assert run(huber)[0] == "True"
    assert run(huber) == ["True", "False"]
    named = ("import sys, replica_mlm as rm; from replica_mlm.theory.sides import channels, losses; "
             "task = rm.GaussianPotts.limit(shift=3.0); "
             "named = [losses.resolve(n) for n in losses.NAMED] + "
             "[channels.resolve(n) for n in channels.NAMED]; "
             "a = rm.solve(task, alpha=0.5, lam=0.1, loss=' Square', channel='GAUSSIAN'); "
             "b = rm.solve(task, alpha=0.5, lam=0.1, loss=rm.losses.Square(), "
             "channel=channels.NAMED['gaussian']()); "
             "c = rm.learning_curve(task, alpha=[0.5, 2.0], lam=[0.0, 0.1]); "
             "print(a == b, a.method, c[1].method, 'sympy' in sys.modules, rm.losses.Huber(2.0).name, "
             "*[x.name for x in named]); "
             "losses.resolve('hinge').kinks; print('sympy' in sys.modules)")
    assert run(named) == ["True", "root", "root", "False", "huber(delta=2)", "square", "absolute",
                          "huber(delta=1)", "logistic", "hinge", "gaussian", "sign", "logit", "True"]


def test_expansions_are_cached_beside_the_equations():
    """The asymptotic series (theory/studies/asymptotics.py, ~10 CPU-s of sympy) are stored as srepr
    strings in their own file, keyed also by the source of that module; what the file holds sympifies to the
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


# ---------------------------------------------------------------- issue 22: a cache safe by construction
#: a fresh process's answers through both cache files: the saddle point (numpy file) and the
#: asymptotic expansions (expansions file)
SOLVE = ("import json, replica_mlm as rm; task = rm.GaussianPotts.random(L=20, rng=0).masked_site(0); "
         "sp = rm.solve(task, alpha=2.0, lam=0.1); a = rm.asymptotics(task, lam=0.1); "
         "print(json.dumps([sp.eg, sp.converged, a.eg0, a.slope, a.c1, a.c2, a.peak_prefactor, "
         "a.peak_constant]))")
KEY = "hmac-key"
#: what a complete numpy cache holds, for tests that do not need real equations
COMPLETE = {"equations": {"eg": "def f(): pass"}, "estimation": ["a", "b"],
            **{C._sums_key(n): "" for n in C.SUM_SETS}}


@pytest.fixture
def fresh_state(monkeypatch):
    """The cache module's per-process state, forgotten for the test."""
    monkeypatch.setattr(compiled_cache, "_memory", {})
    for name, value in (("_derived", {}), ("_refused", {}), ("_warned", False)):
        monkeypatch.setattr(compiled_cache, name, value, raising=False)


def _private_copy(folder):
    """``folder`` (mode 0700) holding a copy of the session cache's numpy and expansions files and
    its key: what a process sees after a clean run."""
    import replica_mlm as rm

    C.compiled("numpy")
    rm.expansions()
    folder.mkdir(mode=0o700)
    for name in (compiled_cache.cache_file("numpy").name, compiled_cache.cache_file("expansions").name, KEY):
        source = compiled_cache.cache_dir() / name
        if source.exists():
            (folder / name).write_bytes(source.read_bytes())
            os.chmod(folder / name, 0o600)
    return folder


def _edit(path, change):
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data["entries"])
    path.write_text(json.dumps(data), encoding="utf-8")


def _cache_warnings(caught):
    return [w for w in caught if w.category.__name__ == "CacheWarning"]


def test_code_planted_in_the_cache_never_runs_and_the_entries_are_rebuilt(tmp_path, monkeypatch, fresh_state):
    import replica_mlm as rm

    folder = _private_copy(tmp_path / "cache")
    numpy_file = folder / compiled_cache.cache_file("numpy").name
    expansions_file = folder / compiled_cache.cache_file("expansions").name
    marks = [tmp_path / "ran-from-source", tmp_path / "ran-from-srepr"]
    plant = [f"__import__('pathlib').Path({str(m)!r}).touch()" for m in marks]

    def source(entries):
        entries["equations"]["stable"]["eg"] = plant[0] + "\n" + entries["equations"]["stable"]["eg"]

    def srepr(entries):
        entries["peak"]["series"] = f"({plant[1]}, {entries['peak']['series']})[1]"

    _edit(numpy_file, source)
    _edit(expansions_file, srepr)
    env = {**os.environ, compiled_cache.ENV: str(folder), "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", SOLVE], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert [m.exists() for m in marks] == [False, False]
    task = rm.GaussianPotts.random(L=20, rng=0).masked_site(0)
    sp, a = rm.solve(task, alpha=2.0, lam=0.1), rm.asymptotics(task, lam=0.1)
    clean = [sp.eg, sp.converged, a.eg0, a.slope, a.c1, a.c2, a.peak_prefactor, a.peak_constant]
    assert json.loads(run.stdout) == clean
    assert "CacheWarning" not in run.stderr
    # both files were rewritten and verify again (read as a new process would)
    monkeypatch.setenv(compiled_cache.ENV, str(folder))
    for path, backend in ((numpy_file, "numpy"), (expansions_file, "expansions")):
        assert "pathlib" not in path.read_text(encoding="utf-8")
        assert set(compiled_cache._read(path, backend)) == set(json.loads(path.read_text())["entries"])


def test_a_one_token_edit_of_a_cached_formula_is_detected_and_rebuilt(tmp_path, monkeypatch, fresh_state):
    clean = C.compiled("numpy")
    folder = _private_copy(tmp_path / "cache")
    path = folder / compiled_cache.cache_file("numpy").name

    def edit(entries):
        assert "-2*m" in entries["equations"]["eg"]
        entries["equations"]["eg"] = entries["equations"]["eg"].replace("-2*m", "-3*m")

    _edit(path, edit)
    monkeypatch.setenv(compiled_cache.ENV, str(folder))
    loaded = C.compiled.__wrapped__("numpy")  # as in a new process: read from the edited file
    args = dict(alpha=2.0, V=0.3, q=0.7, m=0.4, rho=1.1, noise=0.25)
    assert loaded.eg(**args) == pytest.approx(clean.eg(**args), rel=1e-15, abs=0)
    assert "-3*m" not in path.read_text(encoding="utf-8")
    assert "equations" in compiled_cache._read(path, "numpy")


def test_an_entry_that_fails_to_load_is_rebuilt(tmp_path, monkeypatch, fresh_state):
    # an entry with a valid MAC that still does not load (here: a SyntaxError, signed with the key)
    clean = C.compiled_estimation("numpy")
    folder = _private_copy(tmp_path / "cache")
    path = folder / compiled_cache.cache_file("numpy").name
    data = json.loads(path.read_text(encoding="utf-8"))
    data["entries"]["estimation"][0] = "def _lambdifygenerated(:"
    if (folder / KEY).exists():  # (the cache before issue 22 had no key, and loaded what it found)
        key = bytes.fromhex((folder / KEY).read_text())
        data["macs"]["estimation"] = compiled_cache._sign(key, "numpy", "estimation",
                                                          data["entries"]["estimation"])
    path.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv(compiled_cache.ENV, str(folder))
    general, summand = C.compiled_estimation.__wrapped__("numpy")
    args = (np.array([0.5, 2.0]), 0.3, 0.2, 0.1, 0.4, 0.6, 0.7)
    assert np.array_equal(general(*args), clean[0](*args))
    assert np.array_equal(summand(*args[:4], 0.4, 0.6), clean[1](*args[:4], 0.4, 0.6))
    assert compiled_cache._read(path, "numpy")["estimation"][0].startswith("def _lambdifygenerated(omega")


@pytest.mark.parametrize("case", ["folder 0777", "folder symlink", "file symlink", "file 0666",
                                  "file of another user", "key 0660", "key symlink"])
def test_an_unsafe_cache_is_refused_with_one_warning(tmp_path, monkeypatch, fresh_state, case):
    folder = tmp_path / "cache"
    monkeypatch.setenv(compiled_cache.ENV, str(folder))
    compiled_cache.fetch("numpy", lambda: COMPLETE)  # a good cache, as a clean run leaves it
    path = compiled_cache.cache_file("numpy")
    written = path.read_bytes()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if case == "folder 0777":
        os.chmod(folder, 0o777)
    elif case == "folder symlink":
        os.symlink(folder, tmp_path / "link")
        monkeypatch.setenv(compiled_cache.ENV, str(tmp_path / "link"))
    elif case in ("file symlink", "key symlink"):
        target = path if case == "file symlink" else folder / KEY
        os.replace(target, elsewhere / target.name)
        os.symlink(elsewhere / target.name, target)
    elif case == "file 0666":
        os.chmod(path, 0o666)
    elif case == "key 0660":
        os.chmod(folder / KEY, 0o660)
    else:
        if os.getuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(path, 12345, 12345)
    calls = []

    def derive():
        calls.append(1)
        return {**COMPLETE, "estimation": ["fresh", "fresh"]}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # a second read in the same process: no second warning
            compiled_cache._memory.clear()
            assert compiled_cache.fetch("numpy", derive)["estimation"] == ["fresh", "fresh"]
    assert calls == [1, 1]  # derived in memory each time, nothing read
    (warning,) = _cache_warnings(caught)
    assert issubclass(warning.category, UserWarning)
    assert "replica_mlm" in str(warning.message) and str(tmp_path) in str(warning.message)
    assert (folder / path.name).read_bytes() == written or (elsewhere / path.name).read_bytes() == written


def _mkfifo_or_skip(path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    os.mkfifo(path)


def test_a_fifo_in_place_of_the_cache_file_does_not_block(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    path = folder / compiled_cache.cache_file("numpy").name
    _mkfifo_or_skip(path)
    env = {**os.environ, compiled_cache.ENV: str(folder), "PYTHONPATH": os.pathsep.join(sys.path)}
    script = ("import warnings, replica_mlm.theory.symbolic.compiled_cache as cc; "
              "from replica_mlm.theory.symbolic import compiled as C; "
              "complete = {'equations': {}, 'estimation': [], **{C._sums_key(n): '' for n in C.SUM_SETS}}; "
              "w = warnings.catch_warnings(record=True); caught = w.__enter__(); "
              "warnings.simplefilter('always'); "
              "print(cc.fetch('numpy', lambda: complete) == complete, "
              "[x.category.__name__ for x in caught])")
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "['CacheWarning']"]
    assert os.path.exists(path) and not os.path.isfile(path)  # refused, not replaced


@pytest.mark.parametrize("damage", ["truncated", "invalid UTF-8", "deeply nested JSON", "too large",
                                    "edited entry", "MAC of another entry"])
def test_a_damaged_cache_file_is_rebuilt(tmp_path, monkeypatch, fresh_state, damage):
    monkeypatch.setenv(compiled_cache.ENV, str(tmp_path / "cache"))
    compiled_cache.fetch("numpy", lambda: COMPLETE)
    path = compiled_cache.cache_file("numpy")
    text = path.read_text(encoding="utf-8")
    if damage == "truncated":
        path.write_text(text[: len(text) // 2], encoding="utf-8")
    elif damage == "invalid UTF-8":
        path.write_bytes(text.encode()[:40] + b"\xff\xfe\xc3" + text.encode()[40:])
    elif damage == "deeply nested JSON":
        path.write_text("[" * 200_000 + "]" * 200_000)
    elif damage == "too large":
        from replica_mlm.theory.symbolic import cache_guard
        monkeypatch.setattr(cache_guard, "MAX_BYTES", len(text) - 1)
    elif damage == "edited entry":
        _edit(path, lambda entries: entries["estimation"].__setitem__(0, "b"))
    else:
        data = json.loads(text)
        data["entries"]["estimation"] = data["entries"]["sums:S_1,S_1c"]
        data["macs"]["estimation"] = data["macs"]["sums:S_1,S_1c"]
        path.write_text(json.dumps(data), encoding="utf-8")
    compiled_cache._memory.clear()
    calls = []

    def derive():
        calls.append(1)
        return COMPLETE

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert compiled_cache.fetch("numpy", derive) == COMPLETE
    assert calls == [1] and _cache_warnings(caught) == []
    monkeypatch.undo()  # the cap, if lowered
    monkeypatch.setenv(compiled_cache.ENV, str(tmp_path / "cache"))
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["entries"] == COMPLETE and set(stored["macs"]) == set(COMPLETE)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert compiled_cache._read(path, "numpy") == COMPLETE


def test_the_cache_folder_is_private_and_the_key_secret(tmp_path, monkeypatch, fresh_state):
    monkeypatch.setenv(compiled_cache.ENV, str(tmp_path / "a" / "b" / "cache"))
    compiled_cache.fetch("numpy", lambda: COMPLETE)
    modes = {str(p.relative_to(tmp_path)): stat.S_IMODE(os.stat(p).st_mode)
             for p in [tmp_path / "a", tmp_path / "a" / "b", compiled_cache.cache_dir(),
                       compiled_cache.cache_file("numpy")]}
    assert list(modes.values()) == [0o700, 0o700, 0o700, 0o600], modes
    key = compiled_cache.cache_dir() / KEY
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and len(bytes.fromhex(key.read_text())) == 32


def test_two_processes_creating_the_key_at_once_use_the_same_one(tmp_path, monkeypatch):
    # the other process creates the key after this one found none and before it creates its own
    from replica_mlm._base import io
    from replica_mlm.theory.symbolic import cache_guard
    winner = bytes(range(32))
    read = cache_guard.read_private

    def read_then_lose_the_race(path, **kw):
        data = read(path, **kw)
        if data is None and path.name == KEY:
            io.atomic_write_text(path, winner.hex(), permissions=0o600, exclusive=True)
        return data

    monkeypatch.setattr(cache_guard, "read_private", read_then_lose_the_race)
    assert cache_guard.secret_key(tmp_path, create=True) == winner
    assert (tmp_path / KEY).read_text() == winner.hex()
    assert sorted(os.listdir(tmp_path)) == [KEY]  # no temporary file left


@pytest.mark.parametrize("planted", [
    "__import__('os').environ.__setitem__('PLANTED', '1')\n{src}",
    "@__import__('os').environ.setdefault('PLANTED', '1')\n{src}",
    "{src_head}(alpha, noise=__import__('os').environ.setdefault('PLANTED', '1')):\n    return alpha\n",
    "{src_head}(alpha) -> __import__('os').environ.setdefault('PLANTED', '1'):\n    return alpha\n",
    "{src}{src_head}(alpha):\n    return alpha.__class__\n",
    "import os\n{src}",
    "{src_head}(alpha):\n    return alpha.__class__\n",
    "{src_head}(alpha):\n    return eval(\"__import__('os').environ.setdefault('PLANTED', '1')\")\n",
    "{src_head}(alpha):\n    return builtins.exec(\"__import__('os').environ['PLANTED'] = '1'\")\n"])
def test_load_compiles_nothing_but_a_plain_definition(monkeypatch, planted):
    monkeypatch.delenv("PLANTED", raising=False)
    src = "def _lambdifygenerated(alpha, noise):\n    x0 = alpha + noise\n    return x0*noise\n"
    assert compiled_cache.load(src, "numpy")(1.0, 2.0) == 6.0
    with pytest.raises(ValueError, match="cached source"):
        compiled_cache.load(planted.format(src=src, src_head="def _lambdifygenerated"), "numpy")(1.0)
    assert "PLANTED" not in os.environ


def test_cached_expansions_are_read_only_as_sympy_constructors():
    import sympy as sp

    import replica_mlm as rm

    rm.expansions()
    stored = json.loads(compiled_cache.cache_file("expansions").read_text(encoding="utf-8"))["entries"]
    for e in stored.values():
        for text in [e["variable"], e["series"], *e["coefficients"]]:
            assert compiled_cache.sympify_srepr(text) == sp.sympify(text)
    for hostile in ["__import__('os').getcwd()", "Symbol(__import__('os').getcwd())",
                    "Poly('x')", "Integer(1).__class__", "Add(lambda: 1)", "Symbol('x', positive=print)"]:
        with pytest.raises(ValueError, match="cached expansion"):
            compiled_cache.sympify_srepr(hostile)


def test_the_equations_decide_when_their_cache_is_complete():
    # issue 23: compiled.py passes its completeness test to the cache, which no longer imports it
    import ast
    import inspect

    full = {"equations": {}, "estimation": [], **{C._sums_key(n): "" for n in C.SUM_SETS}}
    assert C.complete(full)
    for name in full:
        assert not C.complete({k: v for k, v in full.items() if k != name})
    tree = ast.parse(inspect.getsource(compiled_cache))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names} | {node.module for node in ast.walk(tree)
                                            if isinstance(node, ast.ImportFrom)}
    assert not {"compiled", "replica_mlm.theory.symbolic.compiled"} & imported
