"""Encoding values as tokens of the attractor network, and corrupting them (docs/attractor.md).

Encoding (binding for the attractor experiments)
------------------------------------------------
A value ``v`` in [0, 1] (a pixel intensity, or a Gaussian Potts coordinate mapped through its
marginal CDF) is the unit vector ``(cos(pi v / 2), sin(pi v / 2))`` in R^2: a quarter circle.
A token groups ``k`` values (a 2 x 2 patch of an 8 x 8 digit: k = 4; one Potts site: k = 1) and is
the concatenation of their 2-vectors divided by sqrt(k), a unit vector in R^{2k}. Decoding reads
the angle of each 2-vector and projects it onto the quarter circle (angles past an end of the arc
go to the nearer end), so any state of the dynamics decodes to values in [0, 1].

Corruptions
-----------
``masked``: ``n_masked`` tokens chosen at random are replaced by independent uniformly random
unit vectors (the mask carries no information). ``noise``: each value is replaced, with
probability ``p_noise``, by an independent uniform value in [0, 1].

Used by the digits experiment (:mod:`replica_mlm.attractor.experiments`), the Gaussian Potts
experiment (:mod:`replica_mlm.attractor.potts_sequences`) and the corruption tasks they share
(:mod:`replica_mlm.attractor.measurements`).
"""

from __future__ import annotations

import numpy as np

from replica_mlm._base.checks import as_generator, finite_array, nonnegative, positive_int

__all__ = [
    "corrupt",
    "decode_values",
    "encode_values",
    "gaussian_potts_sequences",
    "image_tokens",
    "tokens_image",
]

_HALF_PI = 0.5 * np.pi


# ----------------------------------------------------------------------------------------------
# encoding
# ----------------------------------------------------------------------------------------------


def encode_values(values) -> np.ndarray:
    """Values in [0, 1] of shape (..., N, k) -> unit tokens in R^{2k}, shape (..., N, 2k)."""
    v = finite_array(values, "values")
    if v.ndim < 2:
        raise ValueError(f"values must have shape (..., N, k), got {v.shape}")
    if v.min() < 0 or v.max() > 1:
        raise ValueError(f"values must lie in [0, 1], got range [{v.min():g}, {v.max():g}]")
    k = v.shape[-1]
    theta = _HALF_PI * v
    pairs = np.stack([np.cos(theta), np.sin(theta)], axis=-1)  # (..., N, k, 2)
    return pairs.reshape(*v.shape[:-1], 2 * k) / np.sqrt(k)


def decode_values(tokens) -> np.ndarray:
    """Tokens (..., N, 2k) -> values in [0, 1], shape (..., N, k) (angle projected onto the arc)."""
    x = finite_array(tokens, "tokens")
    if x.ndim < 2 or x.shape[-1] % 2:
        raise ValueError(f"tokens must have shape (..., N, 2k), got {x.shape}")
    pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
    theta = np.arctan2(pairs[..., 1], pairs[..., 0])  # (-pi, pi]
    # the arc is [0, pi/2]; the point opposite its middle is at -3 pi / 4
    v = np.where(theta < -0.75 * np.pi, 1.0, np.clip(theta / _HALF_PI, 0.0, 1.0))
    return v


def _check_patch(patch, H: int, W: int) -> tuple[int, int]:
    if (not isinstance(patch, tuple | list) or len(patch) != 2
            or not all(isinstance(p, int | np.integer) and not isinstance(p, bool) for p in patch)):
        raise TypeError(f"patch must be a pair of ints (height, width), got {patch!r}")
    ph, pw = int(patch[0]), int(patch[1])
    if ph < 1 or pw < 1 or H % ph or W % pw:
        raise ValueError(
            f"patch (height, width) must be positive and divide the image size {H} x {W}, "
            f"got {(ph, pw)}"
        )
    return ph, pw


def image_tokens(images, *, patch: tuple[int, int] = (2, 2)) -> np.ndarray:
    """(M, H, W) images -> (M, N, k) values: ``patch`` blocks in row-major block order.

    With the default 2 x 2 patches an 8 x 8 digit gives N = 16 tokens of k = 4 values.
    """
    im = finite_array(images, "images", ndim=3)
    M, H, W = im.shape
    ph, pw = _check_patch(patch, H, W)
    p = im.reshape(M, H // ph, ph, W // pw, pw).transpose(0, 1, 3, 2, 4)
    return p.reshape(M, (H // ph) * (W // pw), ph * pw)


def tokens_image(
    values, shape: tuple[int, int] = (8, 8), *, patch: tuple[int, int] = (2, 2)
) -> np.ndarray:
    """Inverse of :func:`image_tokens`: (..., N, k) values -> (..., H, W) images."""
    v = finite_array(values, "values")
    H, W = shape
    ph, pw = _check_patch(patch, H, W)
    lead = v.shape[:-2]
    p = v.reshape(*lead, H // ph, W // pw, ph, pw)
    p = np.moveaxis(p, -2, -3)  # (..., H/ph, ph, W/pw, pw)
    return p.reshape(*lead, H, W)


def gaussian_potts_sequences(
    precision: np.ndarray, *, n: int, rng=0
) -> tuple[np.ndarray, np.ndarray]:
    """Samples x ~ N(0, C), C = precision^{-1} (docs/theory.md, section 1), and their CDF values.

    Returns ``(x, v)``: x of shape (n, L), and v = Phi(x_i / sqrt(C_ii)) in (0, 1), shape (n, L, 1),
    ready for :func:`encode_values` (one token per site, d = 2).
    """
    from scipy.special import ndtr

    P = finite_array(precision, "precision", ndim=2)
    C = np.linalg.inv(P)
    C = 0.5 * (C + C.T)
    chol = np.linalg.cholesky(C)
    z = as_generator(rng).standard_normal((positive_int(n, "n"), P.shape[0]))
    x = z @ chol.T
    v = ndtr(x / np.sqrt(np.diag(C)))
    return x, v[..., None]


# ----------------------------------------------------------------------------------------------
# corruption
# ----------------------------------------------------------------------------------------------


def corrupt(
    values, *, kind: str, n_masked: int = 4, p_noise: float = 0.25,
    mask_value: float | None = None, rng=0,
) -> tuple[np.ndarray, np.ndarray]:
    """Corrupted tokens from clean values (M, N, k); see the module docstring.

    With ``mask_value`` given, masked tokens are the encoding of that value (in [0, 1]) instead of
    random unit vectors (used for Potts sequences: 0.5 encodes the marginal median x_i = 0).

    Returns ``(tokens, corrupted)``: the corrupted tokens (M, N, 2k) and a boolean mask (M, N)
    of the tokens that were changed (masked tokens, or tokens with at least one noisy value).
    """
    v = finite_array(values, "values", ndim=3)
    gen = as_generator(rng)
    M, N, k = v.shape
    if kind == "masked":
        n_masked = positive_int(n_masked, "n_masked")
        if n_masked >= N:
            raise ValueError(f"n_masked must be < N = {N}, got {n_masked}")
        x = encode_values(v)
        mask = np.zeros((M, N), dtype=bool)
        for m in range(M):
            mask[m, gen.choice(N, size=n_masked, replace=False)] = True
        if mask_value is None:
            r = gen.standard_normal((int(mask.sum()), 2 * k))
            x[mask] = r / np.linalg.norm(r, axis=-1, keepdims=True)
        else:
            x[mask] = encode_values(np.full((1, k), nonnegative(mask_value, "mask_value")))[0]
        return x, mask
    if kind == "noise":
        p = nonnegative(p_noise, "p_noise")
        if p > 1:
            raise ValueError(f"p_noise must be in [0, 1], got {p}")
        hit = gen.random(v.shape) < p
        noisy = np.where(hit, gen.random(v.shape), v)
        return encode_values(noisy), hit.any(axis=-1)
    raise ValueError(f"kind must be 'masked' or 'noise', got {kind!r}")
