"""Memory and time bounds under stress (docs/architecture.md, "The floors": base): every hostile
size is refused before anything is allocated, in well under a second, in a process whose address
space is bounded.

The cases run in one child process under ``resource.setrlimit(RLIMIT_AS)`` (its address space at
start plus :data:`EXTRA` bytes) and a SIGALRM time limit per case: a missing check shows as a
MemoryError, a kill or a timeout instead of the ValueError naming the size and the limit. Each
case is a line of Python run there; the child prints one JSON verdict per case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: extra address space the child may allocate beyond what it holds at start (bytes)
EXTRA = int(1.2 * 2**30)
#: seconds one refusal may take ("well under a second": the budget of the whole call, the
#: child's import of the module it refuses in excluded by a warm-up)
REFUSAL_SECONDS = 1.0

#: (name, code, expected exception, a word the message must contain)
REFUSED = [
    ("learning_curve alpha=range(1e9)", "rm.learning_curve(SITE, alpha=range(1, 10**9), lam=0.1)",
     "ValueError", "alpha has 1e+09 points"),
    ("learning_curve alpha=range(2**64)", "rm.learning_curve(SITE, alpha=range(2**64), lam=0.1)",
     "ValueError", "alpha has"),
    ("learning_curve lam list of 1e5 x alpha 1e3",
     "rm.learning_curve(SITE, alpha=np.linspace(0.1, 2, 1000), lam=np.linspace(0.1, 2, 10**5))",
     "ValueError", "learning_curve: 1000 alpha x 100000 lam"),
    ("simulate lam=range(1e9)", "rm.simulate(SITE, alpha=1.0, lam=range(10**9), seeds=2, rng=0)",
     "ValueError", "lam has 1e+09 points"),
    ("phase_diagram alpha=range(1e9)",
     "rm.phase_diagram(SITE, alpha=range(1, 10**9), lam=[0.1, 1.0], optimal=False)",
     "ValueError", "alpha has 1e+09 points"),
    ("phase_diagram 1e5 x 1e4 cells",
     "rm.phase_diagram(SITE, alpha=np.linspace(0.1, 4, 10**5), lam=np.logspace(-3, 1, 10**4), optimal=False)",
     "ValueError", "1e+09 cells"),
    ("shift_phase_diagram alpha=range(1e9)",
     "rm.shift_phase_diagram(alpha=range(1, 10**9), shift=[3.0, 4.0], lam=0.1)",
     "ValueError", "alpha has 1e+09 points"),
    ("shift_phase_diagram 1e5 x 1e4 cells",
     "rm.shift_phase_diagram(alpha=np.linspace(0.1, 4, 10**5), shift=np.linspace(2.5, 9, 10**4), lam=0.1)",
     "ValueError", "1e+09 cells"),
    ("MSA.read of a 3 GiB (sparse) file", "rm.MSA.read(SPARSE)", "ValueError",
     "longer than 2147483648 bytes"),
    ("MSA.read of a gzip bomb (trailer beyond the cap)", "rm.MSA.read(BOMB, max_bytes=2**20)",
     "ValueError", "decompresses to more than 1048576 bytes"),
    ("MSA.read of a gzip bomb (inflated up to the cap)", "rm.MSA.read(BOMB2, max_bytes=2**20)",
     "ValueError", "decompresses to more than 1048576 bytes"),
    ("Potts site at lam=1e-12", "rm.solve(POTTS, alpha=2.0, lam=1e-12)", "ValueError",
     "lam must be >= 1e-06"),
]
#: (name, code): valid calls that must run (under the same bounds) without allocating max_bytes
ACCEPTED = [
    ("MSA.read of 5 residues", "assert rm.MSA.read(SMALL).L == 5"),
    ("MSA.read max_bytes=1e12", "assert rm.MSA.read(SMALL, max_bytes=10**12).L == 5"),
    ("MSA.read max_bytes=2**64", "assert rm.MSA.read(SMALL, max_bytes=2**64).L == 5"),
]

CHILD = r'''
import gzip, json, os, resource, signal, sys, tempfile, time, warnings
import numpy as np
import replica_mlm as rm
warnings.simplefilter("error")
T = tempfile.mkdtemp()
SITE = rm.GaussianPotts.random(L=5, shift=3.0, seed=0).masked_site(0)
POTTS = rm.PottsModel.random(L=4, q=3, beta=1.0, seed=0).masked_site(0)
SMALL = os.path.join(T, "small.fasta")
open(SMALL, "w").write(">a\nACDEF\n>b\nACDEG\n")
SPARSE = os.path.join(T, "sparse.fasta")
with open(SPARSE, "wb") as fh:
    fh.truncate(3 * 2**30)
BOMB = os.path.join(T, "bomb.fasta.gz")
with gzip.open(BOMB, "wb", compresslevel=9) as fh:
    fh.write(b">a\n" + b"A" * (64 * 2**20))
BOMB2 = os.path.join(T, "bomb2.fasta.gz")  # the last member declares 4 bytes: only inflating tells
with open(BOMB2, "wb") as fh:
    fh.write(open(BOMB, "rb").read() + gzip.compress(b"AAAA"))
rm.learning_curve(SITE, alpha=[1.0], lam=0.1); rm.MSA.read(SMALL)  # imports done before timing
vm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize"))
resource.setrlimit(resource.RLIMIT_AS, (vm + EXTRA, resource.RLIM_INFINITY))
def alarm(*_):
    raise TimeoutError("time limit")
signal.signal(signal.SIGALRM, alarm)
for name, code in CASES:
    signal.alarm(20)
    t0 = time.perf_counter()
    try:
        exec(code)
        verdict = ["ok", ""]
    except BaseException as exc:
        verdict = [type(exc).__name__, str(exc)]
    signal.alarm(0)
    print(json.dumps([name, *verdict, time.perf_counter() - t0]), flush=True)
'''


@pytest.fixture(scope="module")
def verdicts() -> dict:
    cases = [(n, c) for n, c, *_ in REFUSED] + ACCEPTED
    code = f"EXTRA = {EXTRA}\nCASES = {cases!r}\n" + textwrap.dedent(CHILD)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                         cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("[")]
    return {name: (kind, message, seconds) for name, kind, message, seconds in rows}


@pytest.mark.parametrize(("name", "code", "kind", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_hostile_sizes_are_refused_at_once_under_a_memory_limit(verdicts, name, code, kind, words):
    got, message, seconds = verdicts[name]
    assert got == kind, f"{name}: {got}: {message}"
    assert words in message, message
    assert seconds < REFUSAL_SECONDS, f"{name} took {seconds:.2f} s to be refused"


@pytest.mark.parametrize(("name", "code"), ACCEPTED, ids=[r[0] for r in ACCEPTED])
def test_small_files_read_under_a_memory_limit_whatever_max_bytes(verdicts, name, code):
    got, message, seconds = verdicts[name]
    assert got == "ok", f"{name}: {got}: {message}"
    assert seconds < REFUSAL_SECONDS
