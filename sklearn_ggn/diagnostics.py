"""Diagnostics the paper reports: sparsity of θ and stability of activations.

* :func:`n_zeros` — the paper's "number of zeros", ``p − cardcal(θ, 0.999)``
  where :func:`cardcal` is the smallest number of entries of θ that hold
  99.9 % of ‖θ‖₁.
* :func:`time_invariance` — the T-I measure of Chizat et al.: the percentage
  of hidden pre-activations ``a_ki`` on given inputs whose sign at the end of
  training equals their sign at initialization, optionally counting entries
  that end exactly at zero as unchanged (the paper's appendix convention).
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import BaseGGNScore

__all__ = ["cardcal", "n_zeros", "parameter_vector", "time_invariance"]


def parameter_vector(estimator):
    """All trainable parameters of a fitted estimator as one flat vector.

    Parameters
    ----------
    estimator : GGNScoreRegressor or GGNScoreClassifier
        A fitted estimator.

    Returns
    -------
    theta : ndarray of shape (p,)
        ``[U.ravel(), b_h, V.ravel(), b_o]`` (intercepts only with
        ``fit_intercept=True``).
    """
    check_is_fitted(estimator, ["hidden_weights_", "output_weights_"])
    network = estimator._fitted_network(estimator.hidden_weights_.shape[1],
                                        estimator.output_weights_.shape[1])
    # (the fitted network's weights, layer by layer)
    return np.concatenate([np.ravel(getattr(estimator, name + "_"))
                           for name in network.weight_shapes()])


def _as_vector(theta):
    if isinstance(theta, BaseGGNScore):
        return parameter_vector(theta)
    theta = np.asarray(theta, dtype=float).ravel()
    if theta.size == 0 or not np.all(np.isfinite(theta)):
        raise ValueError("theta must be a non-empty vector of finite numbers.")
    return theta


def cardcal(theta, ratio=0.999):
    """Smallest k such that the k largest ``|θ_i|`` hold ``ratio`` of ‖θ‖₁.

    Parameters
    ----------
    theta : array-like or fitted estimator
        Parameter vector (or an estimator, see :func:`parameter_vector`).
    ratio : float, default=0.999
        Fraction of the ℓ1 norm to cover, in (0, 1].

    Returns
    -------
    k : int
        The effective number of non-zero parameters (``0`` for θ = 0).

    Examples
    --------
    >>> from sklearn_ggn.diagnostics import cardcal
    >>> cardcal([3.0, -1.0, 0.0, 1e-6], ratio=0.7)
    1
    """
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio must be in (0, 1], got {ratio!r}.")
    magnitudes = np.sort(np.abs(_as_vector(theta)))[::-1]
    if ratio == 1:  # exactly: every non-zero (a running sum may not see tiny ones)
        return int(np.count_nonzero(magnitudes))
    cumulative = np.cumsum(magnitudes)
    total = cumulative[-1]  # ‖θ‖₁ summed the same way, so ratio = 1 is exact
    if total == 0:
        return 0
    # first k whose running sum reaches ratio · ‖θ‖₁
    return int(np.searchsorted(cumulative, ratio * total, side="left")) + 1


def n_zeros(theta, ratio=0.999):
    """The paper's sparsity measure: ``p − cardcal(θ, ratio)``.

    Parameters
    ----------
    theta : array-like or fitted estimator
        Parameter vector (or an estimator, see :func:`parameter_vector`).
    ratio : float, default=0.999
        Fraction of ‖θ‖₁ that the non-zeros must hold.

    Returns
    -------
    zeros : int
        Number of parameters outside the smallest set holding ``ratio`` of
        the ℓ1 norm.

    Examples
    --------
    >>> from sklearn_ggn.diagnostics import n_zeros
    >>> n_zeros([3.0, -1.0, 0.0, 1e-6])
    2
    """
    vector = _as_vector(theta)
    return int(vector.size - cardcal(vector, ratio))


def _pre_activations(estimator, X, weights):
    pre = X @ np.asarray(weights["hidden_weights"]).T
    if estimator.fit_intercept:
        pre += weights["hidden_intercept"]
    return pre


def time_invariance(estimator, X, zero_as_unchanged=False):
    """T-I measure: percent of pre-activations whose sign did not change.

    Compares ``a_ki = u_i·x_k + b_h,i`` under the initial and the final
    weights, on inputs ``X`` (the paper uses the training inputs).

    Parameters
    ----------
    estimator : GGNScoreRegressor or GGNScoreClassifier
        Fitted with ``store_initial_weights=True``.
    X : array-like of shape (n_samples, n_features)
        Inputs (as seen by the estimator, i.e. after any preprocessing).
    zero_as_unchanged : bool, default=False
        Count an entry whose final value is exactly 0 as unchanged (the
        convention the paper's appendix describes, "a = 0 counts as
        unchanged"). The authors' code computes its "incl. a = 0" column
        differently, adding the growth of the number of zeros of U (by
        :func:`cardcal`) as a share of all entries; this function follows
        the paper's text.

    Returns
    -------
    percent : float
        Percentage in [0, 100].

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ggn import GGNScoreRegressor
    >>> from sklearn_ggn.diagnostics import time_invariance
    >>> X = np.random.default_rng(0).standard_normal((50, 3))
    >>> reg = GGNScoreRegressor(n_hidden=20, max_iter=5, tol=1.0, n_iter_no_change=1,
    ...                         store_initial_weights=True).fit(X, X[:, 0])
    >>> 0 <= time_invariance(reg, X) <= 100
    True
    """
    check_is_fitted(estimator, ["hidden_weights_", "output_weights_"])
    if not hasattr(estimator, "initial_weights_"):
        raise ValueError(
            "time_invariance needs the initial weights: fit the estimator with "
            "store_initial_weights=True."
        )
    X = validate_data(estimator, X, reset=False, dtype=[np.float64, np.float32])
    X = estimator._network_inputs(X)  # (as the network sees them)
    final = {"hidden_weights": estimator.hidden_weights_}
    if estimator.fit_intercept:
        final["hidden_intercept"] = estimator.hidden_intercept_
    start = _pre_activations(estimator, X, estimator.initial_weights_)
    end = _pre_activations(estimator, X, final)
    unchanged = np.sign(start) == np.sign(end)
    if zero_as_unchanged:
        unchanged |= end == 0
    return 100.0 * float(np.mean(unchanged))
