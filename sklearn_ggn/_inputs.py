"""The inputs the network sees: robust scaling with smooth clipping.

``input_transform="robust_clip"`` maps every column ``x`` of ``X`` to

    z = (x − q½) / s,    x' = z / sqrt(1 + (z / B)²),    B = 3 · 1.349,

with ``q½`` the column's median and ``s = min(σ, (q¾ − q¼) / 1.349)`` the
smaller of its standard deviation and its interquartile range in standard
deviations of a Gaussian: a light-tailed column is standardized (its
values within ±2σ move by at most 11 %), a heavy-tailed one scaled by its
bulk, not its outliers. Where the quartiles coincide (a column that is
mostly one value: rare pixels, zero-inflated counts)
``z = 2 (x − q½) / (max − min)``, and ``z = (x − q½) / (max − min)`` when
the column holds two values only, each in at least ``INDICATOR_ROWS`` rows
(an indicator, such as a one-hot column: its step stays 1; counted over all
rows, with sample weights as repeated rows); a constant column maps to 0.
The statistics come from the training rows of the first fit (and are kept
by warm starts and ``partial_fit``). The map is monotone and bounded by
``B``: an outlying row enters the network, its Jacobian and the step's
kernel system at most ``B`` out. This is the robust scaling and smooth
clipping of Holzmüller, Grinsztajn and Steinwart (2024, "Better by
default: strong pre-tuned MLPs and boosted trees on tabular data"), whose
bound of 3 on its IQR scale is ``B`` here, with the scale capped by σ so
that light-tailed columns keep unit variance (with the IQR scale alone a
uniform column shrank to 0.74 of it and a non-linear task of such columns
lost 0.02).

A fit on sparse inputs passes them as given: centering would densify them
(sparse inputs to a model fitted on dense ones are mapped as dense rows).
"""

import numpy as np
import scipy.sparse as sp

# the interquartile range of a standard normal: IQR / NORMAL_IQR is the
# normal-consistent robust standard deviation
NORMAL_IQR = 1.3489795003921634
# the bound B of the smooth clipping, in standard deviations: 3 IQR of a
# Gaussian column, RealMLP's bound of 3 on its IQR scale
CLIP = 3.0 * NORMAL_IQR
# |z| is clipped here before squaring (no overflow; x' is B to 1e-12 there)
_Z_MAX = 1e6 * CLIP
# rows per block of the map
_BLOCK_ROWS = 1024
# a column of two values is an indicator when each value has at least this
# weight (rows): a category recurs; a column with a value seen once or twice
# (a pixel lit in one image) keeps the range rule
INDICATOR_ROWS = 5
# quantiles are taken over at most this many rows (every k-th row): their
# error at 16 384 rows is far below what moves a fit
_QUANTILE_ROWS = 16384


def robust_clip_statistics(X, sample_weight=None):
    """``(center, scale)`` of every column of dense ``X`` (float64 arrays of
    shape (n_features,)), or ``(None, None)`` for sparse ``X``.

    Quantiles of the empirical distribution with the rows weighted by
    ``sample_weight`` (the inverted CDF, no interpolation: a row of weight 2
    counts exactly as the row twice, one of weight 0 as no row)."""
    if sp.issparse(X):
        return None, None
    if sample_weight is None:
        sample_weight = np.ones(X.shape[0])
    present = np.asarray(sample_weight) > 0
    if not np.all(present):
        X, sample_weight = X[present], sample_weight[present]
    step = max(1, -(-X.shape[0] // _QUANTILE_ROWS))
    rows = np.asarray(X[::step], dtype=np.float64)
    w = np.asarray(sample_weight[::step], dtype=np.float64)
    # (equal weights: the same quantiles, without the weighted sort)
    q1, center, q3 = np.quantile(
        rows, [0.25, 0.5, 0.75], axis=0, method="inverted_cdf",
        weights=None if np.all(w == w[0]) else np.broadcast_to(w[:, None],
                                                                rows.shape))
    spread = q3 - q1
    # the weighted standard deviation over the same rows
    s = w / w.sum()
    mean = s @ rows
    std = np.sqrt(s @ np.square(rows - mean))
    low, high = np.min(X, axis=0), np.max(X, axis=0)
    full = (high - low).astype(np.float64)
    deviation = np.minimum(std, spread / NORMAL_IQR)
    # where the quartiles coincide: 2 / range, or 1 / range for an indicator,
    # whose step stays 1 as a one-hot encoder gives it
    reach = np.full(spread.shape, 2.0)
    flat = np.flatnonzero(~(spread > 0) & (full > 0))
    if flat.size:
        reach[flat[_indicators(X, flat, sample_weight, low[flat],
                               high[flat])]] = 1.0
    with np.errstate(divide="ignore", over="ignore"):
        scale = np.where(spread > 0, 1.0 / deviation,
                         np.where(full > 0, reach / full, 0.0))
    # (a spread or range so small that its inverse overflows is a constant)
    scale[~np.isfinite(scale)] = 0.0
    return center, scale


def _indicators(X, columns, sample_weight, low, high):
    """Which ``columns`` of ``X`` (all rows, weights > 0) are indicators:
    they hold only their ``low`` and ``high`` values, each with a total
    weight of at least ``INDICATOR_ROWS`` (weights count as repeated rows).
    Counted over every row, in blocks, so that neither the row order nor a
    subsample decides."""
    others = np.zeros(columns.size, dtype=bool)
    at_low = np.zeros(columns.size)
    at_high = np.zeros(columns.size)
    w = np.asarray(sample_weight, dtype=np.float64)
    for start in range(0, X.shape[0], _BLOCK_ROWS):
        rows = slice(start, start + _BLOCK_ROWS)
        block = X[rows][:, columns]
        is_low, is_high = block == low, block == high
        others |= ~np.all(is_low | is_high, axis=0)
        at_low += w[rows] @ is_low
        at_high += w[rows] @ is_high
    return ~others & (np.minimum(at_low, at_high) >= INDICATOR_ROWS)


def robust_clip(X, center, scale, out=None):
    """``X`` through the fitted map, in ``X``'s dtype (``X`` itself when
    there is no map: a fit on sparse inputs or ``input_transform=None``).

    Sparse ``X`` given to a model fitted with the map (dense training data)
    is mapped as its dense rows, block by block: the map centers.

    ``out``: an array of X's shape and dtype to write the map into (the
    first columns of the network's augmented inputs), returned."""
    if center is None:
        return X
    dtype = X.dtype
    center, scale = center.astype(dtype), scale.astype(dtype)
    if out is None:
        out = np.empty(X.shape, dtype=dtype)
    # in blocks of rows: one array of X's size is allocated, the temporaries
    # stay in cache
    for start in range(0, X.shape[0], _BLOCK_ROWS):
        rows = slice(start, start + _BLOCK_ROWS)
        block = X[rows]
        if sp.issparse(block):
            block = block.toarray()
        z = block - center
        z *= scale
        np.clip(z, -_Z_MAX, _Z_MAX, out=z)
        d = np.square(z)
        d *= dtype.type(1.0 / CLIP**2)
        d += dtype.type(1.0)
        np.sqrt(d, out=d)
        np.divide(z, d, out=out[rows])
    return out
