"""Predictive uncertainty and evidence of the linearized Laplace approximation,
against dense references built from the definitions: the explicit Jacobian
J of the outputs (tests/naive.py, its own parameter layout), the explicit
precision ``P = (N K / σ²)(Σ_k (s_k/K) J_kᵀ J_k + τ diag ḡ''(θ*))`` and its
explicit inverse and log-determinant."""

import warnings

import numpy as np
import pytest
from naive import DenseNetwork
from scipy.stats import norm
from sklearn.compose import TransformedTargetRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreRegressor
from sklearn_ggn._regularizers import REGULARIZERS
from sklearn_ggn._tau import smoother_criteria
from sklearn_ggn.datasets import make_teacher_student

STRUCTURES = ["dual", "primal", "last_layer"]


def _data(m=24, d=3, K=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = np.sin(X @ rng.standard_normal((d, K))) * 3.0 + 5.0
    y += 0.3 * rng.standard_normal((m, K))
    X_test = 2.0 * rng.standard_normal((7, d))
    return X, (y[:, 0] if K == 1 else y), X_test


def _dense(reg):
    """The fitted network as tests/naive.py's DenseNetwork, and the
    permutation taking θ in the package's layout to the dense one."""
    U, V = reg.hidden_weights_, reg.output_weights_
    n, d = U.shape
    K = V.shape[1]
    dense = DenseNetwork(U, V, reg.hidden_intercept_, reg.output_intercept_,
                         1.0 / np.sqrt(n), reg.activation)
    # package: [U_aug (n × (d+1)) row-major, V, b_o]; dense: [U, b_h, V, b_o]
    package_index = np.empty(n * (d + 1) + n * K + K, dtype=int)
    pos = 0
    for i in range(n):
        for j in range(d):
            package_index[pos] = i * (d + 1) + j
            pos += 1
    for i in range(n):
        package_index[pos] = i * (d + 1) + d
        pos += 1
    package_index[pos:] = n * (d + 1) + np.arange(n * K + K)
    theta = np.concatenate([np.column_stack([U, reg.hidden_intercept_]).ravel(),
                            V.ravel(), reg.output_intercept_])
    return dense, theta[package_index], package_index


def _reference(reg, X, y, X_test, sample_weight=None, last_layer=False):
    """(std of y at X_test, σ² in training units, log evidence in y units)
    from the definitions, on the inputs as the network sees them (the fitted
    input_transform's map, tested in test_inputs.py)."""
    X, X_test = reg._network_inputs(X), reg._network_inputs(X_test)
    dense, theta, _ = _dense(reg)
    n, K = dense.n, dense.K
    m = X.shape[0]
    w = np.ones(m) if sample_weight is None else np.asarray(sample_weight, float)
    N = w.sum()
    s = w / N
    Y = np.asarray(y, float).reshape(m, -1)
    mean, scale = reg.target_mean_, reg.target_scale_
    Y = (Y - mean) / scale
    J = dense.jacobian(X)  # (m K, p), row k K + c
    J_test = dense.jacobian(X_test)
    reg_obj = REGULARIZERS[reg.regularizer](np.sqrt(n))
    curvature = reg_obj.hessian(theta)
    if last_layer:
        keep = slice(theta.size - (n * K + K), None)
        J, J_test, curvature = J[:, keep], J_test[:, keep], curvature[keep]
    tau = reg.tau_
    row_s = np.repeat(s / K, K)
    B = J.T @ (row_s[:, None] * J) + tau * np.diag(curvature)
    B_inv = np.linalg.inv(B)
    residual = dense.forward(X) - Y
    rss = float(np.sum(w[:, None] * residual**2))
    J_tilde = np.sqrt(row_s)[:, None] * J
    dof = np.trace(J_tilde @ B_inv @ J_tilde.T)
    sigma2 = rss / (N * K - dof)
    P_inv = sigma2 / (N * K) * B_inv
    var = sigma2 + np.einsum("rp,pq,rq->r", J_test, P_inv, J_test)
    std = np.sqrt(var).reshape(-1, K) * scale
    logdet = np.linalg.slogdet(B)[1] - np.sum(np.log(tau * curvature))
    penalty = reg_obj.value(theta).sum()
    log_z = (-0.5 * N * K * np.log(2 * np.pi * sigma2) - rss / (2 * sigma2)
             - N * K * tau * penalty / sigma2 - 0.5 * logdet
             - N * np.sum(np.log(scale)))
    return std, sigma2, log_z


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("K", [1, 2])
def test_std_and_evidence_match_dense_reference(structure, K):
    X, y, X_test = _data(K=K)
    reg = GGNScoreRegressor(n_hidden=5, tau=0.05, max_iter=8, random_state=0,
                            uncertainty=structure).fit(X, y)
    assert reg.uncertainty_ == structure
    mean, std = reg.predict(X_test, return_std=True)
    assert std.shape == mean.shape == ((7,) if K == 1 else (7, K))
    ref_std, sigma2, log_z = _reference(reg, X, y, X_test,
                                        last_layer=structure == "last_layer")
    np.testing.assert_allclose(std.reshape(-1, K), ref_std, rtol=1e-8)
    np.testing.assert_allclose(reg.noise_variance_, sigma2 * reg.target_scale_**2,
                               rtol=1e-8)
    np.testing.assert_allclose(reg.log_marginal_likelihood_, log_z, rtol=1e-9)
    np.testing.assert_array_equal(mean, reg.predict(X_test))


def test_exact_structures_agree_and_last_layer_is_smaller():
    """dual and primal are the same posterior; the last layer holds the
    hidden layer fixed, so its parameter variance is never larger."""
    X, y, X_test = _data(m=30)
    stds = {}
    for structure in STRUCTURES:
        reg = GGNScoreRegressor(n_hidden=6, tau=0.02, max_iter=10, random_state=1,
                                uncertainty=structure).fit(X, y)
        stds[structure] = reg.predict(X_test, return_std=True)[1]
        stds[structure + "_noise"] = reg.noise_variance_[0]
    np.testing.assert_allclose(stds["dual"], stds["primal"], rtol=1e-9)
    epistemic = {k: stds[k]**2 - stds[k + "_noise"] for k in STRUCTURES}
    assert np.all(epistemic["last_layer"] <= epistemic["dual"] * (1 + 1e-9))
    assert np.all(epistemic["dual"] > 0)


@pytest.mark.parametrize("structure", ["dual", "last_layer"])
def test_sample_weights_are_frequencies(structure):
    """Integer sample weights give the posterior of the repeated rows."""
    X, y, X_test = _data(m=20)
    w = np.arange(20) % 3  # zeros included
    rows = np.repeat(np.arange(20), w)
    params = dict(n_hidden=5, tau=0.05, max_iter=6, random_state=0,
                  uncertainty=structure, batch_size=None)
    weighted = GGNScoreRegressor(**params).fit(X, y, sample_weight=w)
    repeated = GGNScoreRegressor(**params).fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.predict(X_test, return_std=True)[1],
                               repeated.predict(X_test, return_std=True)[1],
                               rtol=1e-6)
    np.testing.assert_allclose(weighted.log_marginal_likelihood_,
                               repeated.log_marginal_likelihood_, rtol=1e-6)
    ref_std = _reference(weighted, X, y, X_test, sample_weight=w,
                         last_layer=structure == "last_layer")[0]
    np.testing.assert_allclose(weighted.predict(X_test, return_std=True)[1],
                               ref_std[:, 0], rtol=1e-8)


def test_std_grows_away_from_the_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (80, 1))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(80)
    reg = GGNScoreRegressor(n_hidden=30, random_state=0).fit(X, y)
    _, std = reg.predict(np.array([[0.0], [3.0], [6.0]]), return_std=True)
    assert std[0] < std[1] < std[2]
    assert std[2] > 2 * std[0]


def test_coverage_on_a_teacher_with_known_noise():
    """A teacher network plus Gaussian noise of known std: the central 95 %
    interval covers 90-98.5 % of new observations and σ̂ is near the noise."""
    noise = 0.1
    X, f, X_test, f_test = make_teacher_student(n_train=400, n_test=2000,
                                                random_state=0)
    rng = np.random.default_rng(1)
    y = f + noise * rng.standard_normal(f.shape)
    y_test = f_test + noise * rng.standard_normal(f_test.shape)
    reg = GGNScoreRegressor(n_hidden=100, random_state=0).fit(X, y)
    mean, std = reg.predict(X_test, return_std=True)
    inside = np.abs(y_test - mean) <= norm.ppf(0.975) * std
    assert 0.90 <= inside.mean() <= 0.985
    assert 0.8 * noise < np.sqrt(reg.noise_variance_[0]) < 1.25 * noise


def test_pipeline_forwards_return_std():
    X, y, X_test = _data(m=40)
    pipe = make_pipeline(StandardScaler(),
                         GGNScoreRegressor(n_hidden=8, max_iter=5, random_state=0))
    pipe.fit(X, y)
    mean, std = pipe.predict(X_test, return_std=True)
    direct = pipe[-1].predict(pipe[0].transform(X_test), return_std=True)
    np.testing.assert_array_equal(mean, direct[0])
    np.testing.assert_array_equal(std, direct[1])
    # TransformedTargetRegressor maps the prediction back through its
    # transformer, which a (mean, std) pair cannot pass (as BayesianRidge's)
    ttr = TransformedTargetRegressor(
        GGNScoreRegressor(n_hidden=8, max_iter=5, random_state=0),
        transformer=StandardScaler()).fit(X, y)
    assert ttr.predict(X_test).shape == (7,)


def test_float32_and_scale_equivariance():
    X, y, X_test = _data(m=30)
    params = dict(n_hidden=6, tau=0.05, max_iter=6, random_state=0)
    reg = GGNScoreRegressor(**params).fit(X, y)
    scaled = GGNScoreRegressor(**params).fit(X, 10.0 * y - 3.0)
    _, std = reg.predict(X_test, return_std=True)
    _, std_scaled = scaled.predict(X_test, return_std=True)
    np.testing.assert_allclose(std_scaled, 10.0 * std, rtol=1e-6)
    # the density of 10 y is that of y divided by 10, once per row
    np.testing.assert_allclose(scaled.log_marginal_likelihood_,
                               reg.log_marginal_likelihood_ - 30 * np.log(10.0),
                               rtol=1e-6)
    reg32 = GGNScoreRegressor(**params).fit(X.astype(np.float32), y)
    mean32, std32 = reg32.predict(X_test.astype(np.float32), return_std=True)
    assert std32.dtype == mean32.dtype == np.float32
    np.testing.assert_allclose(std32, std, rtol=1e-3)


@pytest.mark.parametrize("params, fit, match", [
    ({"uncertainty": None}, "fit", "uncertainty=None"),
    ({"loss": "poisson"}, "fit", "squared_error"),
    ({"tau": 0.0}, "fit", "tau=0"),
    ({}, "partial_fit", "partial_fit"),
])
def test_unavailable_std_says_why(params, fit, match):
    X, y, X_test = _data(m=20)
    y = np.abs(y)
    reg = GGNScoreRegressor(n_hidden=5, max_iter=3, random_state=0, **params)
    getattr(reg, fit)(X, y)
    assert reg.predict(X_test).shape == (7,)
    with pytest.raises(ValueError, match=match):
        reg.predict(X_test, return_std=True)
    assert reg.log_marginal_likelihood_ is None


def test_auto_structure_follows_the_cost_model():
    X, y, _ = _data(m=50)
    assert GGNScoreRegressor(n_hidden=5, max_iter=2).fit(X, y).uncertainty_ in (
        "dual", "primal")
    from sklearn_ggn import _laplace
    from sklearn_ggn._network import TwoLayerNetwork
    wide = TwoLayerNetwork(784, 500, 10, 1.0, "relu", True)
    # MNIST-sized: neither exact form's factor is kept (no p × p matrix)
    assert _laplace.choose_structure("auto", wide, 60000) == "last_layer"
    small = TwoLayerNetwork(10, 100, 1, 1.0, "silu", True)
    assert _laplace.choose_structure("auto", small, 400) == "dual"
    assert _laplace.choose_structure("auto", small, 5000) == "primal"
    # the memory check: nothing fits in one kibibyte
    assert _laplace.choose_structure("auto", small, 400,
                                     available_bytes=1024) == "last_layer"


def test_linearized_evidence_criterion_matches_dense_likelihood():
    """The "evidence" curve of the τ criterion is the profiled Gaussian
    negative log marginal likelihood per entry, up to its constant."""
    rng = np.random.default_rng(0)
    F = rng.standard_normal((12, 30))
    G = F @ F.T / 30
    z = rng.standard_normal(12)
    taus = np.array([1e-3, 1e-1, 10.0])
    curve = smoother_criteria(G, z, taus)["evidence"]
    for tau, value in zip(taus, curve, strict=True):
        C = np.eye(12) + G / tau
        c = z @ np.linalg.solve(C, z) / 12
        nll = 0.5 * (np.linalg.slogdet(2 * np.pi * c * C)[1]
                     + z @ np.linalg.solve(c * C, z))
        np.testing.assert_allclose(value, nll / 12 - 0.5 * np.log(2 * np.pi) - 0.5,
                                   rtol=1e-10)


def _classifier_reference(clf, X, y, X_test, last_layer=False):
    """(probit probabilities at X_test, log evidence, prior scale c) from
    the definitions: Λ_k = diag π_k − π_k π_kᵀ (π(1 − π) for one logit),
    P = N (Σ_k s_k J_kᵀ Λ_k J_k + c τ diag ḡ''(θ*)), c maximizing the
    evidence at θ*; on the inputs as the network sees them."""
    from scipy.optimize import minimize_scalar
    from scipy.special import expit, softmax

    X, X_test = clf._network_inputs(X), clf._network_inputs(X_test)
    dense, theta, _ = _dense(clf)
    n, K = dense.n, dense.K
    N = X.shape[0]
    codes = np.searchsorted(clf.classes_, y)
    logits = dense.forward(X)
    if K == 1:
        pi = expit(logits[:, 0])
        Lam = (pi * (1 - pi))[:, None, None]
        risk = -np.mean(np.where(codes == 1, np.log(pi), np.log(1 - pi)))
    else:
        pi = softmax(logits, axis=1)
        Lam = np.einsum("kc,cd->kcd", pi, np.eye(K)) - np.einsum("kc,kd->kcd",
                                                                  pi, pi)
        risk = -np.mean(np.log(pi[np.arange(N), codes]))
    J = dense.jacobian(X).reshape(N, K, -1)
    J_test = dense.jacobian(X_test)
    reg_obj = REGULARIZERS[clf.regularizer](np.sqrt(n))
    curvature = reg_obj.hessian(theta)
    tau = clf.tau_
    part = slice(theta.size - (n * K + K), None) if last_layer else slice(None)
    J, J_test, curv = J[:, :, part], J_test[:, part], curvature[part]
    data = np.einsum("kcp,kcd,kdq->pq", J, Lam, J) / N
    root = 1.0 / np.sqrt(tau * curv)
    lam = np.linalg.eigvalsh(root[:, None] * data * root[None, :])
    energy = N * tau * reg_obj.value(theta[part]).sum()

    def negative_evidence(log_c):
        c = np.exp(log_c)
        return c * energy + 0.5 * np.sum(np.log1p(np.clip(lam, 0, None) / c))

    c = np.exp(minimize_scalar(negative_evidence, bounds=(-15, 15),
                               method="bounded", options={"xatol": 1e-10}).x)
    precision = N * (data + c * tau * np.diag(curv))
    var = np.einsum("rp,pq,rq->r", J_test, np.linalg.inv(precision),
                    J_test).reshape(-1, K)
    shrunk = dense.forward(X_test) / np.sqrt(1 + np.pi * var / 8)
    if K == 1:
        proba = expit(np.column_stack([-shrunk[:, 0], shrunk[:, 0]]))
    else:
        proba = softmax(shrunk, axis=1)
    logdet = np.linalg.slogdet(data + tau * np.diag(curv))[1] - np.sum(
        np.log(tau * curv))
    log_z = -N * risk - N * tau * reg_obj.value(theta).sum() - 0.5 * logdet
    return proba, log_z, c


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_probit_matches_dense_reference(structure, n_classes):
    from sklearn_ggn import GGNScoreClassifier

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = np.digitize(X[:, 0] + 0.5 * rng.standard_normal(30),
                    np.quantile(X[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))
    X_test = 2.0 * rng.standard_normal((6, 3))
    clf = GGNScoreClassifier(n_hidden=5, tau=0.02, max_iter=8, random_state=0,
                             uncertainty=structure).fit(X, y)
    plain = clf.predict_proba(X_test)
    clf.set_params(predictive="probit")
    proba = clf.predict_proba(X_test)
    ref_proba, log_z, _ = _classifier_reference(clf, X, y, X_test,
                                                last_layer=structure == "last_layer")
    np.testing.assert_allclose(proba, ref_proba, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(clf.log_marginal_likelihood_, log_z, rtol=1e-8)
    # the probit shrinks the logits towards zero: never more confident
    assert np.all(proba.max(axis=1) <= plain.max(axis=1) + 1e-12)
    np.testing.assert_allclose(clf.predict_log_proba(X_test), np.log(proba))


def test_explicit_exact_form_that_does_not_fit_falls_back(monkeypatch):
    """The memory check of the step applies to the posterior: an exact form
    asked for but too large warns and keeps the last layer's."""
    monkeypatch.setenv("SKLEARN_GGN_AVAILABLE_MEMORY", "64M")
    X, y, X_test = _data(m=40)
    reg = GGNScoreRegressor(n_hidden=5, max_iter=3, random_state=0,
                            uncertainty="primal")
    from sklearn_ggn import _laplace
    from sklearn_ggn._network import TwoLayerNetwork
    with pytest.raises(MemoryError):
        _laplace.choose_structure("dual", TwoLayerNetwork(3, 5, 1, 1.0, "silu",
                                                          True), 10**6)
    monkeypatch.setattr(_laplace, "choose_structure",
                        lambda *args, **kwargs: (_ for _ in ()).throw(
                            MemoryError("too large")))
    reg.fit(X, y)  # the posterior is computed on first use, and warns then
    with pytest.warns(UserWarning, match="last layer only"):
        assert reg.uncertainty_ == "last_layer"
    assert reg.predict(X_test, return_std=True)[1].shape == (7,)


def test_sparse_inputs_take_the_last_layer_without_densifying():
    import scipy.sparse as sp

    X, y, X_test = _data(m=40)
    X[np.abs(X) < 0.7] = 0.0
    # (input_transform=None: sparse X is passed as given, its dense copy too)
    params = dict(n_hidden=6, tau=0.05, max_iter=4, random_state=0,
                  input_transform=None)
    sparse = GGNScoreRegressor(**params).fit(sp.csr_array(X), y)
    assert sparse.uncertainty_ == "last_layer"
    dense = GGNScoreRegressor(uncertainty="last_layer", **params).fit(X, y)
    np.testing.assert_allclose(
        sparse.predict(sp.csr_array(X_test), return_std=True)[1],
        dense.predict(X_test, return_std=True)[1], rtol=1e-6)


def test_the_posterior_is_computed_on_first_use_and_kept():
    """A fit computes no posterior; the first use (intervals, the evidence,
    pickling with store_posterior=True) computes the one of the fitted
    weights and releases the training rows; a second use reads the same
    numbers."""
    import pickle

    X, y, X_test = _data(m=40)
    reg = GGNScoreRegressor(n_hidden=6, max_iter=5, random_state=0).fit(X, y)
    cache = reg._posterior_cache
    assert cache["state"] is None and cache["inputs"] is not None
    before = dict(reg.__dict__)
    mean, std = reg.predict(X_test, return_std=True)
    assert cache["state"] is not None and cache["inputs"] is None
    # predicting changed none of the estimator's attributes (the cache is the
    # fit's own object, now holding the posterior)
    assert reg.__dict__ == before and reg._posterior_cache is cache
    evidence = reg.log_marginal_likelihood_
    np.testing.assert_array_equal(reg.predict(X_test, return_std=True)[1], std)
    # the same fit, its posterior first asked for by pickling
    other = GGNScoreRegressor(n_hidden=6, max_iter=5, random_state=0,
                              store_posterior=True).fit(X, y)
    loaded = pickle.loads(pickle.dumps(other))
    assert loaded._posterior_cache["inputs"] is None
    assert loaded.log_marginal_likelihood_ == evidence
    np.testing.assert_array_equal(loaded.predict(X_test, return_std=True)[1], std)
    # a refit replaces the posterior of the previous fit
    reg.set_params(tau=1.0).fit(X, y)
    assert reg._posterior_cache["state"] is None
    assert reg.log_marginal_likelihood_ != evidence


def test_the_posterior_is_the_fits_whatever_the_parameters_after_it():
    """Parameters set after a fit do not change its posterior (the
    structure, the prior's μ): it is the fitted model's, computed on first
    use with the parameters of the fit."""
    import copy

    X, y, X_test = _data(m=40)
    reg = GGNScoreRegressor(n_hidden=6, max_iter=5, random_state=0).fit(X, y)
    twin = copy.deepcopy(reg).set_params(uncertainty="last_layer", mu=0.01)
    assert twin.uncertainty_ == reg.uncertainty_ == "dual"
    assert twin.log_marginal_likelihood_ == reg.log_marginal_likelihood_
    np.testing.assert_array_equal(twin.predict(X_test, return_std=True)[1],
                                  reg.predict(X_test, return_std=True)[1])


def test_a_fit_without_a_posterior_keeps_no_rows():
    X, y, _ = _data(m=40)
    reg = GGNScoreRegressor(n_hidden=6, max_iter=5, uncertainty=None,
                            random_state=0).fit(X, y)
    assert reg._posterior_cache["inputs"] is None
    assert reg.uncertainty_ is None and reg.log_marginal_likelihood_ is None
    with pytest.raises(ValueError, match="uncertainty=None"):
        reg.predict(X, return_std=True)


def test_a_posterior_stored_by_an_earlier_version_loads():
    """A pickle of 0.9.1 held the computed posterior as
    ``_posterior_state`` (and ``_posterior_inputs=None``)."""
    X, y, X_test = _data(m=40)
    reg = GGNScoreRegressor(n_hidden=6, max_iter=5, random_state=0).fit(X, y)
    std = reg.predict(X_test, return_std=True)[1]
    state = reg.set_params(store_posterior=True).__getstate__()
    del state["store_posterior"]
    cache = state.pop("_posterior_cache")
    state.update(_posterior_state=cache["state"], _posterior_inputs=None)
    old = GGNScoreRegressor.__new__(GGNScoreRegressor)
    old.__setstate__(state)
    np.testing.assert_array_equal(old.predict(X_test, return_std=True)[1], std)


def test_copies_do_not_compute_the_posterior():
    """copy.copy and copy.deepcopy (used during fits, e.g. by a validation
    scorer) keep a posterior not yet computed as it is."""
    import copy

    X, y, X_test = _data(m=40)
    reg = GGNScoreRegressor(n_hidden=6, max_iter=5, random_state=0).fit(X, y)
    for twin in (copy.copy(reg), copy.deepcopy(reg)):
        assert twin._posterior_cache["state"] is None
        assert twin._posterior_cache["inputs"] is not None
        np.testing.assert_array_equal(twin.predict(X_test), reg.predict(X_test))
    assert reg._posterior_cache["state"] is None


@pytest.mark.parametrize("K", [1, 4])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_last_layer_gram_is_the_sum_over_explicit_rows(K, fit_intercept):
    """The output layer's Σ J̃ᵀJ̃ from its Kronecker form against the rows
    of the explicit Jacobian, J̃_k = A_kᵀ J_k."""
    from test_numerics import make_problem

    from sklearn_ggn import _laplace

    net, theta, _, X, _, _ = make_problem(K=K, b=23, d=4, n=6,
                                          fit_intercept=fit_intercept)
    Xa = net.augment(X)
    A = np.random.default_rng(5).standard_normal((23, K, K))
    J = _laplace.jacobian_rows(net, theta, Xa, "last_layer")
    Jt = np.einsum("kcr,kcp->krp", A, J).reshape(23 * K, -1)
    rho = net.forward(theta, Xa).rho
    np.testing.assert_allclose(_laplace._last_layer_gram(net, rho, A),
                               Jt.T @ Jt, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("K", [1, 4])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_posterior_gauss_newton_is_the_sum_over_explicit_rows(
        K, fit_intercept, sparse, monkeypatch):
    """The posterior's J̃ᵀJ̃ (syrk over blocks of explicit rows; one row per
    block here, so the blocks' boundaries count) against the plain product
    of the explicit Jacobian and against the step's Kronecker form."""
    import scipy.sparse as sps
    from test_numerics import make_problem

    from sklearn_ggn import _laplace

    net, theta, _, X, _, _ = make_problem(K=K, b=23, d=4, n=6,
                                          fit_intercept=fit_intercept)
    X[np.abs(X) < 0.5] = 0.0
    Xa = net.augment(sps.csr_matrix(X) if sparse else X)
    A = np.random.default_rng(5).standard_normal((23, K, K))
    J = _laplace.jacobian_rows(net, theta, net.augment(X))
    Jt = np.einsum("kcr,kcp->krp", A, J).reshape(23 * K, -1)
    monkeypatch.setattr(_laplace, "_BLOCK_BYTES", 1)
    ours = _laplace.gauss_newton_rows(net, theta, Xa, A)
    np.testing.assert_allclose(ours, Jt.T @ Jt, rtol=1e-12, atol=1e-12)
    assert np.array_equal(ours, ours.T)
    cache = net.forward(theta, net.augment(X))
    step = net.gauss_newton_matrix(theta, cache,
                                   net.sensitivities(theta, cache, A), A)
    np.testing.assert_allclose(ours, step, rtol=1e-12, atol=1e-12)


def test_a_fit_without_residual_degrees_of_freedom_warns():
    """One row: the fit interpolates it, σ̂² is its zero residual and every
    predictive std is ~1e-154; that says nothing of the noise, and says so."""
    X, y, X_test = _data(m=40)
    one = GGNScoreRegressor(n_hidden=6, random_state=0).fit(X[:1], y[:1])
    with pytest.warns(UserWarning, match="noise variance cannot be estimated"):
        one.predict(X_test, return_std=True)
    reg = GGNScoreRegressor(n_hidden=6, max_iter=5, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        reg.predict(X_test, return_std=True)


def test_the_noise_warning_survives_pickling():
    """The warning belongs to the use of the intervals: a pickled one-row
    fit warns when its stds are asked for (the posterior computed while
    pickling had swallowed it)."""
    import pickle

    X, y, X_test = _data(m=40)
    one = GGNScoreRegressor(n_hidden=6, random_state=0,
                            store_posterior=True).fit(X[:1], y[:1])
    loaded = pickle.loads(pickle.dumps(one))
    for est in (loaded, one):
        with pytest.warns(UserWarning, match="noise variance cannot be estimated"):
            est.predict(X_test, return_std=True)
    for attribute in ("noise_variance_", "log_marginal_likelihood_"):
        with pytest.warns(UserWarning, match="noise variance cannot be estimated"):
            getattr(one, attribute)


# ------------------------------------------------- noise="heteroscedastic"
def _hat_reference(reg, X, sample_weight):
    """The diagonal of the hat matrix ``J̃ B⁻¹ J̃ᵀ`` from the explicit
    Jacobian (rows k K + c)."""
    Z = reg._network_inputs(X)
    dense, theta, _ = _dense(reg)
    n, K = dense.n, dense.K
    w = np.asarray(sample_weight, float)
    row_s = np.repeat(w / w.sum() / K, K)
    J = dense.jacobian(Z)
    curvature = REGULARIZERS[reg.regularizer](np.sqrt(n)).hessian(theta)
    B = J.T @ (row_s[:, None] * J) + reg.tau_ * np.diag(curvature)
    J_tilde = np.sqrt(row_s)[:, None] * J
    return np.einsum("rp,pq,rq->r", J_tilde, np.linalg.inv(B),
                     J_tilde).reshape(-1, K)


@pytest.mark.parametrize("structure", ["dual", "primal"])
@pytest.mark.parametrize("K", [1, 2])
def test_leverages_are_the_hat_matrix_diagonal(structure, K):
    from sklearn_ggn import _laplace

    X, y, _ = _data(K=K)
    w = np.random.default_rng(1).uniform(0.5, 2.0, X.shape[0])
    reg = GGNScoreRegressor(n_hidden=5, tau=0.05, max_iter=8, random_state=0,
                            uncertainty=structure).fit(X, y, sample_weight=w)
    network = reg._fitted_network(X.shape[1], K)
    theta = network.pack(reg.hidden_weights_, reg.output_weights_,
                         reg.hidden_intercept_, reg.output_intercept_)
    h = _laplace.leverages(network, theta, reg._posterior()["_laplace"],
                           network.augment(reg._network_inputs(X)), w) * w[:, None]
    np.testing.assert_allclose(h, _hat_reference(reg, X, w), rtol=1e-8)
    # (their sum is the effective number of parameters of the evidence)
    np.testing.assert_allclose(h.sum(), reg._posterior()["_laplace"]["dof"],
                               rtol=1e-8)


def _heteroscedastic(n, seed):
    """y = sin(3 x0) + x1 + noise whose std grows 20-fold with |x2|."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, 3))
    sd = 0.05 + 0.95 * np.abs(X[:, 2])
    return X, np.sin(3 * X[:, 0]) + X[:, 1] + sd * rng.standard_normal(n), sd


def test_heteroscedastic_noise_follows_the_inputs():
    """Intervals whose width follows the noise: near 95 % coverage where the
    noise is small and where it is large (one constant variance over-covers
    the first and under-covers the second), a lower NLL, the same mean."""
    X, y, _ = _heteroscedastic(1000, 0)
    X_test, y_test, sd_test = _heteroscedastic(4000, 1)
    fits = {noise: GGNScoreRegressor(noise=noise, random_state=0).fit(X, y)
            for noise in ("homoscedastic", "heteroscedastic")}
    low, high = sd_test < 0.3, sd_test > 0.7
    results = {}
    for noise, reg in fits.items():
        mean, std = reg.predict(X_test, return_std=True)
        z = np.abs(y_test - mean) / std
        nll = np.mean(0.5 * np.log(2 * np.pi * std**2) + 0.5 * z**2)
        results[noise] = (mean, nll, np.mean(z[low] <= 1.96),
                          np.mean(z[high] <= 1.96))
    np.testing.assert_array_equal(results["homoscedastic"][0],
                                  results["heteroscedastic"][0])
    _, nll_homo, low_homo, high_homo = results["homoscedastic"]
    _, nll_het, low_het, high_het = results["heteroscedastic"]
    assert low_homo > 0.99 and high_homo < 0.9  # the constant variance
    assert low_het > 0.9 and 0.92 < high_het < 0.99
    # (0.17-0.22 lower over random_state 0-4)
    assert nll_het < nll_homo - 0.1
    models = fits["heteroscedastic"].noise_model_
    assert len(models) == 2 and all(isinstance(m, GGNScoreRegressor)
                                    and m.loss == "poisson" for m in models)
    reg = fits["heteroscedastic"]
    noise_sd = np.sqrt(np.mean([m.predict(reg._network_inputs(X_test))
                                for m in models], axis=0)).ravel()
    # (0.84-0.96 over random_state 0-4)
    assert np.corrcoef(noise_sd, sd_test)[0, 1] > 0.75
    assert fits["homoscedastic"].noise_model_ is None


def test_heteroscedastic_noise_survives_pickling():
    import pickle

    X, y, _ = _heteroscedastic(300, 0)
    reg = GGNScoreRegressor(noise="heteroscedastic", n_hidden=20,
                            random_state=0, store_posterior=True).fit(X, y)
    restored = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(restored.predict(X[:10], return_std=True)[1],
                                  reg.predict(X[:10], return_std=True)[1])


def test_heteroscedastic_noise_needs_a_posterior():
    X, y, _ = _heteroscedastic(200, 0)
    reg = GGNScoreRegressor(noise="heteroscedastic", loss="huber", max_iter=5,
                            random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="No predictive uncertainty"):
        reg.predict(X, return_std=True)
    assert reg.noise_model_ is None


def test_heteroscedastic_integer_weights_are_repeated_rows():
    """A row of weight 3 is the row three times: the same mean, the same
    corrected squares per unit of weight (the leverage correction is per
    unit of weight) and the same noise network fitted to them. (The folds
    of the noise networks are drawn over rows, so that the two fits'
    folds differ.)"""
    from sklearn_ggn import _noise

    X, y, _ = _heteroscedastic(200, 0)
    w = np.ones(200)
    w[:40] = 3.0
    repeated = np.r_[np.arange(200), np.arange(40), np.arange(40)]
    params = dict(noise="heteroscedastic", n_hidden=20, random_state=0,
                  input_transform=None)
    weighted = GGNScoreRegressor(**params).fit(X, y, sample_weight=w)
    copies = GGNScoreRegressor(**params).fit(X[repeated], y[repeated])
    X_test, _, _ = _heteroscedastic(50, 1)
    np.testing.assert_allclose(weighted.predict(X_test), copies.predict(X_test),
                               rtol=1e-8, atol=1e-10)
    squares = []
    for reg, rows, weights in ((weighted, slice(None), w),
                               (copies, repeated, np.ones(280))):
        network = reg._fitted_network(3, 1)
        theta = reg._fitted_theta(network, np.float64)
        Y = ((y[rows] - reg.target_mean_) / reg.target_scale_)[:, None]
        squares.append(_noise.corrected_squares(
            network, theta, reg._posterior()["_laplace"], X[rows], Y, weights))
    np.testing.assert_allclose(squares[0][repeated], squares[1], rtol=1e-6)
    nets = [_noise.noise_network(weighted, X, squares[0], w, 0),
            _noise.noise_network(weighted, X[repeated], squares[1],
                                 np.ones(280), 0)]
    np.testing.assert_allclose(nets[0].predict(X_test), nets[1].predict(X_test),
                               rtol=1e-6)


def test_heteroscedastic_noise_is_fixed_by_the_fit_not_by_its_first_use():
    """The noise model's random draws are fixed at fit time: drawing from the
    caller's generator between fit and the first return_std changes
    nothing, and neither return_std nor pickling draws from it (nor from
    NumPy's global one with random_state=None)."""
    import pickle

    X, y, _ = _heteroscedastic(200, 0)
    stds = []
    for consume in (False, True):
        rng = np.random.RandomState(0)
        reg = GGNScoreRegressor(noise="heteroscedastic", n_hidden=20,
                                random_state=rng).fit(X, y)
        if consume:
            rng.uniform(size=10)
        state = rng.get_state()[1].copy()
        stds.append(reg.predict(X[:20], return_std=True)[1])
        pickle.dumps(reg)
        np.testing.assert_array_equal(rng.get_state()[1], state)
    np.testing.assert_array_equal(stds[0], stds[1])
    np.random.seed(0)
    reg = GGNScoreRegressor(noise="heteroscedastic", n_hidden=20).fit(X, y)
    before = np.random.get_state()[1].copy()
    reg.predict(X[:5], return_std=True)
    np.testing.assert_array_equal(np.random.get_state()[1], before)


def test_heteroscedastic_noise_has_a_variance_per_output():
    """Two outputs whose noise differs relative to their spread (sd 0.1
    and 30 around the same signal, times 1 and 100): one shared
    standardized variance over-covers the first and under-covers the
    second; the noise model's outputs cover both."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, (1500, 3))
    f = np.sin(3 * X[:, 0]) + X[:, 1]
    Y = np.c_[f + 0.1 * rng.standard_normal(1500),
              100 * (f + 0.3 * rng.standard_normal(1500))]
    coverage = {}
    for noise in ("homoscedastic", "heteroscedastic"):
        reg = GGNScoreRegressor(noise=noise, random_state=0).fit(X[:1000], Y[:1000])
        mean, std = reg.predict(X[1000:], return_std=True)
        coverage[noise] = np.mean(np.abs(Y[1000:] - mean) <= 1.96 * std, axis=0)
    assert coverage["homoscedastic"][0] > 0.99 and coverage["homoscedastic"][1] < 0.9
    assert np.all((coverage["heteroscedastic"] > 0.91)
                  & (coverage["heteroscedastic"] < 0.98))


# ------------------------------------------------------------- noise="auto"
def test_held_out_scores_are_the_gaussian_likelihood_of_the_residuals():
    """``noise_scores_`` against a slow reference: each training residual
    r_k is N(0, v (1 − h_k)) under a candidate variance v (h_k from the
    explicit Jacobian's hat matrix); its log density by scipy, with v the
    other fold's mean corrected square or its noise network's prediction,
    averaged over the rows, differs from the score by one term in h
    shared by both candidates."""
    from sklearn_ggn import _noise

    X, y, _ = _heteroscedastic(300, 0)
    w = np.random.default_rng(2).uniform(0.5, 2.0, 300)
    reg = GGNScoreRegressor(n_hidden=10, max_iter=10, random_state=0,
                            input_transform=None).fit(X, y, sample_weight=w)
    assert reg.noise_ == "heteroscedastic"
    scores, models = reg.noise_scores_, reg.noise_model_
    h = _hat_reference(reg, X, w)[:, 0] / w  # (per unit of weight)
    r = (y - reg.predict(X)) / reg.target_scale_[0]
    seed = int(reg._posterior_seed) % (2**31 - _noise.FOLDS)
    folds = np.random.RandomState(seed).permutation(300) % 2
    squares = r**2 / (1 - h)
    reference = {}
    for noise in ("homoscedastic", "heteroscedastic"):
        total = 0.0
        for f in (0, 1):
            test, train = folds == f, folds != f
            v = (np.full(test.sum(), np.sum(w[train] * squares[train])
                         / np.sum(w[train])) if noise == "homoscedastic"
                 else models[f].predict(X[test]).ravel())
            total += np.sum(w[test] * norm.logpdf(r[test], 0.0,
                                                   np.sqrt(v * (1 - h[test]))))
        reference[noise] = total / w.sum()
    for f in (0, 1):  # (each fold's network is fitted to the other fold)
        train = folds != f
        fresh = _noise.noise_network(reg, X[train], squares[train, None],
                                     w[train], seed + f)
        np.testing.assert_allclose(fresh.predict(X), models[f].predict(X),
                                   rtol=1e-6)
    shared = -0.5 * np.sum(w * np.log(1 - h)) / w.sum()
    for noise in reference:
        np.testing.assert_allclose(scores[noise], reference[noise] - shared,
                                   rtol=1e-8)


@pytest.mark.parametrize("varying", [True, False])
def test_auto_noise_takes_the_noise_of_the_data(varying):
    """``noise="auto"`` (the default) gives the intervals of
    ``"heteroscedastic"`` where the noise's standard deviation grows
    20-fold with |x2|, and those of ``"homoscedastic"`` where it is one
    value; it says which, and why."""
    X, y, sd = _heteroscedastic(1000, 0)
    if not varying:  # the same signal, a constant noise
        y = np.sin(3 * X[:, 0]) + X[:, 1] + 0.3 * np.random.default_rng(
            1).standard_normal(1000)
    expected = "heteroscedastic" if varying else "homoscedastic"
    auto = GGNScoreRegressor(random_state=0).fit(X, y)
    fixed = GGNScoreRegressor(random_state=0, noise=expected).fit(X, y)
    assert auto.noise == "auto" and auto.noise_ == expected
    np.testing.assert_array_equal(auto.predict(X[:50], return_std=True)[1],
                                  fixed.predict(X[:50], return_std=True)[1])
    scores = auto.noise_scores_
    assert max(scores, key=scores.get) == expected
    assert fixed.noise_ == expected
    assert (fixed.noise_scores_ is None) == (expected == "homoscedastic")
    assert (auto.noise_model_ is None) == (expected == "homoscedastic")


def test_auto_noise_without_rows_to_hold_out_is_one_variance():
    X, y, _ = _heteroscedastic(40, 0)
    w = np.zeros(40)
    w[0] = 1.0
    reg = GGNScoreRegressor(n_hidden=5, max_iter=5, random_state=0,
                            tau=0.1).fit(X, y, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        reg.predict(X[:3], return_std=True)
    assert reg.noise_ == "homoscedastic" and reg.noise_scores_ is None


def test_noise_networks_take_a_bounded_subsample_of_the_rows(monkeypatch):
    """Beyond ``MAX_ROWS`` training rows the leverages and the noise
    networks are computed on a random subsample of that many rows (two
    folds of half of them); below it on all rows."""
    from sklearn_ggn import _noise

    X, y, _ = _heteroscedastic(300, 0)
    seen = []
    fit = _noise.noise_network

    def recording(estimator, X, squares, sample_weight, seed):
        seen.append(X.shape[0])
        return fit(estimator, X, squares, sample_weight, seed)

    monkeypatch.setattr(_noise, "noise_network", recording)
    for cap, rows in ((1000, 300), (200, 200)):
        monkeypatch.setattr(_noise, "MAX_ROWS", cap)
        seen.clear()
        reg = GGNScoreRegressor(n_hidden=10, max_iter=5, random_state=0,
                                noise="heteroscedastic").fit(X, y)
        reg.predict(X[:2], return_std=True)
        assert sorted(seen) == [rows // 2, rows // 2]
