"""Sizes, work and digits: what a call may ask of the machine, checked before it is asked.

The half of the shared input checks (:mod:`replica_mlm._base.checks`, which re-exports every name
here) that bounds resources: memory (:func:`allocation`, from :func:`available_memory`), elementary
operations (:func:`work`), the length of a grid argument
before it is converted (:func:`length`) and the cells of a grid of grids (:func:`grid_cells`).
Each refuses with a ValueError naming the size asked and the limit, before anything is allocated.
A leaf module: numpy and the standard library only.
"""

from __future__ import annotations

import os
import resource
import sys

#: most significant digits accepted by the mpmath paths (``precision=``): the cost of a solve grows
#: like digits^1.6 for the thermodynamic limit (measured on the 2-core development machine:
#: 0.4 s at 100 digits, 1.0 s at 200, 3.0 s at 400, so about 15 s at 1000); beyond this, refused.
MAX_DIGITS = 1000
#: most elementary operations (sweeps x sites x colours, ...) a single call may be asked to do:
#: 1e15, about 12 days at 1e9 operations per second; larger requests are refused up front.
WORK_LIMIT = 10**15
#: elementary operations one interpreted step costs at the least, whatever its array sizes: a
#: Python loop iteration that calls numpy or torch spends about 10 us in the interpreter and the
#: calls' overheads (measured on the 2-core development machine: 16 us per site of a Gibbs sweep
#: of one chain, L = 3, q = 2), i.e. 1e4 operations at 1e9 per second (see :func:`work`)
STEP_OPERATIONS = 10**4


def _bytes(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def available_memory() -> int:
    """Bytes this process can still allocate: MemAvailable of /proc/meminfo (else the physical
    memory), and no more than what the address-space limit (``ulimit -v``) leaves."""
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = 2**63
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        try:
            with open("/proc/self/status") as fh:
                vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
            avail = min(avail, soft - vm)
        except (OSError, StopIteration):
            pass
    return max(int(avail), 0)


def allocation(nbytes: int, what: str) -> None:
    """ValueError before allocating ``nbytes`` (an estimate of the peak) if they are not available.

    ``what`` says what was asked, e.g. ``"sample(n=1000000000) on p = 300 inputs"``. Compute
    ``nbytes`` with Python ints (no overflow).
    """
    nbytes = int(nbytes)
    avail = available_memory()
    if nbytes > avail:
        raise ValueError(f"{what} needs about {_bytes(nbytes)} of memory, more than the "
                         f"{_bytes(avail)} available: ask for less")


def count(n: int) -> str:
    """A possibly huge count for messages: ``123``, ``1.23e+15``, ``~1e+400`` (no float overflow)."""
    n = int(n)
    if abs(n) < 10**6:
        return str(n)
    if abs(n) < 10**300:
        return f"{float(n):.3g}"
    return f"~1e+{len(str(abs(n))) - 1}"


def work(operations: int, what: str, *, steps: int = 0) -> None:
    """ValueError if a request needs more than :data:`WORK_LIMIT` elementary operations.

    ``steps`` counts the interpreted steps of the request (iterations of a Python loop that calls
    numpy or torch: Gibbs updates of one site, SGD steps, ...), each at least
    :data:`STEP_OPERATIONS` whatever its arrays' size: a loop over tiny arrays is bounded by its
    number of iterations, not by its arithmetic. Compute both with Python ints (no overflow); call
    this before any work starts, with ``what`` naming the arguments that set the size.
    """
    operations, steps = int(operations), int(steps)
    total = operations + STEP_OPERATIONS * steps
    if total > WORK_LIMIT:
        detail = f"; {count(steps)} interpreted steps of >= {STEP_OPERATIONS:.0e} each" if steps else ""
        raise ValueError(f"{what} needs about {count(total)} elementary operations, more than the "
                         f"limit of {float(WORK_LIMIT):.0e} (about 12 days at 1e9 per second{detail}): "
                         "ask for less")


def at_most(value, maximum, name: str, why: str) -> None:
    """ValueError unless ``value <= maximum``: the message names ``name``, the bound and ``why``
    (a value the code cannot compute with, e.g. more Gauss-Legendre nodes than float64 resolves)."""
    if value > maximum:
        shown = f"{value:.6g}" if isinstance(value, float) else count(value)
        raise ValueError(f"{name} must be <= {maximum:g} ({why}), got {shown}")


def at_least(value, minimum, name: str, why: str) -> None:
    """ValueError unless ``value >= minimum``: the message names ``name``, the bound and ``why``
    (e.g. a number so small that what the code computes from it underflows float64)."""
    if value < minimum:
        shown = f"{value:.6g}" if isinstance(value, float) else count(value)
        raise ValueError(f"{name} must be >= {minimum:g} ({why}), got {shown}")


# ---------------------------------------------------------------------- grids
#: most points of one grid argument (alpha, lam, shift, ...): a million points is far beyond any
#: curve drawn, and its length is checked before the argument is converted to an array, so that
#: ``alpha=range(10**9)`` is refused at once instead of filling 8 GB with its floats
MAX_GRID_POINTS = 10**6
#: most cells (points x points) of a grid of grids: a phase diagram, a curve at several lam
MAX_GRID_CELLS = 10**7
#: bytes a cell of a vectorised grid holds at its peak: the reduced solver's working arrays
#: (measured on the 2-core development machine: 937 MB for a 1000 x 300 phase diagram, 3.1 kB a
#: cell, rounded up)
CELL_BYTES = 4096


def length(values, name: str, *, maximum: int = MAX_GRID_POINTS) -> None:
    """ValueError if ``values`` has more than ``maximum`` entries, checked before conversion.

    ``values`` is anything with a length (a list, a tuple, a ``range``, an array) or a scalar
    (nothing to check). A length beyond the machine's integers (``range(2**64)``) is too long too.
    """
    if isinstance(values, str | bytes):
        return
    try:
        n = len(values)
    except OverflowError:
        n = sys.maxsize + 1
    except TypeError:  # a scalar, a 0-d array, or something the conversion refuses by its own check
        return
    if n > maximum:
        raise ValueError(f"{name} has {count(n)} points, more than the limit of {count(maximum)}: "
                         "ask for a coarser grid")


def grid_cells(cells: int, what: str, *, bytes_per_cell: int = CELL_BYTES,
               maximum: int = MAX_GRID_CELLS) -> None:
    """ValueError unless a grid of ``cells`` points (Python int) fits: at most ``maximum`` cells
    and ``cells x bytes_per_cell`` bytes of the memory available (:func:`allocation`). ``what``
    names the grids, e.g. ``"phase_diagram: 1000 alpha x 300 lam"``."""
    cells = int(cells)
    if cells > maximum:
        raise ValueError(f"{what} is {count(cells)} cells, more than the limit of {count(maximum)}: "
                         "ask for coarser grids")
    allocation(cells * bytes_per_cell, what)
