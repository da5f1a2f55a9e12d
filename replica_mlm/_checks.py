"""Input validation shared by the whole package.

Every public function checks its input with these helpers so that bad input fails
loudly with a :class:`ValueError` that says what was wrong and what is allowed.
Nothing in the package returns NaN silently.
"""

from __future__ import annotations

import numbers

import numpy as np

RngLike = int | np.random.Generator | None


def as_generator(rng: RngLike, *, name: str = "rng") -> np.random.Generator:
    """Return a numpy Generator from an int seed, a Generator, or None (fresh entropy)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"{name} must be a non-negative int seed or a numpy Generator, got {rng}")
        return np.random.default_rng(int(rng))
    raise ValueError(f"{name} must be an int seed or a numpy.random.Generator, got {type(rng).__name__}")


def as_scalar(value, name: str) -> float:
    """A finite real scalar, or ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real | np.ndarray):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    arr = np.asarray(value, dtype=float)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    x = float(arr)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def positive(value, name: str) -> float:
    """A finite scalar > 0, or ValueError."""
    x = as_scalar(value, name)
    if x <= 0:
        raise ValueError(f"{name} must be > 0, got {x}")
    return x


def nonnegative(value, name: str) -> float:
    """A finite scalar >= 0, or ValueError."""
    x = as_scalar(value, name)
    if x < 0:
        raise ValueError(f"{name} must be >= 0, got {x}")
    return x


def flag(value, name: str) -> bool:
    """A Python or numpy bool, or TypeError (strings and numbers are not flags)."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def positive_int(value, name: str) -> int:
    """An int >= 1, or ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def finite_array(value, name: str, *, ndim: int | None = None) -> np.ndarray:
    """A float array with only finite entries (and the given number of dimensions)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real array: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return arr


def square_matrix(value, name: str) -> np.ndarray:
    """A finite square 2-d float array."""
    arr = finite_array(value, name, ndim=2)
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
    """A symmetric positive-definite matrix, checked by a Cholesky factorisation."""
    arr = symmetric_matrix(value, name)
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        lo = float(np.linalg.eigvalsh(arr)[0])
        raise ValueError(
            f"{name} must be positive definite; its smallest eigenvalue is {lo:.6g}"
        ) from None
    return arr
