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

Sparse inputs get the same map, with the same statistics as their dense
copy (a column's implicit zeros count as rows of value 0). Where a column's
median is 0 (one-hot, counts, tf-idf: nearly every column of real sparse
data) the centering is zero and the clipping keeps zeros at zero, so the map
is applied to the stored values only and X stays sparse. A column whose
median is not 0 has a nonzero image at every row: it is stored in full (at
most twice its stored entries, since such a column is nonzero in half the
rows or more). When the mapped matrix would be more than half full it is
returned dense instead (a dense matrix is then the smaller and faster
form). Either way the network sees the values of the dense copy's map, and
a sparse fit equals the fit on the dense copy up to rounding.
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


# sparse X is mapped to a sparse matrix while it stays at most this full
_SPARSE_FILL = 0.5


def robust_clip_statistics(X, sample_weight=None):
    """``(center, scale)`` of every column of ``X`` (float64 arrays of
    shape (n_features,)), dense or sparse.

    Quantiles of the empirical distribution with the rows weighted by
    ``sample_weight`` (the inverted CDF, no interpolation: a row of weight 2
    counts exactly as the row twice, one of weight 0 as no row). For sparse
    ``X`` the implicit zeros are rows of value 0: the statistics are those
    of the dense copy (the same values with equal weights; with unequal
    non-integer weights, up to the rounding of their sums)."""
    if sp.issparse(X):
        return _sparse_statistics(X, sample_weight)
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


def _sparse_statistics(X, sample_weight):
    """:func:`robust_clip_statistics` of sparse ``X``, without densifying it:
    the same rows, quantile rule and formulas as for the dense copy."""
    n, d = X.shape
    w = (np.ones(n) if sample_weight is None
         else np.asarray(sample_weight, dtype=np.float64))
    present = w > 0
    X = _canonical(X)
    if not np.all(present):
        X, w = X[np.flatnonzero(present)], w[present]
    step = max(1, -(-X.shape[0] // _QUANTILE_ROWS))
    sub = sp.csc_array(X[::step]) if step > 1 else sp.csc_array(X)
    ws = w[::step]
    # (equal weights: unit weights, whose sums are exact, as the dense
    # path's unweighted quantiles)
    if np.all(ws == ws[0]):
        ws = np.ones(ws.size)
    data = sub.data.astype(np.float64)
    col = np.repeat(np.arange(d), np.diff(sub.indptr))
    wt = ws[sub.indices]
    total = ws.sum()
    zeros = np.maximum(total - np.bincount(col, wt, minlength=d), 0.0)
    # the sorted values of each column with one entry of value 0 that
    # stands for its implicit zeros, weighted by their rows
    values = np.concatenate([data, np.zeros(d)])
    weights = np.concatenate([wt, zeros])
    cols = np.concatenate([col, np.arange(d)])
    order = np.lexsort((values, cols))
    values, weights, cols = values[order], weights[order], cols[order]
    starts = np.searchsorted(cols, np.arange(d))
    cum = np.cumsum(weights)
    before = np.concatenate([[0.0], cum])[starts]
    within = cum - before[cols]
    index = np.arange(values.size)
    q1, center, q3 = (
        values[np.minimum.reduceat(
            np.where(within >= q * within[np.r_[starts[1:], values.size] - 1]
                     [cols], index, values.size), starts)]
        for q in (0.25, 0.5, 0.75))
    spread = q3 - q1
    # the weighted standard deviation over the same rows (two passes)
    mean = np.bincount(col, wt * data, minlength=d) / total
    std = np.sqrt((np.bincount(col, wt * np.square(data - mean[col]),
                               minlength=d) + zeros * mean**2) / total)
    # the extremes and indicators over all rows (the implicit zeros too)
    full_cols = sub if step == 1 else sp.csc_array(X)
    nnz = np.diff(full_cols.indptr)
    fdata = full_cols.data.astype(np.float64)
    fcol = np.repeat(np.arange(d), nnz)
    low = np.zeros(d)
    high = np.zeros(d)
    stored = nnz > 0
    if fdata.size:
        starts_full = full_cols.indptr[:-1][stored]
        low[stored] = np.minimum.reduceat(fdata, starts_full)
        high[stored] = np.maximum.reduceat(fdata, starts_full)
    dense_cols = nnz == X.shape[0]  # (no implicit zero)
    low = np.where(dense_cols, low, np.minimum(low, 0.0))
    high = np.where(dense_cols, high, np.maximum(high, 0.0))
    # (the range in X's dtype, as the dense path computes it)
    full = (high.astype(X.dtype) - low.astype(X.dtype)).astype(np.float64)
    deviation = np.minimum(std, spread / NORMAL_IQR)
    reach = np.full(d, 2.0)
    flat = ~(spread > 0) & (full > 0)
    if np.any(flat):
        fw = w[full_cols.indices]
        is_low, is_high = fdata == low[fcol], fdata == high[fcol]
        others = np.bincount(fcol, ~(is_low | is_high), minlength=d) > 0
        implicit = np.maximum(w.sum() - np.bincount(fcol, fw, minlength=d), 0.0)
        at_low = np.bincount(fcol, fw * is_low, minlength=d) + np.where(
            (low == 0) & ~dense_cols, implicit, 0.0)
        at_high = np.bincount(fcol, fw * is_high, minlength=d) + np.where(
            (high == 0) & ~dense_cols, implicit, 0.0)
        indicator = ~others & (np.minimum(at_low, at_high) >= INDICATOR_ROWS)
        reach[flat & indicator] = 1.0
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        scale = np.where(spread > 0, 1.0 / deviation,
                         np.where(full > 0, reach / full, 0.0))
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
    there is no map: ``input_transform=None``).

    Sparse ``X`` is mapped to a sparse CSR matrix of the same values as the
    dense copy's map: the stored values of the columns centered at 0, every
    row of the others (:func:`_sparse_map`); dense, block by block, when
    that matrix would be more than half full.

    ``out``: an array of X's shape and dtype to write the map into (the
    first columns of the network's augmented inputs), returned."""
    if center is None:
        return X
    if sp.issparse(X) and out is None:
        mapped = _sparse_map(X, center, scale)
        if mapped is not None:
            return mapped
    dtype = X.dtype
    center, scale = center.astype(dtype), scale.astype(dtype)
    if out is None:
        out = np.empty(X.shape, dtype=dtype)
    # in blocks of rows: one array of X's size is allocated, the temporaries
    # stay in cache
    if sp.issparse(X):
        X = sp.csr_array(X)
    for start in range(0, X.shape[0], _BLOCK_ROWS):
        rows = slice(start, start + _BLOCK_ROWS)
        block = X[rows]
        if sp.issparse(block):
            block = block.toarray()
        _clip_values(block - center, scale, dtype, out[rows])
    return out


def _clip_values(z, scale, dtype, out):
    """``out[...] = z' / sqrt(1 + (z'/B)²)`` with ``z' = z · scale``
    (``z`` is overwritten); the same operations for dense blocks and for the
    stored values of a sparse matrix, so that both give the same bits."""
    z *= scale
    np.clip(z, -_Z_MAX, _Z_MAX, out=z)
    d = np.square(z)
    d *= dtype.type(1.0 / CLIP**2)
    d += dtype.type(1.0)
    np.sqrt(d, out=d)
    np.divide(z, d, out=out)
    return out


def _canonical(X):
    """Sparse ``X`` as a CSR array without duplicate entries: a value stored
    twice is, as SciPy defines it, their sum, and the map of a sum is not the
    sum of the maps (the caller's matrix is not changed)."""
    X = sp.csr_array(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    return X


def _sparse_map(X, center, scale):
    """Sparse ``X`` through the map as a CSR matrix, or None when it would be
    more than ``_SPARSE_FILL`` full (then the caller maps it dense).

    A column whose center is 0 maps 0 to 0: its stored values are mapped in
    place. A column with another center maps its implicit zeros to
    ``f(−center · scale) ≠ 0``: it is stored in full."""
    n, d = X.shape
    dtype = X.dtype
    X = _canonical(X)
    centered = np.flatnonzero(center != 0)
    kept = np.ones(d, dtype=bool)
    kept[centered] = False
    stored = np.count_nonzero(kept[X.indices]) + n * centered.size
    if stored > _SPARSE_FILL * n * d:
        return None
    out = X.copy()  # (its own data: mapped in place)
    out.sort_indices()
    columns = out.indices
    _clip_values(out.data, scale.astype(dtype)[columns], dtype, out.data)
    if centered.size == 0:
        return out
    # the centered columns, every row, through the dense map
    part = sp.csc_array(X)[:, centered].toarray()
    mapped = np.empty(part.shape, dtype=dtype)
    _clip_values(part - center[centered].astype(dtype),
                 scale[centered].astype(dtype), dtype, mapped)
    out.data[~kept[columns]] = 0
    out.eliminate_zeros()
    rows = np.repeat(np.arange(n), centered.size)
    dense = sp.csr_array((mapped.ravel(), (rows, np.tile(centered, n))),
                         shape=(n, d))
    # (disjoint supports: the sum places the full columns among the others)
    return sp.csr_array(out + dense)
