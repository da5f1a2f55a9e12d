"""Means, their standard errors and z-scores: the one estimator every part of the package uses.

A leaf module (numpy and :mod:`replica_mlm._base.checks` only), so every layer may use it.

:func:`mean_stderr`
    The sample mean and the standard error of the mean, ``std(ddof=1) / sqrt(n)`` (the unbiased
    variance over ``n``), over all values or along one axis. With one value no spread can be
    measured: that raises, unless the caller states what to report instead (``single=``: e.g.
    ``0.0`` for "no error bar" in a figure, ``inf`` or ``nan`` for "unknown").
:func:`zscore`
    ``(estimate - reference) / stderr``, the number of standard errors between a measurement and
    a reference (a theory, a closed form). A zero standard error gives ``+-inf`` for a non-zero
    difference and ``0`` for none.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from replica_mlm._base import checks as _checks

__all__ = ["MeanSE", "mean_stderr", "zscore"]


class MeanSE(NamedTuple):
    """A mean and its standard error (floats, or arrays for :func:`mean_stderr` along an axis).

    A named pair: ``m, se = mean_stderr(x)`` unpacks it.
    """

    mean: float | np.ndarray
    stderr: float | np.ndarray


def mean_stderr(values, *, axis: int | None = None, single: float | None = None) -> MeanSE:
    """The sample mean of ``values`` and its standard error ``std(ddof=1) / sqrt(n)``.

    Parameters
    ----------
    values : array_like of real numbers
        The measurements (e.g. one number per seed or per test sequence). Non-finite values
        propagate (a mean with an ``inf`` is ``inf``).
    axis : int, optional
        Axis along which the values are repeated measurements (``n = values.shape[axis]``); the
        result has that axis removed. None (default): all values, ``n = values.size``, and the
        mean and the standard error are Python floats.
    single : float, optional
        The standard error to report where ``n = 1`` (a single value has no measurable spread):
        e.g. ``0.0`` (no error bar), ``math.inf`` or ``math.nan`` (unknown). None (default):
        ``n = 1`` is an error.

    Returns
    -------
    MeanSE
        ``(mean, stderr)``.

    Raises
    ------
    TypeError
        If ``values`` are not real numbers (booleans, complex numbers, strings, None), or
        ``single`` is not a real number.
    ValueError
        If there are no values (``n = 0``), if ``n = 1`` and ``single`` is None, or if ``axis``
        is out of range.
    """
    x = np.asarray(_checks.real_array(values, "values"), dtype=float)
    if axis is None:
        n = x.size
    else:
        axis = _checks.as_int(axis, "axis")
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"axis must be in [{-x.ndim}, {x.ndim}) for values of shape {x.shape}, "
                             f"got {axis}")
        n = x.shape[axis]
    if n == 0:
        raise ValueError(f"values must hold at least one measurement along axis {axis}, got shape "
                         f"{x.shape}")
    mean = x.mean(axis=axis)
    if n == 1:
        if single is None:
            raise ValueError("a standard error needs at least 2 values (std with ddof=1); got 1. "
                             "Pass single= (e.g. 0.0 for no error bar, math.inf for unknown) to "
                             "report a value instead")
        if isinstance(single, bool) or not isinstance(single, int | float | np.integer | np.floating):
            raise TypeError(f"single must be a real number or None, got {type(single).__name__}")
        stderr = np.full(np.shape(mean), float(single))
    else:
        stderr = x.std(axis=axis, ddof=1) / math.sqrt(n)
    if axis is None:
        return MeanSE(float(mean), float(stderr))
    return MeanSE(mean, stderr)


def zscore(estimate, reference, stderr):
    """``(estimate - reference) / stderr``: how many standard errors ``estimate`` lies from ``reference``.

    Broadcasts over arrays. Where ``stderr`` is 0 the z-score is ``+-inf`` (the sign of the
    difference) for a non-zero difference and 0 for an exact match; NaN in any input gives NaN
    there.

    Parameters
    ----------
    estimate, reference : float or array_like
        The measured mean and the value it is compared with.
    stderr : float or array_like
        The standard error of ``estimate`` (>= 0).

    Returns
    -------
    float or ndarray
        A float for scalar input.

    Raises
    ------
    TypeError
        For non-real input (booleans, complex numbers, strings, None).
    ValueError
        If a standard error is negative.
    """
    est = np.asarray(_checks.real_array(estimate, "estimate"), dtype=float)
    ref = np.asarray(_checks.real_array(reference, "reference"), dtype=float)
    se = np.asarray(_checks.real_array(stderr, "stderr"), dtype=float)
    if np.any(se < 0):
        raise ValueError(f"stderr must be >= 0, got {se[se < 0].ravel()[:3].tolist()}")
    diff = est - ref
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where((se == 0) & (diff == 0), 0.0, diff / se)  # x / 0 is +-inf, nan / 0 nan
    return float(z) if z.ndim == 0 else z
