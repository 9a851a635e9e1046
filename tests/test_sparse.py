"""Sparse inputs (CSR, CSC): the same numbers as dense inputs, without
densifying X."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from sklearn.pipeline import make_pipeline
from test_numerics import make_problem

from sklearn_ggn import (GGNScoreClassifier, GGNScoreRegressor, _inputs, _memory,
                         _network)
from sklearn_ggn._losses import LOSSES

WEIGHTS = ("hidden_weights_", "output_weights_", "hidden_intercept_",
           "output_intercept_")


def sparse_data(n=90, d=40, density=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed,
                  data_rvs=rng.standard_normal)
    Xd = X.toarray()
    y = Xd[:, 0] - Xd[:, 1] + 0.5 * Xd[:, 2] + 0.1 * rng.standard_normal(n)
    return X, Xd, y


# ------------------------------------------------------------------ network
@pytest.mark.parametrize("K,loss", [(1, "squared_error"), (3, "log_loss"),
                                    (2, "poisson")])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("block_bytes", [None, 1])
def test_sparse_products_and_grams_equal_dense(K, loss, fit_intercept,
                                               block_bytes, monkeypatch):
    if block_bytes is not None:  # one row per block: the block boundaries
        monkeypatch.setattr(_network, "_BLOCK_BYTES", block_bytes)
    net, theta, _, X, Y, s = make_problem(K=K, loss=loss, b=9, d=6, n=5,
                                          fit_intercept=fit_intercept)
    X[np.abs(X) < 0.8] = 0.0  # about half the entries
    X[3] = 0.0  # an empty row
    Xs = sp.csc_matrix(X)
    dense, sparse = net.augment(X), net.augment(Xs)
    assert sp.issparse(sparse) and sparse.format == "csr"
    np.testing.assert_array_equal(sparse.toarray(), dense)
    rng = np.random.default_rng(1)
    D = rng.uniform(0.1, 10.0, net.n_params)
    v = rng.standard_normal(net.n_params)
    y = rng.standard_normal((X.shape[0], K))
    out = []
    for Xa in (dense, sparse):
        cache = net.forward(theta, Xa)
        _, factor = LOSSES[loss]().residual_and_factor(cache.outputs, Y, s)
        _, parts = LOSSES[loss]().residual_and_parts(cache.outputs, Y, s)
        W = net.sensitivities(theta, cache, factor)
        out.append([cache.outputs, net.jvp(theta, cache, W, factor, v),
                    net.vjp(theta, cache, W, factor, y),
                    net.gram(theta, cache, W, factor, D),
                    net.gram(theta, cache, W, parts, D),
                    net.gauss_newton_matrix(theta, cache, W, factor)])
    for ours, ref in zip(out[1], out[0]):
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("given_out", [True, False])
def test_sparse_inner_products_equal_dense(dtype, index_dtype, given_out):
    # the per-unit Gram's X̂X̂ᵀ of a sparse batch, against the dense product
    X = sparse_data(n=37, d=25, density=0.15)[0].astype(dtype).tolil()
    X[5, :] = 0.0  # an empty row (only the intercept's entry is stored)
    X[6, :3] = 1.0
    X = X.tocsr()
    X.eliminate_zeros()
    net = make_problem(d=25)[0]
    Xa = net.augment(X)
    Xa.indices = Xa.indices.astype(index_dtype)
    Xa.indptr = Xa.indptr.astype(index_dtype)
    dense = Xa.toarray().astype(np.float64)
    ref = dense @ dense.T
    out = np.full((37, 37), np.nan, dtype=dtype) if given_out else None
    got = _network._inner_products_lower(Xa, out)
    assert got.dtype == dtype and got.shape == (37, 37)
    if given_out:
        assert got is out
    lower = np.tril_indices(37)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got[lower], ref[lower], rtol=tol, atol=tol)


@pytest.mark.parametrize("rows", [2, 40])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_times_transposed_equals_dense_on_both_routes(rows, dtype):
    # X̂ Wᵀ of a sparse batch: 2 rows store fewer than d̂ entries (W read in
    # place, strided), 40 rows more (a transposed copy of W read by rows)
    X = sparse_data(n=rows, d=60, density=0.1, seed=3)[0].astype(dtype)
    net = make_problem(d=60)[0]
    Xa = net.augment(X)
    assert (Xa.nnz < Xa.shape[1]) == (rows == 2)
    W = np.random.default_rng(4).standard_normal((7, Xa.shape[1])).astype(dtype)
    got = _network._times_transposed(Xa, W)
    ref = Xa.toarray().astype(np.float64) @ W.T.astype(np.float64)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert got.dtype == dtype
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_augment_canonicalizes_without_modifying_the_input():
    # duplicates and unsorted indices in row 0
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0]), np.array([2, 0, 2, 1]),
                       np.array([0, 3, 4])), shape=(2, 3))
    before = (X.data.copy(), X.indices.copy())
    net = make_problem(d=3)[0]
    Xa = net.augment(X)
    np.testing.assert_array_equal(Xa.toarray(), [[2.0, 0, 4.0, 1], [0, 4.0, 0, 1]])
    assert Xa.has_canonical_format
    np.testing.assert_array_equal(X.data, before[0])
    np.testing.assert_array_equal(X.indices, before[1])


# ------------------------------------------------------------------ fits
CASES = [(GGNScoreRegressor, {}), (GGNScoreClassifier, {}),
         (GGNScoreClassifier, {"loss": "squared_error"})]


@pytest.mark.parametrize("Est,kwargs", CASES)
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("batch_size", [None, 16])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("linear_solver", ["dual", "primal"])
def test_sparse_fit_equals_dense_fit(Est, kwargs, n_classes, batch_size, fmt,
                                     linear_solver):
    """The same weights to 1e-10 (float64 steps), K = 1 and K > 1."""
    if Est is GGNScoreRegressor and n_classes == 3:
        pytest.skip("one regression target")
    X, Xd, y = sparse_data()
    if Est is GGNScoreClassifier:
        y = np.digitize(y, np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1]))
    # (the network sees X as given, sparse or dense)
    est = Est(n_hidden=12, max_iter=4, tol=0, batch_size=batch_size,
              linear_solver=linear_solver, random_state=0, input_transform=None,
              compute_dtype="float64", **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = est.fit(X.asformat(fmt), y)
        ours = {name: getattr(est, name) for name in WEIGHTS}
        ref = est.fit(Xd, y)
        ref = {name: getattr(est, name) for name in WEIGHTS}
    for name in WEIGHTS:
        scale = np.abs(ref[name]).max()
        assert np.abs(ours[name] - ref[name]).max() <= 1e-10 * scale, name
    np.testing.assert_allclose(est.predict(X.asformat(fmt)), est.predict(Xd),
                               rtol=1e-12, atol=1e-12)


def test_sparse_fit_never_densifies_x(monkeypatch):
    """A dual fit, a prediction and a partial_fit with the robust clip never
    call toarray/todense (the piecewise-linear encodings are dense columns)."""
    X, _, y = sparse_data()

    def refuse(*args, **kwargs):
        raise AssertionError("X was densified")

    for cls in (sp.csr_matrix, sp.csr_array, sp.csc_matrix, sp.csc_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    for fmt in ("csr", "csc"):
        for batch_size in (None, 16):
            est = GGNScoreRegressor(n_hidden=8, max_iter=2, tol=0,
                                    batch_size=batch_size, linear_solver="dual",
                                    input_transform="robust_clip")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est.fit(X.asformat(fmt), y).predict(X.asformat(fmt))
                est.partial_fit(X.asformat(fmt), y)


def test_float32_sparse_input_stays_float32():
    X, Xd, y = sparse_data()
    est = GGNScoreRegressor(n_hidden=8, max_iter=3, tol=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X.astype(np.float32), y)
        ref = GGNScoreRegressor(n_hidden=8, max_iter=3, tol=0, random_state=0
                                ).fit(Xd.astype(np.float32), y)
    assert est.hidden_weights_.dtype == np.float32
    assert est.predict(X.astype(np.float32)).dtype == np.float32
    np.testing.assert_allclose(est.hidden_weights_, ref.hidden_weights_, rtol=1e-3,
                               atol=1e-4)


def test_auto_solver_and_memory_for_many_sparse_features():
    """20 000 features: the primal form (p ≥ n·d̂ = 2e6) is never chosen and
    the dual estimate stays small."""
    for K in (1, 10):
        est = _memory.estimate_solver_bytes(256 // K, 20_000, 100, K)
        assert est["dual"] < 2**30
        assert est["primal"] > 2**40
        assert _memory.choose_linear_solver("auto", 256 // K, 20_000, 100, K,
                                            available_bytes=2**34) == "dual"
        flops = _memory.step_flops(256 // K, 20_000, 100, K)
        assert flops["dual"] < flops["primal"]


# ------------------------------------------------------------------ real task
def make_text(n_docs, seed):
    """Short documents on three topics from a shared and a topical vocabulary."""
    rng = np.random.default_rng(seed)
    shared = [f"w{i}" for i in range(300)]
    topics = [[f"t{c}_{i}" for i in range(40)] for c in range(3)]
    labels = rng.integers(0, 3, n_docs)
    docs = []
    for c in labels:
        words = list(rng.choice(shared, 12)) + list(rng.choice(topics[c], 3))
        rng.shuffle(words)
        docs.append(" ".join(words))
    return docs, labels


def test_text_pipeline_with_hashing_vectorizer():
    docs, labels = make_text(400, 0)
    docs_test, labels_test = make_text(400, 1)
    clf = make_pipeline(HashingVectorizer(n_features=2**14, alternate_sign=False),
                        TfidfTransformer(),
                        GGNScoreClassifier(n_hidden=32, max_iter=10, random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(docs, labels)
    assert clf.score(docs_test, labels_test) > 0.9


# ------------------------------------------------------------------ the map
@pytest.mark.slow
def test_default_fit_on_csr_digits_is_the_dense_fit():
    """The default input map on sparse X: digits as CSR (a third of its
    columns have a nonzero median and are stored in full) fits and predicts
    as its dense copy."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    S = sp.csr_matrix(X)
    a = GGNScoreClassifier(random_state=0).fit(S, y)
    b = GGNScoreClassifier(random_state=0).fit(X, y)
    assert np.abs(a.predict_proba(S) - b.predict_proba(X)).max() <= 1e-8


@pytest.mark.parametrize("Est", [GGNScoreClassifier, GGNScoreRegressor])
@pytest.mark.parametrize("compute_dtype,tol", [("float64", 1e-8), ("auto", 2e-6)])
def test_default_fit_on_a_sparse_one_hot_table_is_the_dense_fit(Est, compute_dtype,
                                                                 tol):
    """OneHotEncoder's sparse output: the columns of rare levels (median 0)
    are mapped on their stored values, a level in most rows (median 1) is
    stored in full; the model is the dense copy's, to the rounding of the
    steps' dtype (the default's float32 mini-batch steps sum the sparse and
    the dense products in different orders: 2e-7 measured)."""
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    n = 800
    C = np.column_stack([rng.integers(0, k, n) for k in (2, 3, 5, 8, 20)]
                        + [rng.choice(3, n, p=[0.7, 0.2, 0.1])])
    signal = C[:, 0] + 0.5 * C[:, 1] + (C[:, 3] % 3 == 0) - (C[:, 5] == 0)
    S = OneHotEncoder().fit_transform(C).tocsr()
    X = S.toarray()
    y = signal + 0.5 * rng.standard_normal(n)
    if Est is GGNScoreClassifier:
        y = (y > np.median(y)).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = Est(random_state=0, compute_dtype=compute_dtype).fit(S, y)
        b = Est(random_state=0, compute_dtype=compute_dtype).fit(X, y)
    assert np.count_nonzero(a.input_center_) >= 1  # a level in most rows
    assert sp.issparse(_inputs.robust_clip(S, a.input_center_, a.input_scale_))
    if Est is GGNScoreClassifier:
        ours, ref = a.predict_proba(S), b.predict_proba(X)
    else:
        ours, ref = a.predict(S), b.predict(X)
    assert np.abs(ours - ref).max() <= tol
