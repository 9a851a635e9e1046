"""The inputs the network sees: the input maps of ``input_transform``.

Each map is a fitted transformer (:class:`InputMap`: ``fit``,
``transform``, ``n_features_out_``, its own ONNX nodes), held by a fitted
estimator as ``input_map_`` and applied wherever ``X`` enters the
network: :class:`Identity` (None), :class:`RobustClip`
(``"robust_clip"``: the robust scaling with smooth clipping described
below) and :class:`PiecewiseLinear` (``"robust_clip+ple"``: the same, and
piecewise-linear encodings of its columns on their training quantiles).

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

from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import (
    _check_feature_names_in,
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

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
    X, sample_weight, rows, w = _dense_rows(X, sample_weight)
    q1, center, q3 = _dense_quantiles(rows, w, [0.25, 0.5, 0.75])
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


def column_quantiles(X, levels, sample_weight=None):
    """The quantiles at ``levels`` of every column of ``X`` (dense or
    sparse), an array of shape (len(levels), n_features), float64: those
    of the weighted empirical distribution (the inverted CDF, rows weighted
    as in :func:`robust_clip_statistics`, over the same rows), so each is a
    value of the column (a sparse column's implicit zeros are rows of
    value 0)."""
    if sp.issparse(X):
        _, _, sub, ws = _sparse_rows(X, sample_weight)
        data, col, wt, zeros = _sparse_columns(sub, ws)
        return np.array(_sparse_quantiles(data, col, wt, zeros, X.shape[1],
                                          levels)).reshape(len(levels), -1)
    _, _, rows, w = _dense_rows(X, sample_weight)
    return np.asarray(_dense_quantiles(rows, w, levels)).reshape(len(levels), -1)


def _dense_rows(X, sample_weight):
    """``(X, sample_weight, rows, w)``: dense X and its weights without
    the rows of weight 0, and the rows the quantiles are taken over (every
    k-th, at most ``_QUANTILE_ROWS``; float64) with their weights."""
    if sample_weight is None:
        sample_weight = np.ones(X.shape[0])
    present = np.asarray(sample_weight) > 0
    if not np.all(present):
        X, sample_weight = X[present], sample_weight[present]
    step = max(1, -(-X.shape[0] // _QUANTILE_ROWS))
    rows = np.asarray(X[::step], dtype=np.float64)
    w = np.asarray(sample_weight[::step], dtype=np.float64)
    return X, sample_weight, rows, w


def _dense_quantiles(rows, w, levels):
    """Column quantiles at ``levels`` of the ``rows`` weighted by ``w``."""
    # (equal weights: the same quantiles, without the weighted sort)
    return np.quantile(
        rows, levels, axis=0, method="inverted_cdf",
        weights=None if np.all(w == w[0]) else np.broadcast_to(w[:, None],
                                                                rows.shape))


def _sparse_rows(X, sample_weight):
    """``(X, w, sub, ws)``: sparse X (canonical CSR) and its weights without
    the rows of weight 0, and the rows the quantiles are taken over (every
    k-th, at most ``_QUANTILE_ROWS``; CSC) with their weights (unit
    weights when they are equal)."""
    w = (np.ones(X.shape[0]) if sample_weight is None
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
    return X, w, sub, ws


def _sparse_columns(sub, ws):
    """``(data, col, wt, zeros)`` of the CSC rows ``sub`` weighted by
    ``ws``: the stored values (float64), their columns and weights, and
    the weight of each column's implicit zeros."""
    d = sub.shape[1]
    data = sub.data.astype(np.float64)
    col = np.repeat(np.arange(d), np.diff(sub.indptr))
    wt = ws[sub.indices]
    zeros = np.maximum(ws.sum() - np.bincount(col, wt, minlength=d), 0.0)
    return data, col, wt, zeros


def _sparse_quantiles(data, col, wt, zeros, d, levels):
    """Column quantiles at ``levels`` (a list of arrays of shape (d,)) of
    the stored values ``data`` in columns ``col`` with weights ``wt`` and
    each column's implicit zeros of weight ``zeros``."""
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
    total = within[np.r_[starts[1:], values.size] - 1][cols]
    # (the first entry of positive weight whose cumulative weight reaches
    # the level: a column without implicit zeros has its 0 entry of weight
    # 0, which level 0 would otherwise pick)
    return [values[np.minimum.reduceat(
                np.where((within >= q * total) & (weights > 0), index,
                         values.size), starts)]
            for q in levels]


def _sparse_statistics(X, sample_weight):
    """:func:`robust_clip_statistics` of sparse ``X``, without densifying it:
    the same rows, quantile rule and formulas as for the dense copy."""
    d = X.shape[1]
    X, w, sub, ws = _sparse_rows(X, sample_weight)
    step = max(1, -(-X.shape[0] // _QUANTILE_ROWS))
    data, col, wt, zeros = _sparse_columns(sub, ws)
    total = ws.sum()
    q1, center, q3 = _sparse_quantiles(data, col, wt, zeros, d,
                                       (0.25, 0.5, 0.75))
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


# ----------------------------------------------------------- the map objects
# the sparse formats the maps take (those of the estimators)
_ACCEPT_SPARSE = ("csr", "csc", "coo")


class InputMap(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Base class of the input maps ``x' = T(x)``: fitted on the training
    rows, applied wherever ``X`` enters the network (fit, predict, the
    posterior, ONNX export).

    A map is a scikit-learn transformer (``fit``, ``transform``,
    ``get_feature_names_out``) that knows its output width
    (``n_features_out_``) and writes its own ONNX nodes
    (:meth:`onnx_nodes`). The estimators call the unchecked ``_fit`` and
    ``_map`` on the ``X`` they have validated; a subclass implements those,
    ``onnx_nodes`` and the plain form of its fitted state
    (``_plain_attributes``, ``_set_plain_attributes``) that pickle and
    ``skops`` files hold.
    """

    # whether _map can write its output into a given array (the first
    # columns of the network's augmented inputs)
    _writes_out = True

    def fit(self, X, y=None, sample_weight=None):
        """Fit the map on the rows of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs; a sparse matrix counts as its dense copy.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; a row of weight 2 counts as the row
            twice, one of weight 0 as no row.

        Returns
        -------
        self : object
            The fitted map.
        """
        X = validate_data(self, X, accept_sparse=_ACCEPT_SPARSE,
                          dtype=[np.float64, np.float32])
        if sample_weight is not None:
            sample_weight = _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        return self._fit(X, sample_weight)

    def transform(self, X):
        """``X`` as the network sees it.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        X_out : {ndarray, sparse matrix} of shape (n_samples, n_features_out_)
            The mapped inputs, in ``X``'s dtype (float32 or float64).
            Sparse ``X`` gives a CSR matrix while it is at most half full,
            else an array.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, accept_sparse=_ACCEPT_SPARSE,
                          dtype=[np.float64, np.float32])
        return self._map(X)

    def get_feature_names_out(self, input_features=None):
        """Names of the mapped features.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            The input features' names; by default ``feature_names_in_``,
            or ``x0``, ``x1``, ... when the map was fitted without names.

        Returns
        -------
        feature_names_out : ndarray of str objects
            One name per column of :meth:`transform`'s output.
        """
        check_is_fitted(self)
        names = _check_feature_names_in(self, input_features)
        return np.asarray(self._feature_names(names), dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # the estimators' interface (validated X)
    def _fixed_width(self, n_features):
        """The output width for ``n_features`` input columns when the map's
        fit does not decide it (None when it does)."""
        return n_features

    def _feature_names(self, names):
        return list(names)

    def _plain_attributes(self):
        return {"n_features_in_": int(self.n_features_in_)}

    def _set_plain_attributes(self, attributes):
        self.n_features_in_ = int(attributes["n_features_in_"])


class Identity(InputMap):
    """The map of ``input_transform=None``: ``X`` as given (the paper's
    setting).

    Attributes
    ----------
    n_features_in_ : int
        Number of input columns.
    n_features_out_ : int
        Number of output columns, ``n_features_in_``.
    """

    _writes_out = False

    @property
    def n_features_out_(self):
        return self.n_features_in_

    def _fit(self, X, sample_weight=None):
        self.n_features_in_ = X.shape[1]
        return self

    def _map(self, X, out=None):
        if out is None:
            return X
        out[...] = X.toarray() if sp.issparse(X) else X
        return out

    def onnx_nodes(self, graph, X):
        """The graph's name of the mapped inputs: ``X`` itself."""
        return X


class RobustClip(InputMap):
    """Robust scaling and smooth clipping of every column
    (``input_transform="robust_clip"``).

    Each column is centered on its median, scaled by the smaller of its
    standard deviation and its interquartile range over 1.349 (the range
    where the quartiles coincide), and smoothly clipped,
    ``x' = z / sqrt(1 + (z / B)²)`` with ``B = 3 · 1.349``; see the
    module's description for the rules of flat and indicator columns and
    of sparse inputs (kept sparse where a column's median is 0).

    Parameters
    ----------
    stream : bool, default=False
        Whether the map is fitted on the first chunk of a stream
        (``partial_fit``): a column constant in it is centered but not
        zeroed (its scale is 1), as later chunks may vary.

    Attributes
    ----------
    center_ : ndarray of shape (n_features_in_,)
        The column medians (float64).
    scale_ : ndarray of shape (n_features_in_,)
        The column factors (float64): ``z = (x − center_) · scale_``.
    n_features_in_ : int
        Number of input columns.
    n_features_out_ : int
        Number of output columns, ``n_features_in_``.
    """

    def __init__(self, stream=False):
        self.stream = stream

    @property
    def n_features_out_(self):
        return self.n_features_in_

    def _fit(self, X, sample_weight=None):
        center, scale = robust_clip_statistics(X, sample_weight)
        if self.stream:
            scale = np.where(scale > 0, scale, 1.0)
        self.center_, self.scale_ = center, scale
        self.n_features_in_ = X.shape[1]
        return self

    def _map(self, X, out=None):
        return robust_clip(X, self.center_, self.scale_, out=out)

    def onnx_nodes(self, graph, X):
        """Add the map's nodes to an ONNX graph.

        Parameters
        ----------
        graph : object
            The converter's graph builder (``node``, ``constant``).
        X : str
            The name of the inputs, in the graph's dtype.

        Returns
        -------
        name : str
            The name of the mapped inputs,
            ``z = (x − c) a``, ``x' = z / √(1 + (z/B)²)``.
        """
        z = graph.node("Mul", [graph.node("Sub", [X, graph.constant(
            "input_center", self.center_)]), graph.constant(
            "input_scale", self.scale_)])
        z = graph.node("Clip", [z, graph.constant("z_min", -_Z_MAX),
                                graph.constant("z_max", _Z_MAX)])
        z2 = graph.node("Mul", [graph.node("Mul", [z, z]), graph.constant(
            "inv_clip2", np.array([1.0 / CLIP**2]))])
        return graph.node("Div", [z, graph.node("Sqrt", [graph.node("Add", [
            z2, graph.constant("one", np.array([1.0]))])])])

    def _plain_attributes(self):
        return {**super()._plain_attributes(),
                "center_": np.asarray(self.center_),
                "scale_": np.asarray(self.scale_)}

    def _set_plain_attributes(self, attributes):
        super()._set_plain_attributes(attributes)
        self.center_ = np.asarray(attributes["center_"], dtype=np.float64)
        self.scale_ = np.asarray(attributes["scale_"], dtype=np.float64)


class PiecewiseLinear(RobustClip):
    r"""The robust clip, then piecewise-linear encodings of its columns
    (``input_transform="robust_clip+ple"``).

    Every column first goes through :class:`RobustClip` (``x'``, kept as
    the first ``n_features_in_`` output columns). A column whose quantiles
    give it at least two bins is also encoded on them: with edges
    ``b_0 < b_1 < ... < b_T`` (the distinct values among the quantiles of
    ``x'`` at levels ``0, 1/n_bins, ..., 1`` on the training rows,
    weighted rows counting as repeated rows) it gains the T features

    .. math::

        e_j(x') = \min\Big(1, \max\Big(0,
        \frac{x' - b_{j-1}}{b_j - b_{j-1}}\Big)\Big),
        \qquad j = 1, \dots, T,

    appended after the clipped columns, column by column (Gorishniy,
    Rubachev and Babenko, 2022, "On embeddings for numerical features in
    tabular deep learning"). The network's first layer can then give each
    bin of a column its own slope: a threshold or a bump in one column is
    one hidden unit's work. A column of few distinct values gets fewer
    bins; a binary or constant one (one bin or none) is left as its clipped
    column only.

    Sparse ``X``: a column whose median is 0 (the robust clip keeps its
    zeros, as in a one-hot block, counts or tf-idf) is encoded only when
    its encoding keeps its zeros too, i.e. when it has no negative values
    (then ``e_j(0) = 0`` for every bin); otherwise its encoding would fill
    every row and the column is left unencoded. A fit on sparse ``X`` is
    then the fit on its dense copy except for such columns (median 0 and
    negative values), which the dense copy encodes. The encodings of a
    sparse matrix are a sparse block (the mapped matrix stays sparse while
    it is at most half full).

    Parameters
    ----------
    n_bins : int, default=16
        Most bins per column (quantile levels ``j / n_bins``).
    stream : bool, default=False
        Whether the map is fitted on the first chunk of a stream (see
        :class:`RobustClip`).

    Attributes
    ----------
    center_, scale_ : ndarray of shape (n_features_in_,)
        The robust clip's statistics (:class:`RobustClip`).
    bin_edges_ : ndarray of shape (n_features_in_,), dtype=object
        The edges ``b_0 < ... < b_T`` of every column, on the scale of the
        clipped column (float64); empty for a column left unencoded.
    n_features_in_ : int
        Number of input columns.
    n_features_out_ : int
        ``n_features_in_`` plus the number of bins of all columns.
    """

    _parameter_constraints = {
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "stream": ["boolean"],
    }

    def __init__(self, n_bins=16, stream=False):
        self.n_bins = n_bins
        self.stream = stream

    @property
    def n_features_out_(self):
        return self.n_features_in_ + self._columns.size

    def fit(self, X, y=None, sample_weight=None):
        self._validate_params()
        return super().fit(X, y, sample_weight)

    def _fixed_width(self, n_features):
        return None  # (the bins of the fitted columns)

    def _fit(self, X, sample_weight=None):
        super()._fit(X, sample_weight)
        levels = np.arange(self.n_bins + 1) / self.n_bins
        # the quantiles of the clipped column are the clipped quantiles
        # (the map is monotone), which are values of the column in X's dtype
        quantiles = column_quantiles(X, levels, sample_weight).astype(X.dtype)
        clipped = robust_clip(quantiles, self.center_, self.scale_)
        edges = np.empty(X.shape[1], dtype=object)
        for j in range(X.shape[1]):
            column = np.unique(clipped[:, j].astype(np.float64))
            # (at least two bins: one is an affine copy of the column)
            keeps_sparse = (not sp.issparse(X) or self.center_[j] != 0
                            or column[0] >= 0)
            edges[j] = column if column.size >= 3 and keeps_sparse \
                else np.empty(0)
        self.bin_edges_ = edges
        self._set_bins()
        return self

    def _set_bins(self):
        """The encoded features as arrays: their ``_columns``, lower edges
        ``_lower`` and widths ``_width`` (from ``bin_edges_``)."""
        edges = [np.asarray(e, dtype=np.float64) for e in self.bin_edges_]
        counts = np.array([max(e.size - 1, 0) for e in edges], dtype=np.intp)
        self._columns = np.repeat(np.arange(len(edges)), counts)
        self._lower = np.concatenate([np.zeros(0)] + [e[:-1] for e in edges])
        self._width = np.concatenate([np.zeros(0)] + [np.diff(e) for e in edges])

    def _map(self, X, out=None):
        d = self.n_features_in_
        if self._columns.size == 0:
            return super()._map(X, out=out)
        if sp.issparse(X) and out is None:
            clipped = super()._map(X)
            if sp.issparse(clipped):
                return self._sparse_encoded(clipped)
            out = np.empty((X.shape[0], self.n_features_out_), dtype=X.dtype)
            out[:, :d] = clipped
        else:
            if out is None:
                out = np.empty((X.shape[0], self.n_features_out_),
                               dtype=X.dtype)
            super()._map(X, out=out[:, :d])
        for start in range(0, X.shape[0], _BLOCK_ROWS):
            rows = slice(start, start + _BLOCK_ROWS)
            out[rows, d:] = self._encode(out[rows, :d])
        return out

    def _encode(self, clipped):
        """The encodings (b × features) of a block of clipped rows (an
        array, or a CSR matrix), in its dtype."""
        dtype = clipped.dtype
        if sp.issparse(clipped):
            columns = np.unique(self._columns)
            block = clipped[:, columns].toarray()[
                :, np.searchsorted(columns, self._columns)]
        else:
            block = clipped[:, self._columns]
        block -= self._lower.astype(dtype)
        # (a width that rounds to 0 in float32 gives 0 or 1, not NaN)
        block /= np.maximum(self._width.astype(dtype), np.finfo(dtype).tiny)
        np.maximum(block, 0, out=block)
        np.minimum(block, 1, out=block)
        return block

    def _sparse_encoded(self, clipped):
        """The CSR matrix ``[clipped, encodings]`` (dense when it would be
        more than ``_SPARSE_FILL`` full)."""
        n = clipped.shape[0]
        blocks = [sp.csr_array(self._encode(clipped[start:start + _BLOCK_ROWS]))
                  for start in range(0, n, _BLOCK_ROWS)]
        mapped = sp.hstack([clipped, sp.vstack(blocks, format="csr")],
                           format="csr")
        if mapped.nnz > _SPARSE_FILL * n * mapped.shape[1]:
            return mapped.toarray()
        return mapped

    def _feature_names(self, names):
        bins = np.concatenate([[0], np.cumsum(np.bincount(
            self._columns, minlength=self.n_features_in_))])
        encoded = [f"{names[j]}_ple{k + 1}" for j in range(len(names))
                   for k in range(bins[j + 1] - bins[j])]
        return list(names) + encoded

    def onnx_nodes(self, graph, X):
        """Add the map's nodes to an ONNX graph.

        Parameters
        ----------
        graph : object
            The converter's graph builder (``node``, ``constant``).
        X : str
            The name of the inputs, in the graph's dtype.

        Returns
        -------
        name : str
            The name of the mapped inputs: the clipped columns
            (:meth:`RobustClip.onnx_nodes`) and their encodings,
            ``Clip((x'[:, columns] − lower) / width, 0, 1)``.
        """
        from onnx import TensorProto

        clipped = super().onnx_nodes(graph, X)
        if self._columns.size == 0:
            return clipped
        block = graph.node("Gather", [clipped, graph.constant(
            "ple_columns", self._columns, TensorProto.INT64, np.int64)], axis=1)
        block = graph.node("Div", [graph.node("Sub", [block, graph.constant(
            "ple_lower", self._lower)]), graph.constant("ple_width", self._width)])
        block = graph.node("Clip", [block, graph.constant("ple_zero", 0.0),
                                    graph.constant("ple_one", 1.0)])
        return graph.node("Concat", [clipped, block], axis=1)

    def _plain_attributes(self):
        edges = [np.asarray(e, dtype=np.float64) for e in self.bin_edges_]
        return {**super()._plain_attributes(),
                "bin_edges_": np.concatenate([np.zeros(0)] + edges),
                "bin_edge_counts": np.array([e.size for e in edges])}

    def _set_plain_attributes(self, attributes):
        super()._set_plain_attributes(attributes)
        counts = np.asarray(attributes["bin_edge_counts"], dtype=np.intp)
        flat = np.asarray(attributes["bin_edges_"], dtype=np.float64)
        edges = np.empty(counts.size, dtype=object)
        edges[:] = np.split(flat, np.cumsum(counts)[:-1])
        self.bin_edges_ = edges
        self._set_bins()


# the maps of ``input_transform``, by the parameter's value (None: Identity)
INPUT_MAPS = {"robust_clip": RobustClip, "robust_clip+ple": PiecewiseLinear}
_MAP_CLASSES = {cls.__name__: cls
                for cls in (Identity, RobustClip, PiecewiseLinear)}
# the maps ``input_transform="auto"`` chooses from on the overfitting watch's
# held-out rows; the first, the plainest, wins ties and maps a fit without
# a watch
AUTO_MAP_CANDIDATES = ("robust_clip", "robust_clip+ple")


def input_map_name(input_map):
    """The ``input_transform`` value of a fitted map (None: the identity)."""
    for name, cls in INPUT_MAPS.items():
        if type(input_map) is cls:
            return name
    return None


def make_input_map(input_transform, stream=False):
    """The unfitted map of an ``input_transform`` value (``stream``: fitted
    on the first chunk of a stream)."""
    if input_transform is None:
        return Identity()
    if input_transform not in INPUT_MAPS:
        raise ValueError(
            f"input_transform={input_transform!r} is not one of "
            f"{sorted(INPUT_MAPS)} or None.")
    return INPUT_MAPS[input_transform](stream=stream)


def input_map_to_dict(input_map):
    """A fitted map as a dict of strings, numbers and arrays (what pickle
    and ``skops`` files hold): its class name, parameters and fitted
    state."""
    return {"class": type(input_map).__name__,
            "params": input_map.get_params(),
            "attributes": input_map._plain_attributes()}


def input_map_from_dict(plain):
    """The fitted map stored by :func:`input_map_to_dict`."""
    cls = _MAP_CLASSES[plain["class"]]
    input_map = cls(**plain["params"])
    input_map._set_plain_attributes(plain["attributes"])
    return input_map


def input_map_from_statistics(center, scale, n_features):
    """The fitted map of the statistics ``input_center_`` and
    ``input_scale_`` alone (None, None: the identity)."""
    input_map = Identity() if center is None else RobustClip()
    input_map._set_plain_attributes({"n_features_in_": n_features,
                                     "center_": center, "scale_": scale})
    return input_map
