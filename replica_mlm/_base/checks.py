"""Input validation shared by the whole package.

Every public function checks its input with these helpers so that bad input fails loudly, with a
message that names the argument, says what was wrong and what is allowed:

* :class:`TypeError` for the wrong kind of object: complex numbers (their imaginary part would be
  dropped), strings and bytes (even numeric ones), booleans and boolean arrays, object arrays,
  numpy masked arrays (their mask would be ignored), None where a number is needed, floats where
  an integer is needed;
* :class:`ValueError` for a wrong value of the right kind: NaN, infinities, out-of-range numbers,
  wrong shapes, empty arrays, and sizes that the machine cannot hold (:func:`allocation`,
  :func:`length`, :func:`grid_cells`) or could not compute in any reasonable time (:func:`work`,
  :func:`precision_digits`); the bounds of memory, work and grids live in
  :mod:`replica_mlm._base.limits`, re-exported here.

Nothing in the package returns NaN silently.
"""

from __future__ import annotations

import numbers
import os

import numpy as np

# the bounds of sizes, work and digits live in limits; every check is reached through this module
from replica_mlm._base.limits import (  # noqa: F401 (re-exported: the checks' one namespace)
    MAX_DIGITS,
    MAX_GRID_CELLS,
    MAX_GRID_POINTS,
    STEP_OPERATIONS,
    WORK_LIMIT,
    allocation,
    at_least,
    at_most,
    available_memory,
    count,
    grid_cells,
    length,
    work,
)

RngLike = int | np.random.Generator | None

#: largest magnitude accepted for the entries of a matrix (covariances, couplings) and for the
#: eigenvalues and teacher weights of a spectrum: products of two such numbers (1e300) and their
#: sums over a row or a spectrum stay finite in float64 (largest 1.8e308), so eigen-decompositions,
#: symmetrisation and quadratic forms do not overflow to inf; e.g. a covariance with entries 1e308
#: became inf when symmetrised, and its eigenvalues NaN.
MAX_MAGNITUDE = 1e150


def _show(value) -> str:
    """A short description of ``value`` for error messages."""
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype} and shape {value.shape}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _is_bool(value) -> bool:
    return isinstance(value, bool | np.bool_)


def _wrong_dtype(kind: str) -> str | None:
    """Why an array of dtype kind ``kind`` is not an array of real numbers, or None if it is."""
    return {
        "b": "booleans (write 0 and 1 as numbers if that is what you mean)",
        "c": "complex numbers (the imaginary part would be dropped)",
        "O": "Python objects (dtype object)",
        "U": "strings",
        "S": "bytes",
        "V": "structured records",
        "M": "datetimes",
        "m": "timedeltas",
    }.get(kind)


def _refuse_masked(value, name: str) -> None:
    """TypeError for a numpy masked array: converting it would silently use the masked entries."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{name} is a numpy masked array: masked arrays are not supported; pass data with "
                        "the masked entries removed or filled (e.g. numpy.ma.compressed or .filled)")


def _check_leaves(value, name: str, depth: int = 0) -> None:
    """TypeError if a nested list/tuple holds a bool, string, complex number, None or masked array."""
    for item in value:
        _refuse_masked(item, name)
        if isinstance(item, list | tuple):
            if depth < 32:
                _check_leaves(item, name, depth + 1)
        elif _is_bool(item) or isinstance(item, str | bytes) or item is None or (
                isinstance(item, numbers.Complex) and not isinstance(item, numbers.Real)):
            raise TypeError(f"{name} must contain real numbers only, got an entry {_show(item)}")


def real_array(value, name: str) -> np.ndarray:
    """``value`` as a numpy array of real numbers (integer or float dtype), without converting.

    TypeError for strings, booleans, complex numbers, None, objects and masked arrays (also
    inside lists); ValueError for ragged nested lists.
    """
    _refuse_masked(value, name)
    if isinstance(value, str | bytes) or value is None:
        raise TypeError(f"{name} must be an array of real numbers, got {_show(value)}")
    if isinstance(value, list | tuple):
        _check_leaves(value, name)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a rectangular array of real numbers: {exc}") from None
    why = _wrong_dtype(arr.dtype.kind)
    if why is not None:
        raise TypeError(f"{name} must be an array of real numbers, got {why} "
                        f"(dtype {arr.dtype}, shape {arr.shape})")
    return arr


def is_sequence(value) -> bool:
    """True for a list, a tuple or an array of at least one dimension: an argument that takes one
    number or several (one result per value) is then "several"; anything else is checked as one."""
    return isinstance(value, list | tuple) or (isinstance(value, np.ndarray) and value.ndim > 0)


class _NotGiven:
    """Default of ``rng=`` and ``seed=`` where both spellings are accepted (see :func:`rng_or_seed`)."""

    def __repr__(self) -> str:
        return "<not given>"


#: the default of an argument that was not passed (``rng=`` / ``seed=`` pairs)
NOT_GIVEN = _NotGiven()


def rng_or_seed(rng, seed, *, default: RngLike = None) -> np.random.Generator:
    """The Generator of a call taking ``rng=`` (the package's one spelling of randomness: an int
    seed >= 0, a numpy Generator or None for fresh entropy) and its documented alias ``seed=``.

    ValueError if both are given; ``default`` if neither is.
    """
    if rng is not NOT_GIVEN and seed is not NOT_GIVEN:
        raise ValueError("give rng= or its alias seed=, not both (rng=: an int seed or a numpy Generator)")
    if seed is not NOT_GIVEN:
        return as_generator(seed, name="seed")
    return as_generator(default if rng is NOT_GIVEN else rng, name="rng")


def as_generator(rng: RngLike, *, name: str = "rng") -> np.random.Generator:
    """Return a numpy Generator from an int seed, a Generator, or None (fresh entropy)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, numbers.Integral) and not _is_bool(rng):
        if rng < 0:
            raise ValueError(f"{name} must be a non-negative int seed or a numpy Generator, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(f"{name} must be an int seed >= 0, a numpy.random.Generator or None, "
                    f"got {_show(rng)}")


def site_index(i, L: int, name: str = "site index i") -> int:
    """A site index in ``[0, L)``: an integer (not a bool), else TypeError; out of range, ValueError.
    ``name`` is what the messages call it."""
    if isinstance(i, bool | np.bool_) or not isinstance(i, int | np.integer):
        raise TypeError(f"{name} must be an integer in [0, {L}), got {type(i).__name__} {i!r}")
    if not 0 <= i < L:
        raise ValueError(f"{name} must lie in [0, L) = [0, {L}), got {i}")
    return int(i)


def as_scalar(value, name: str) -> float:
    """A finite real scalar (int, float, numpy real scalar or 0-d real array), or an error."""
    if type(value) is float and value - value == 0.0:  # a finite Python float: nothing else to check
        return value
    _refuse_masked(value, name)
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            raise ValueError(f"{name} must be a scalar, got an array of shape {value.shape}")
        why = _wrong_dtype(value.dtype.kind)
        if why is not None:
            raise TypeError(f"{name} must be a real number, got a 0-d array of {why}")
        value = value[()]
    if _is_bool(value):
        raise TypeError(f"{name} must be a real number, got the boolean {value!r}")
    if isinstance(value, str | bytes):
        raise TypeError(f"{name} must be a real number, not a string: got {value!r}")
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got the complex number {value!r} "
                        "(the imaginary part would be dropped)")
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number (int or float), got {_show(value)}")
    try:
        x = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got an integer too large for a float") from None
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def positive(value, name: str) -> float:
    """A finite scalar > 0, or an error."""
    x = as_scalar(value, name)
    if x <= 0:
        raise ValueError(f"{name} must be > 0, got {x}")
    return x


def nonnegative(value, name: str) -> float:
    """A finite scalar >= 0, or an error."""
    x = as_scalar(value, name)
    if x < 0:
        raise ValueError(f"{name} must be >= 0, got {x}")
    return x


def as_int(value, name: str) -> int:
    """A Python int from an int or a numpy integer (not a bool, a float or a string), or TypeError."""
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_show(value)}")
    return int(value)


def positive_int(value, name: str) -> int:
    """An int >= 1, or an error."""
    n = as_int(value, name)
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    return n


def nonnegative_int(value, name: str) -> int:
    """An int >= 0, or an error."""
    n = as_int(value, name)
    if n < 0:
        raise ValueError(f"{name} must be >= 0, got {n}")
    return n


def optional(check, value, name: str):
    """``None`` stays ``None`` (the caller's default applies); anything else goes through ``check``.

    E.g. ``optional(positive_int, n_chains, "n_chains")``.
    """
    return None if value is None else check(value, name)


def flag(value, name: str) -> bool:
    """A bool (Python or numpy), or TypeError: "no", 0 or None are not taken for False."""
    if not _is_bool(value):
        raise TypeError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


def choice(value, allowed: tuple[str, ...], name: str) -> str:
    """One of the strings ``allowed``: TypeError for a non-string, ValueError for another string."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {_show(value)}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def text(value, name: str) -> str:
    """A str (a title, a label), or TypeError naming ``name``: a number or bytes would be drawn as
    its repr."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {_show(value)}")
    return value


def file_path(value, name: str = "path") -> str | os.PathLike:
    """``value`` unchanged if it can name a file: a str or an os.PathLike whose name has no NUL
    byte (TypeError for another kind, ValueError naming the path for a NUL, which the system
    cannot be asked about)."""
    if isinstance(value, bytes) or not isinstance(value, str | os.PathLike):
        raise TypeError(f"{name} must be a str or a path (os.PathLike), got {_show(value)}")
    shown = os.fspath(value)
    if "\x00" in str(shown):
        raise ValueError(f"{name} {shown!r} is no file name: it contains a NUL byte")
    return value


def of_type(value, kind: type | tuple[type, ...], name: str, what: str):
    """``value`` unchanged if it is an instance of ``kind``, else TypeError: ``name`` must be
    ``what`` (e.g. "a PhaseDiagram (rm.phase_diagram)"), got ..."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {what}, got {_show(value)}")
    return value


def finite_array(value, name: str, *, ndim: int | None = None) -> np.ndarray:
    """A new float array with only finite entries (and the given number of dimensions)."""
    arr = real_array(value, name)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {arr.shape}")
    with np.errstate(over="ignore"):
        arr = np.array(arr, dtype=float, copy=True)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return arr


def grid(values, name: str, *, positive: bool = True) -> np.ndarray:
    """A 1-d, non-empty, finite grid of reals (strictly positive if ``positive``, else >= 0).

    Parameters
    ----------
    values : float or array_like
        A scalar (one point) or a 1-d sequence of points.
    name : str
        The argument's name, for the error message.
    positive : bool
        Whether every point must be > 0 (else >= 0).

    Returns
    -------
    ndarray, shape (k,)

    Raises
    ------
    TypeError, ValueError
        As :func:`real_array` and :func:`finite_array`; ValueError if a point is out of range, or
        for more than :data:`MAX_GRID_POINTS` points (refused before ``values`` is converted).
    """
    length(values, name)
    arr = finite_array(np.atleast_1d(real_array(values, name)), name, ndim=1)
    if positive and np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0 everywhere, min is {arr.min():g}")
    if not positive and np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 everywhere, min is {arr.min():g}")
    return arr


def bounded_array(value, name: str, *, ndim: int | None = None) -> np.ndarray:
    """:func:`finite_array` with every entry at most :data:`MAX_MAGNITUDE` in magnitude."""
    arr = finite_array(value, name, ndim=ndim)
    big = float(np.max(np.abs(arr)))
    if big > MAX_MAGNITUDE:
        raise ValueError(f"{name} has an entry of magnitude {big:.3g}; at most {MAX_MAGNITUDE:.0e} is "
                         "accepted (larger numbers overflow to inf in products, sums and eigenvalues): "
                         "rescale the data")
    return arr


def finite_vector(value, name: str) -> np.ndarray:
    """A new 1-d float array of finite entries, possibly empty (e.g. z-scores to plot)."""
    arr = real_array(value, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array, got shape {arr.shape}")
    return finite_array(arr, name) if arr.size else np.zeros(0)


def square_matrix(value, name: str) -> np.ndarray:
    """A finite square 2-d float array, entries at most :data:`MAX_MAGNITUDE` in magnitude."""
    arr = bounded_array(value, name, ndim=2)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square, got shape {arr.shape}")
    return arr


def symmetric_matrix(value, name: str, *, rtol: float = 1e-10) -> np.ndarray:
    """A finite symmetric matrix (up to ``rtol`` relative to its largest entry), symmetrised exactly."""
    arr = square_matrix(value, name)
    scale = max(float(np.max(np.abs(arr))), np.finfo(float).tiny)
    asym = float(np.max(np.abs(arr - arr.T)))
    if asym > rtol * scale:
        raise ValueError(
            f"{name} must be symmetric: max |M - M^T| = {asym:.3g} exceeds {rtol:g} x max |M| = "
            f"{rtol * scale:.3g}"
        )
    return 0.5 * (arr + arr.T)


def positive_definite(value, name: str) -> np.ndarray:
    """A symmetric positive-definite matrix, checked by a Cholesky factorisation, whose trace (the
    sum of its eigenvalues, so at least the largest) is at most :data:`MAX_MAGNITUDE`."""
    arr = symmetric_matrix(value, name)
    trace = float(np.trace(arr))
    if trace > MAX_MAGNITUDE:
        raise ValueError(f"{name} has trace {trace:.3g} (the sum of its eigenvalues); at most "
                         f"{MAX_MAGNITUDE:.0e} is accepted (larger eigenvalues overflow to inf in "
                         "products and sums): rescale the data")
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        lo = float(np.linalg.eigvalsh(arr)[0])
        raise ValueError(
            f"{name} must be positive definite; its smallest eigenvalue is {lo:.6g}"
        ) from None
    return arr


#: smallest largest-magnitude entry of a covariance (eigenvalue of a spectrum) the theory computes
#: with: fields scale like omega, their variances like omega^2 and the spectral moments like
#: omega^k (|k| <= 3), which leave float64 below it. Measured on a GaussianPotts site scaled by c:
#: every solver path exact down to c = 1e-100; from 1e-120 the general engine, from 1e-160 the
#: lam = 0 and asymptotic paths fail
MIN_SCALE = 1e-100


def not_vanishing(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` unchanged if its largest entry in magnitude is at least :data:`MIN_SCALE`, else a
    ValueError naming ``name`` with the remedy: the learning problem is invariant under
    ``Sigma -> c Sigma``, ``w* -> w* / sqrt(c)``, ``lam -> c lam`` (same fields, same errors)."""
    big = float(np.max(np.abs(arr)))
    if big < MIN_SCALE:
        raise ValueError(
            f"{name} is too small to compute with: its largest entry is {big:.3g}, the theory needs at "
            f"least {MIN_SCALE:g} (field variances ~ {name}^2 underflow float64). The problem is "
            f"invariant under {name} -> c {name}, teacher -> teacher / sqrt(c), lam -> c lam: "
            f"rescale by c ~ 1 / {big:.3g} (estimation_error then scales by 1 / c)")
    return arr


def precision_digits(value, name: str = "precision", *, minimum: int = 16,
                     maximum: int = MAX_DIGITS) -> int:
    """A number of significant digits for mpmath in ``[minimum, maximum]`` (see :data:`MAX_DIGITS`)."""
    digits = as_int(value, name)
    if digits < minimum:
        raise ValueError(f"{name} must be >= {minimum} digits"
                         + (" (float64 gives ~16)" if minimum == 16 else "") + f", got {digits}")
    if digits > maximum:
        raise ValueError(f"{name} must be <= {maximum} digits (the cost grows like digits^1.6: "
                         f"about 15 s at 1000 digits), got {digits}")
    return digits


#: how far the class weights of a mixture may sum from 1 (rounding of weights measured as counts)
WEIGHTS_SUM_TOL = 1e-9


def mixture(value, name: str = "task.mixture"):
    """``value`` unchanged if it is a Gaussian mixture the theory can read, else an error: an
    object with ``weights`` (K >= 2 of them, each > 0, summing to 1), ``means`` (K, p), finite,
    and a positive-definite ``covariance`` (p, p). None is a ValueError (no mixture)."""
    if value is None:
        raise ValueError(f"{name} is None: theory='mixture' needs a task with a Gaussian mixture")
    missing = [a for a in ("weights", "means", "covariance") if not hasattr(value, a)]
    if missing:
        raise TypeError(f"{name} must be a Gaussian mixture (weights, means, covariance), got "
                        f"{_show(value)} without {', '.join(missing)}")
    weights = finite_array(value.weights, f"{name}.weights", ndim=1)
    if weights.size < 2 or np.any(weights <= 0) or abs(float(weights.sum()) - 1.0) > WEIGHTS_SUM_TOL:
        raise ValueError(f"{name}.weights must be K >= 2 class weights, each > 0, summing to 1; got "
                         f"{weights.tolist()[:8]}")
    means = finite_array(value.means, f"{name}.means", ndim=2)
    cov = np.asarray(value.covariance)
    if means.shape[0] != weights.size or cov.shape != (means.shape[1], means.shape[1]):
        raise ValueError(f"{name}: means must be (K, p) = ({weights.size}, p) and covariance (p, p); got "
                         f"means {means.shape}, covariance {cov.shape}")
    positive_definite(cov, f"{name}.covariance")
    return value
