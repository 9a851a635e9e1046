"""The regressor's noise model: a network of the noise variance ν(x) fitted
to the training rows' squared residuals corrected for their leverage, and
the held-out likelihood by which ``noise="auto"`` chooses between it and
one variance.

The linearized fit is a linear smoother of the targets with hat matrix
``S = J̃ B⁻¹ J̃ᵀ``; the leverage of one unit of weight of row k (output c)
is ``h_kc = [J_k B⁻¹ J_kᵀ]_cc / (N K)`` (``_laplace.leverages``), and
``E[r_kc²] ≈ ν(x_k) (1 − h_kc)`` (exact for a projection; ``ν (1 − 2 h +
(S²)_kk) ≤ ν (1 − h)`` for this regularized smoother, so the estimate is a
little low): the plain squares would make the noise small where the
network fits its rows closely. The corrected squares ``s_kc = r_kc² / (1 −
h_kc)`` are the targets of the noise model, and the Gaussian likelihood of
a residual, ``r ~ N(0, v (1 − h))``, is in them ``−½ (log 2πv + s / v)``
up to a term in ``h`` that every candidate variance v shares.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from . import _laplace, _plan

# leverages above this count as this (a row the linearized fit interpolates
# would make its corrected square infinite)
MAX_LEVERAGE = 0.99
# the noise networks: one per fold of the rows, fitted to the others
FOLDS = 2
# ... in at most this many iterations (epochs with mini-batches)
MAX_ITER = 10
# ... on at most this many training rows (a random subsample of more)
MAX_ROWS = 16384
NOISES = ("homoscedastic", "heteroscedastic")


def corrected_squares(network, theta, posterior, X, Y, sample_weight):
    """``r² / (1 − h)`` per training row and output (b, K), in the units
    the network is trained in (see the module's docstring)."""
    Xa = network.augment(X.astype(np.float64, copy=False))
    # (per unit of weight: an integer weight is that many rows, each with
    # its share of the row's leverage)
    leverage = _laplace.leverages(network, theta, posterior, Xa, sample_weight)
    outputs = network.forward(theta, Xa, with_deriv=False).outputs
    return (np.asarray(Y, dtype=np.float64) - outputs) ** 2 / (
        1.0 - np.minimum(leverage, MAX_LEVERAGE))


def noise_network(estimator, X, squares, sample_weight, seed):
    """A network of ν(x): ``estimator``'s parameters with the half Poisson
    deviance (a log-link model of the mean square) and at most
    :data:`MAX_ITER` iterations (epochs with mini-batches), fitted to
    ``squares`` on the network's inputs ``X`` (no input map of its own),
    its targets standardized, τ the full-batch rule ``min(0.01, 10 / N)``
    whatever its batches (a squared residual is a noisy target: its
    standard deviation is √2 times its mean for Gaussian noise)."""
    params = estimator.get_params(deep=False)
    tau = _plan.rule_tau(float(np.sum(sample_weight, dtype=np.float64)))
    params.update(loss="poisson", noise="homoscedastic", uncertainty=None,
                  input_transform=None, standardize_target=True,
                  warm_start=False, verbose=False, tau=tau, random_state=seed,
                  max_iter=min(MAX_ITER, estimator.max_iter))
    model = type(estimator)(**params)
    with warnings.catch_warnings():
        # (a constant noise is a model that "did not learn", and a network
        # stopped at MAX_ITER one that "did not converge"; the fit of the
        # mean has already said what it had to)
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, squares, sample_weight=sample_weight)
    return model


def noise_variance(models, X, n_outputs):
    """ν(x) (n, K): the mean of the noise networks' variances at the
    network's inputs ``X`` (``models`` a list of networks, or one)."""
    if not isinstance(models, list):
        models = [models]
    return np.mean([m.predict(X).reshape(-1, n_outputs) for m in models], axis=0)


def _log_likelihood(squares, variance, sample_weight):
    """``Σ_k w_k Σ_c −½ (log 2π v_kc + s_kc / v_kc)``."""
    terms = np.log(2.0 * np.pi * variance) + squares / variance
    return -0.5 * float(np.sum(sample_weight[:, None] * terms))


def cross_fit(estimator, X, squares, sample_weight, folds, seed):
    """``(scores, models)``: the noise networks of the folds of the rows
    (``folds``, each row's fold), each fitted to the other folds' squares,
    and the mean held-out log-likelihood per row and output of the
    corrected residuals under each noise, ``{"homoscedastic": ...,
    "heteroscedastic": ...}``: each fold's squares scored by the variance
    fitted to the other folds, one value shared by all outputs (their
    weighted mean square, as σ̂² is shared) or the fold's network."""
    K = squares.shape[1]
    totals = dict.fromkeys(NOISES, 0.0)
    models = []
    tiny = np.finfo(np.float64).tiny
    for fold in range(FOLDS):
        train, test = np.flatnonzero(folds != fold), np.flatnonzero(folds == fold)
        w_train, w_test = sample_weight[train], sample_weight[test]
        sigma2 = np.sum(w_train[:, None] * squares[train]) / (np.sum(w_train) * K)
        models.append(noise_network(estimator, X[train], squares[train], w_train,
                                    seed + fold))
        nu = noise_variance(models[-1:], X[test], K)
        totals["homoscedastic"] += _log_likelihood(
            squares[test], np.full_like(nu, max(sigma2, tiny)), w_test)
        totals["heteroscedastic"] += _log_likelihood(
            squares[test], np.maximum(nu, tiny), w_test)
    entries = float(np.sum(sample_weight, dtype=np.float64)) * K
    return {noise: total / entries for noise, total in totals.items()}, models


def noise_attributes(estimator, network, X, Y, sample_weight, theta, posterior):
    """``{"_noise_model", "noise_", "noise_scores_"}`` of the posterior:
    for ``noise="homoscedastic"`` one variance; otherwise the fold networks
    and their scores (:func:`cross_fit`) on the training rows (at most
    :data:`MAX_ROWS` of them, drawn at random), and the noise ``"auto"``
    takes is the one of the higher held-out likelihood (the networks are
    kept when it is ``"heteroscedastic"``)."""
    if estimator.noise == "homoscedastic":
        return {"_noise_model": None, "noise_": "homoscedastic",
                "noise_scores_": None}
    seed = estimator.__dict__.get("_posterior_seed")
    seed = 0 if seed is None else int(seed) % (2**31 - FOLDS)
    if X.shape[0] > MAX_ROWS:  # (a random subsample of the rows)
        keep = np.sort(np.random.RandomState(seed).choice(X.shape[0], MAX_ROWS,
                                                          replace=False))
        X, Y, sample_weight = X[keep], Y[keep], sample_weight[keep]
    squares = corrected_squares(network, theta, posterior, X, Y, sample_weight)
    folds = np.random.RandomState(seed).permutation(X.shape[0]) % FOLDS
    if np.unique(folds[sample_weight > 0]).size < FOLDS:
        # (too few rows to hold any out: one variance, or one network)
        models = ([noise_network(estimator, X, squares, sample_weight, seed)]
                  if estimator.noise == "heteroscedastic" else None)
        return {"_noise_model": models, "noise_": estimator.noise.replace(
            "auto", "homoscedastic"), "noise_scores_": None}
    scores, models = cross_fit(estimator, X, squares, sample_weight, folds, seed)
    noise = (max(NOISES, key=scores.__getitem__) if estimator.noise == "auto"
             else estimator.noise)
    return {"_noise_model": models if noise == "heteroscedastic" else None,
            "noise_": noise, "noise_scores_": scores}
