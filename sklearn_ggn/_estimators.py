"""The public estimators: thin subclasses of :class:`BaseGGNScore`."""

import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import ClassifierMixin, RegressorMixin, _fit_context
from sklearn.metrics import accuracy_score, r2_score
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import (
    check_classification_targets,
    is_multilabel,
    unique_labels,
)
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._base import BaseGGNScore, _Number
from ._docstrings import fill_doc, with_docs
from ._labels import check_labels_known, class_sample_weight
from ._losses import (
    HuberLoss,
    LogLoss,
    MultilabelLogLoss,
    PoissonLoss,
    SquaredError,
    robust_target_statistics,
)
from ._persistence import _plain

# Sparse X: CSR and CSC as given, other SciPy formats converted to CSR; the
# network keeps a CSR copy and X enters only its first layer (see _network).
_ACCEPT_SPARSE = ("csr", "csc")


class GGNScoreRegressor(RegressorMixin, BaseGGNScore):
    __doc__ = with_docs("""Two-layer network regressor trained by GGN-SCORE.

    A scaled one-hidden-layer network fitted with the generalized Gauss-Newton
    method regularized by a self-concordant smoothing of the ℓ1 norm, with the
    squared-error loss ``½ (1/K) ‖Φ(x) − y‖²``, the Huber loss or the Poisson
    deviance of a log-link model.
%(objective)s
    Parameters
    ----------
    loss : {"squared_error", "poisson", "huber"}, default="squared_error"
        Training loss: the squared error ``½ (1/K) ‖Φ(x) − y‖²``; the half
        Poisson deviance with the log link (``predict`` returns ``exp(Φ)``;
        targets non-negative); or Huber's loss of the residual, quadratic
        within ``epsilon`` and linear beyond, so that outlying targets pull
        with a bounded force.
%(parameters)s
    standardize_target : bool, default=True
        Train on standardized targets and map the predictions back, so that
        ``tau``, ``mu`` and the initial weights mean the same for every
        ``y``: each output centered by its (weighted) mean and divided by its
        standard deviation; with ``loss="huber"`` by its median and 1.4826 ×
        its median absolute deviation, which outlying targets do not inflate;
        with ``loss="poisson"`` only divided by its mean.
        The statistics (``target_mean_``, ``target_scale_``) come from
        ``fit`` or the first ``partial_fit`` and are kept by later
        ``partial_fit`` calls and warm starts. False: ``y`` as given (the
        paper's setting). See :ref:`default-standardize-target`.

    epsilon : float, default=1.35
        The threshold of ``loss="huber"``, in the units the network is
        trained in (robust standard deviations of ``y``, 1.4826 × its median
        absolute deviation, with ``standardize_target=True``): residuals
        beyond it cost linearly, whatever the outliers. A smaller value is
        more robust, less efficient on clean data.

    uncertainty : {"auto", "dual", "primal", "last_layer"} or None, \
            default="auto"
        The structure of the linearized Laplace posterior at the fitted
        weights, computed on first use for ``predict(X, return_std=True)``
        and ``log_marginal_likelihood_`` (``loss="squared_error"``):
        ``"dual"`` (exact, kernel form; the posterior contains the
        training inputs as the network sees them), ``"primal"`` (exact,
        p × p), ``"last_layer"`` (the output layer only, the hidden layer
        held fixed), ``"auto"`` (the exact form of fewer flops while
        ``m·K ≤ 2048`` or ``p ≤ 3000`` and its memory fits, else
        ``"last_layer"``, which is also the choice for sparse X), or None
        (none). The one used is ``uncertainty_``. Until its first use the
        fitted estimator holds the training rows in memory. A model file
        holds neither the rows nor the posterior by default; with
        ``store_posterior=True`` it holds the posterior, and a ``"dual"``
        one brings the mapped training inputs with it (``"primal"`` and
        ``"last_layer"`` hold nothing of the training rows). See
        :ref:`model-files` and :ref:`default-uncertainty`.

    noise : {"auto", "homoscedastic", "heteroscedastic"}, default="auto"
        The noise of the predictive distribution (``return_std``), chosen
        when the posterior is built (on first use); the fit of the mean is
        the same for all three. ``"homoscedastic"``: one variance per
        output, ``noise_variance_``. ``"heteroscedastic"``: a variance ν(x)
        that depends on x, the mean of two networks (``noise_model_``:
        this one's parameters but ``loss="poisson"``, a log-link model of
        the mean square, at most 10 iterations (epochs with mini-batches),
        τ = ``min(0.01, 10/n)``, no input map as they take the network's
        inputs), each fitted to one random half of the training rows'
        squared residuals corrected for their leverage ``h_k`` in the
        linearized fit, ``r_k² / (1 − h_k)``; ν(x) replaces σ̂² in the
        predictive variance, ``ν(x) (1 + J(x) B⁻¹ J(x)ᵀ / (N K))``.
        ``"auto"``: each half's corrected squares are scored by the
        Gaussian likelihood of the variance fitted to the other half, one
        value or the network, and the noise of the higher held-out
        likelihood is taken (``noise_``, with the scores in
        ``noise_scores_``). The networks want hundreds of rows (on tens
        they can collapse locally, giving intervals far too narrow, which
        their held-out likelihood shows). See :ref:`noise that depends on
        x <uncertainty-heteroscedastic>`.
%(store_posterior)s
    Attributes
    ----------
    noise_variance_ : ndarray of shape (`n_outputs_`,) or None
        The noise variance σ̂² of each output in the units of ``y²``:
        the weighted residual sum of squares of the training rows divided
        by ``N K − γ``, γ the effective number of parameters of the
        linearized fit (see the user guide); None when ``uncertainty_`` is
        None. With several outputs σ̂² is one value shared by all of them in
        the units the network is trained in (the standardized targets), so
        each output's is that value times its ``target_scale_²``: outputs
        whose noise differs relative to their spread get intervals too wide
        for one and too narrow for another. ``noise="heteroscedastic"``
        fits a noise variance per output (and per x); so does one regressor
        per output (``MultiOutputRegressor``).

    noise_ : {"homoscedastic", "heteroscedastic"} or None
        The noise of the predictive distribution: the one ``noise`` names,
        or the one ``noise="auto"`` chose; None without a posterior.
        Computed with the posterior on first use.

    noise_scores_ : dict or None
        Why ``noise="auto"`` chose ``noise_``: the mean held-out Gaussian
        log-likelihood per row and output of the corrected training
        residuals (standardized units) under ``"homoscedastic"`` and
        ``"heteroscedastic"``; the higher one is chosen. None with
        ``noise="homoscedastic"``, without a posterior, or with too few
        rows to hold any out.

    noise_model_ : list of GGNScoreRegressor or None
        The networks of the noise variance when ``noise_`` is
        ``"heteroscedastic"`` (``loss="poisson"`` on the network's inputs,
        in the standardized units of the targets, one per half of the
        training rows; ν(x) is the mean of their predictions); None
        otherwise or without a posterior.

    target_mean_ : ndarray of shape (`n_outputs_`,)
        What is subtracted from each output before training and added back
        to the predictions (the median with ``loss="huber"``; zeros with
        ``standardize_target=False`` or ``loss="poisson"``).

    target_scale_ : ndarray of shape (`n_outputs_`,)
        What each centered output is divided by before training and the
        predictions multiplied by (ones with ``standardize_target=False``).
%(attributes)s
    See Also
    --------
    GGNScoreClassifier : The classifier counterpart.
    sklearn.neural_network.MLPRegressor : First-order training of an MLP.
%(references)s
    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_ggn import GGNScoreRegressor
    >>> X, y = make_regression(n_samples=200, n_features=5, noise=1.0,
    ...                        random_state=0)
    >>> reg = GGNScoreRegressor(n_hidden=50, random_state=0).fit(X, y / 100)
    >>> reg.predict(X[:2]).shape
    (2,)
    """)

    _parameter_constraints = {
        **BaseGGNScore._parameter_constraints,
        "loss": [StrOptions({"squared_error", "poisson", "huber"})],
        "standardize_target": ["boolean"],
        "epsilon": [_Number(Real, 0, None, closed="neither")],
        "uncertainty": [StrOptions({"auto", "dual", "primal", "last_layer"}),
                        None],
        "noise": [StrOptions({"auto", "homoscedastic", "heteroscedastic"})],
        "store_posterior": ["boolean"],
    }

    def __init__(self, loss="squared_error", n_hidden=100, activation="silu",
                 scaling="ntk", fit_intercept=True, regularizer="pseudo_huber",
                 mu="auto", tau="auto", step_size=0.95, damping="adaptive",
                 line_search="auto", linear_solver="auto", solver="ggn",
                 learning_rate=1.0, batch_size="auto", max_iter=100, tol=1e-4,
                 n_iter_no_change=10, early_stopping="auto", validation_fraction=0.1,
                 shuffle=True, random_state=None, warm_start=False, verbose=False,
                 store_initial_weights=False, curvature="auto", hessian="auto",
                 scoring=None, standardize_target=True, epsilon=1.35,
                 uncertainty="auto", noise="auto",
                 input_transform="auto", compute_dtype="auto",
                 store_posterior=False):
        self.loss = loss
        self.standardize_target = standardize_target
        self.epsilon = epsilon
        self.uncertainty = uncertainty
        self.noise = noise
        self.store_posterior = store_posterior
        super().__init__(
            n_hidden=n_hidden, activation=activation, scaling=scaling,
            fit_intercept=fit_intercept, regularizer=regularizer, mu=mu, tau=tau,
            step_size=step_size, damping=damping, line_search=line_search,
            linear_solver=linear_solver, solver=solver, learning_rate=learning_rate,
            batch_size=batch_size, max_iter=max_iter, tol=tol,
            n_iter_no_change=n_iter_no_change, early_stopping=early_stopping,
            validation_fraction=validation_fraction, shuffle=shuffle,
            random_state=random_state, warm_start=warm_start, verbose=verbose,
            store_initial_weights=store_initial_weights, curvature=curvature,
            hessian=hessian, scoring=scoring, input_transform=input_transform,
            compute_dtype=compute_dtype,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.positive_only = self.loss == "poisson"
        tags.input_tags.sparse = True
        return tags

    def _loss_object(self):
        if self.loss == "huber":
            return HuberLoss(self.epsilon)
        return PoissonLoss() if self.loss == "poisson" else SquaredError()

    def _selects_tau(self):
        return self.loss == "squared_error" and self.solver == "ggn"

    _posterior_loss = "squared_error"
    _posterior_uses = ("predict(X, return_std=True), uncertainty_, "
                       "log_marginal_likelihood_, noise_variance_, noise_, "
                       "noise_scores_ and noise_model_")

    def _evidence_attributes(self, log_z, sigma2, posterior, target_attributes):
        # the density of y is that of the standardized targets divided by
        # the scale of every output, once per (weighted) row
        scale = np.asarray(target_attributes.get("target_scale_", 1.0),
                           dtype=np.float64) * np.ones(self.n_outputs_)
        log_z -= posterior["n_weighted"] * float(np.sum(np.log(scale)))
        return {"log_marginal_likelihood_": float(log_z),
                "noise_variance_": sigma2 * scale**2}

    @property
    def noise_variance_(self):
        """The noise variance σ̂² of every output in the units of y, or None
        without a posterior (computed on first use, see ``uncertainty``)."""
        return self._noise_checked().get("noise_variance_")

    @property
    def noise_(self):
        """The noise of the predictive distribution, ``"homoscedastic"`` or
        ``"heteroscedastic"``: the one ``noise`` names, or the one
        ``noise="auto"`` chose; None without a posterior (computed on first
        use, with the posterior)."""
        return self._posterior().get("noise_")

    @property
    def noise_scores_(self):
        """Why ``noise="auto"`` chose ``noise_``: the held-out log-likelihood
        per row and output of each noise (a dict), or None with
        ``noise="homoscedastic"`` or without a posterior (computed on first
        use)."""
        return self._posterior().get("noise_scores_")

    @property
    def noise_model_(self):
        """The networks of the noise variance when ``noise_`` is
        ``"heteroscedastic"`` (a list of ``GGNScoreRegressor`` with
        ``loss="poisson"`` on the network's inputs, in the standardized
        units of the targets, whose mean prediction is ν(x)), or None
        (computed on first use, with the posterior)."""
        return self._posterior().get("_noise_model")

    def _noise_model_attributes(self, network, X, Y, sample_weight, theta,
                                posterior):
        """The noise of the predictive distribution (``_noise_model``,
        ``noise_``, ``noise_scores_``; see :mod:`sklearn_ggn._noise`)."""
        from . import _noise

        return _noise.noise_attributes(self, network, X, Y, sample_weight,
                                       theta, posterior)

    def _full_batch_regression(self):
        # the Huber loss keeps full batches as long as the squared error
        return self._selects_tau() or (self.loss == "huber"
                                       and self.solver == "ggn")

    def _validate_input(self, X, y, reset, classes=None, keep_features=False):
        X, y = validate_data(self, X, y, reset=reset and not keep_features,
                             dtype=[np.float64, np.float32],
                             accept_sparse=_ACCEPT_SPARSE, multi_output=True,
                             y_numeric=True, ensure_min_samples=1, order="C")
        Y = np.asarray(y, dtype=X.dtype)
        if Y.ndim == 1:
            Y = Y.reshape(-1, 1)
        if self.loss == "poisson" and Y.min() < 0:
            raise ValueError(
                f'loss="poisson" needs non-negative targets (counts, rates or '
                f"positive amounts), but y has {int(np.sum(Y < 0))} negative "
                f"value(s), the smallest {Y.min():.6g}. Use "
                f'loss="squared_error" for targets of any sign.')
        if reset:
            self._y_ndim = np.ndim(y)
            self.n_outputs_ = Y.shape[1]
        elif Y.shape[1] != self.n_outputs_:
            raise ValueError(f"y has {Y.shape[1]} outputs but the model was fitted "
                             f"with {self.n_outputs_}.")
        return X, np.ascontiguousarray(Y)

    def _encode_targets(self, Y, sample_weight, keep, attributes=None):
        if attributes is None and keep and hasattr(self, "target_scale_"):
            attributes = {"target_mean_": self.target_mean_,
                          "target_scale_": self.target_scale_}
        if attributes is None:
            attributes = self._target_statistics(Y, sample_weight)
        mean, scale = attributes["target_mean_"], attributes["target_scale_"]
        # in float64 (float32 targets may be large), back in Y's dtype
        encoded = (Y.astype(np.float64) - mean) / scale
        return np.ascontiguousarray(encoded, dtype=Y.dtype), attributes

    def _target_statistics(self, Y, sample_weight):
        """``target_mean_`` and ``target_scale_`` (see standardize_target)."""
        n_outputs = Y.shape[1]
        mean, scale = np.zeros(n_outputs), np.ones(n_outputs)
        if self.standardize_target:
            s = np.asarray(sample_weight, dtype=np.float64)
            s = s / s.sum()
            Y = Y.astype(np.float64)
            center = s @ Y
            # what round-off leaves of a constant output counts as zero
            tiny = 1e3 * np.finfo(np.float64).eps * np.abs(Y).max(axis=0)
            if self.loss == "poisson":
                scale = np.where(center > tiny, center, 1.0)
            elif self.loss == "huber":  # median and MAD (outliers move neither)
                mean, scale = robust_target_statistics(Y, s, tiny)
            else:
                mean = center
                with np.errstate(over="ignore"):
                    std = np.sqrt(s @ (Y - center) ** 2)
                if not np.all(np.isfinite(std)):
                    # targets near the largest float: their squares overflow;
                    # the same moments of y over its largest magnitude
                    top = np.abs(Y).max(axis=0)
                    top = np.where(top > 0, top, 1.0)
                    Z = Y / top
                    std = top * np.sqrt(s @ (Z - s @ Z) ** 2)
                scale = np.where(std > tiny, std, 1.0)
        return {"target_mean_": mean, "target_scale_": scale}

    def _score_outputs(self, outputs, Y, sample_weight):
        if self.loss == "poisson":
            outputs = PoissonLoss.mean(outputs)
        return r2_score(Y, outputs, sample_weight=sample_weight)

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y, sample_weight=None, *, X_val=None, y_val=None,
            sample_weight_val=None):
        """Fit the network to data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs (float64 or float32; other dtypes become float64).
            Sparse matrices (CSR, CSC) are never densified.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
%(fit_parameters)s

        Returns
        -------
        self : GGNScoreRegressor
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight, X_val=X_val, y_val=y_val,
                         sample_weight_val=sample_weight_val)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """Run one pass (one epoch, or one step for a full batch) over the data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, relative to the mean weight of this call's
            rows (each call is a pass over its own chunk).

        Returns
        -------
        self : GGNScoreRegressor
            The updated estimator.

        Notes
        -----
        With ``standardize_target=True`` the first call (on a fresh
        estimator) fixes ``target_mean_`` and ``target_scale_`` from its
        chunk; later calls keep them, so that every chunk is trained in the
        same units. Make the first chunk representative (or shuffle the
        stream).
        """
        return self._fit(X, y, sample_weight, incremental=True)

    def predict(self, X, return_std=False):
        """Predict with the trained network, optionally with the predictive std.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.
        return_std : bool, default=False
            Also return the standard deviation of a new observation at each
            input under the linearized Laplace approximation of the fit
            (``loss="squared_error"`` fitted by ``fit``; see
            ``uncertainty``), in the units of ``y`` and with the noise
            included: ``sqrt(noise_variance_ + J(x) P⁻¹ J(x)ᵀ)`` (when
            ``noise_`` is ``"heteroscedastic"`` the noise networks' variance
            ν(x) in place of ``noise_variance_``, in both terms).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predictions in the units of ``y`` (see ``standardize_target``);
            one-dimensional when ``y`` was in ``fit``. With
            ``loss="poisson"`` the predicted mean ``exp(Φ)`` (times
            ``target_scale_``).
        y_std : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Standard deviation of the predictive distribution of ``y`` at
            each input (only with ``return_std=True``), shaped as ``y_pred``.
        """
        check_is_fitted(self, ["hidden_weights_", "output_weights_"])
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32],
                          accept_sparse=_ACCEPT_SPARSE)
        # (the network's inputs, mapped once for the mean and the std)
        Z, Za = self._network_inputs(X, augmented=True)
        out = self._outputs_at(Z, Za)
        if self._loss_of_fit() == "poisson":
            out = PoissonLoss.mean(out)
        # back to the units of y (see standardize_target)
        scale = np.asarray(getattr(self, "target_scale_", 1.0), dtype=out.dtype)
        mean = np.asarray(getattr(self, "target_mean_", 0.0), dtype=out.dtype)
        with np.errstate(over="ignore"):
            out = out * scale + mean
        one_dimensional = getattr(self, "_y_ndim", 2) == 1
        if not return_std:
            return out[:, 0] if one_dimensional else out
        # P⁻¹ = σ²/(N K) B⁻¹ in the standardized units, plus the noise: σ²,
        # or the noise model's variance at x
        variance = self._output_variance(Z, Za)  # (raises without a posterior)
        state = self._noise_checked()
        sigma2 = state["_laplace"]["noise_variance"]
        noise_model = state.get("_noise_model")
        if noise_model is not None:  # ν(x) in place of σ² in both terms
            from ._noise import noise_variance

            sigma2 = noise_variance(noise_model, Z, self.n_outputs_)
        variance *= sigma2 / self.n_outputs_
        variance += sigma2
        std = (np.sqrt(variance) * np.asarray(getattr(self, "target_scale_", 1.0),
                                              dtype=np.float64)).astype(out.dtype)
        if one_dimensional:
            return out[:, 0], std[:, 0]
        return out, std


class GGNScoreClassifier(ClassifierMixin, BaseGGNScore):
    __doc__ = with_docs("""Two-layer network classifier trained by GGN-SCORE.

    With ``loss="log_loss"`` the network outputs logits (softmax for K ≥ 3
    classes, one sigmoid logit for two, and one independent sigmoid per label
    for multilabel targets, an indicator matrix ``y``); with
    ``loss="squared_error"`` it is fitted to one-hot (or indicator) targets
    as in the paper's MNIST experiments.
%(objective)s
    Parameters
    ----------
    loss : {"log_loss", "squared_error"}, default="log_loss"
        Training loss. Only ``"log_loss"`` defines ``predict_proba``.
%(parameters)s
    class_weight : dict, list of dict, "balanced" or None, default=None
        Weights of the classes: the fit is the one with
        ``sample_weight=compute_sample_weight(class_weight, y)`` (times any
        ``sample_weight``). A dict maps labels to weights; ``"balanced"``
        weighs class c by ``n_samples / (n_classes · n_c)`` over the rows of
        the call (each ``partial_fit`` chunk by its own counts); for
        multilabel targets ``"balanced"`` or one dict per label.

    uncertainty : {"auto", "dual", "primal", "last_layer"} or None, \
            default="auto"
        The structure of the linearized Laplace posterior at the fitted
        weights (``loss="log_loss"``), computed on first use for
        ``predictive="probit"`` and ``log_marginal_likelihood_``; chosen as
        for :class:`GGNScoreRegressor`. The one used is ``uncertainty_``.

    predictive : {"map", "probit"}, default="map"
        What :meth:`predict_proba` returns: ``"map"``, the softmax (sigmoid)
        of the fitted logits; ``"probit"``, the linearized Laplace
        predictive, each logit shrunk by its posterior variance ``v`` to
        ``f / sqrt(1 + π v / 8)`` (the ``"map"`` probabilities without a
        posterior). ``predict`` always uses the fitted logits. A model
        file keeps the ``"probit"`` probabilities with
        ``store_posterior=True`` only. See :ref:`default-predictive`.
%(store_posterior)s
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels (for multilabel targets, the column indices
        ``0, ..., n_labels - 1``).
%(attributes)s
    See Also
    --------
    GGNScoreRegressor : The regressor counterpart.
    sklearn.neural_network.MLPClassifier : First-order training of an MLP.
%(references)s
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_ggn import GGNScoreClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = make_pipeline(StandardScaler(),
    ...                     GGNScoreClassifier(n_hidden=32, random_state=0))
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    """)

    _parameter_constraints = {
        **BaseGGNScore._parameter_constraints,
        "loss": [StrOptions({"log_loss", "squared_error"})],
        "class_weight": [dict, list, StrOptions({"balanced"}), None],
        "uncertainty": [StrOptions({"auto", "dual", "primal", "last_layer"}),
                        None],
        "predictive": [StrOptions({"map", "probit"})],
        "store_posterior": ["boolean"],
    }

    def __init__(self, loss="log_loss", n_hidden=100, activation="silu",
                 scaling="ntk", fit_intercept=True, regularizer="pseudo_huber",
                 mu="auto", tau="auto", step_size=0.95, damping="adaptive",
                 line_search="auto", linear_solver="auto", solver="ggn",
                 learning_rate=1.0, batch_size="auto", max_iter=100, tol=1e-4,
                 n_iter_no_change=10, early_stopping="auto", validation_fraction=0.1,
                 shuffle=True, random_state=None, warm_start=False, verbose=False,
                 store_initial_weights=False, curvature="auto", hessian="auto",
                 scoring=None, class_weight=None, uncertainty="auto",
                 predictive="map", input_transform="auto",
                 compute_dtype="auto", store_posterior=False):
        self.loss = loss
        self.class_weight = class_weight
        self.uncertainty = uncertainty
        self.predictive = predictive
        self.store_posterior = store_posterior
        super().__init__(
            n_hidden=n_hidden, activation=activation, scaling=scaling,
            fit_intercept=fit_intercept, regularizer=regularizer, mu=mu, tau=tau,
            step_size=step_size, damping=damping, line_search=line_search,
            linear_solver=linear_solver, solver=solver, learning_rate=learning_rate,
            batch_size=batch_size, max_iter=max_iter, tol=tol,
            n_iter_no_change=n_iter_no_change, early_stopping=early_stopping,
            validation_fraction=validation_fraction, shuffle=shuffle,
            random_state=random_state, warm_start=warm_start, verbose=verbose,
            store_initial_weights=store_initial_weights, curvature=curvature,
            hessian=hessian, scoring=scoring, input_transform=input_transform,
            compute_dtype=compute_dtype,
        )

    # whether the last fit's y was a multilabel indicator matrix
    _multilabel = False
    # the predictive's prior precision is scaled by the evidence at the
    # fitted weights (docs: the fit's own prior at a small tau made the
    # probit probabilities far too uncertain)
    _posterior_prior_scale = "evidence"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_label = True
        return tags

    def _loss_object(self):
        if self.loss != "log_loss":
            return SquaredError()
        return MultilabelLogLoss() if self._multilabel else LogLoss()

    _posterior_loss = "log_loss"
    _posterior_uses = ("predict_proba with predictive='probit', uncertainty_ "
                       "and log_marginal_likelihood_")

    def _class_sample_weight(self, Y):
        return class_sample_weight(self.class_weight, Y, self.classes_,
                                   self._multilabel)

    def _single_logit(self):
        return (self.loss == "log_loss" and len(self.classes_) == 2
                and not self._multilabel)

    def _validate_input(self, X, y, reset, classes=None, keep_features=False):
        X, y = validate_data(self, X, y, reset=reset and not keep_features,
                             dtype=[np.float64, np.float32],
                             accept_sparse=_ACCEPT_SPARSE, ensure_min_samples=1,
                             order="C", multi_output=True)
        if sp.issparse(y):
            y = y.toarray()
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        # type_of_target(y) == "multilabel-indicator", which the check above
        # has just computed: once validated, type_of_target answers it by
        # is_multilabel first (a third of its time on a 1-d y)
        multilabel = is_multilabel(y)
        if y.ndim == 2 and not multilabel:
            raise ValueError(
                "Multioutput target data is not supported with label "
                f"binarization: y has {y.shape[1]} columns of class labels; "
                f"{type(self).__name__} takes one label per row or a "
                "multilabel indicator matrix (columns of 0 and 1).")
        if reset:
            self._fit_labels(y, classes, multilabel)
        else:
            self._check_labels(y, classes, multilabel)
        if multilabel:
            return X, np.ascontiguousarray(y, dtype=X.dtype)
        codes = self._encoder.transform(y)
        if self.n_outputs_ == 1:
            Y = codes.astype(X.dtype).reshape(-1, 1)
        else:
            Y = np.zeros((len(codes), self.n_outputs_), dtype=X.dtype)
            Y[np.arange(len(codes)), codes] = 1
        return X, Y

    def _fit_labels(self, y, classes, multilabel):
        """Set ``classes_``, ``n_outputs_`` and the label encoder from y (and
        ``classes``, partial_fit's), or raise when they cannot be fitted."""
        warm = self.warm_start and hasattr(self, "classes_")
        previous = self.classes_ if warm else None
        if multilabel:
            # an indicator matrix: one output (sigmoid) per label, whose
            # labels are the columns, as MLPClassifier's classes_
            labels = np.arange(y.shape[1])
            if classes is not None and not np.array_equal(
                    np.asarray(classes).ravel(), labels):
                raise ValueError(
                    f"y is a multilabel indicator matrix of {y.shape[1]} "
                    "labels, whose classes are its column indices "
                    f"{labels.tolist()}; got classes={_plain(classes)!r}.")
        else:
            # y's labels found once (each unique_labels is a pass over y)
            if classes is None:
                labels = present = unique_labels(y)
            else:
                labels = unique_labels(classes)
                present = unique_labels(y)
            check_labels_known(y, labels, "classes", present)
        if previous is not None and set(present if not multilabel
                                        else labels) != set(previous):
            raise ValueError(
                "warm_start can only be used where `y` has the same classes as "
                f"in the previous call to fit. Previously got {previous}, `y` "
                f"has {unique_labels(y) if not multilabel else labels}")
        if len(labels) < 2 and not multilabel:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes in "
                "the data, but the data contains only one class: "
                f"{_plain(labels[0])!r}."
            )
        self.classes_ = labels
        self._multilabel = multilabel
        self._encoder = LabelEncoder().fit(labels)
        self.n_outputs_ = 1 if self._single_logit() else len(labels)

    def _check_labels(self, y, classes, multilabel):
        """Raise when y (or ``classes``) does not fit the fitted labels."""
        if classes is not None and not np.array_equal(self.classes_,
                                                      unique_labels(classes)):
            raise ValueError(
                f"`classes={unique_labels(classes)!r}` is not the same as on "
                f"last call to partial_fit, was: {self.classes_!r}")
        if multilabel != self._multilabel or (
                multilabel and y.shape[1] != self.n_outputs_):
            raise ValueError(
                f"y is {'an indicator matrix of ' if multilabel else 'not '}"
                f"{'%d labels' % y.shape[1] if multilabel else 'multilabel'}, "
                f"but the model was fitted "
                + (f"to {self.n_outputs_} labels." if self._multilabel
                   else f"to the classes {self.classes_}."))
        if not multilabel:
            check_labels_known(y, self.classes_, "classes_")

    def _score_outputs(self, outputs, Y, sample_weight):
        if self._multilabel:  # subset accuracy, as MLPClassifier.score
            threshold = 0.0 if self.loss == "log_loss" else 0.5
            return accuracy_score(Y > 0.5, outputs > threshold,
                                  sample_weight=sample_weight)
        if Y.shape[1] == 1:  # one logit
            return accuracy_score(Y[:, 0] > 0.5, outputs[:, 0] > 0,
                                  sample_weight=sample_weight)
        return accuracy_score(Y.argmax(axis=1), outputs.argmax(axis=1),
                              sample_weight=sample_weight)

    @_fit_context(prefer_skip_nested_validation=True)
    @fill_doc
    def fit(self, X, y, sample_weight=None, *, X_val=None, y_val=None,
            sample_weight_val=None):
        """Fit the network to labelled data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs (float64 or float32; other dtypes become float64).
            Sparse matrices (CSR, CSC) are never densified.
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            Class labels (at least two classes), or a multilabel indicator
            matrix.
%(fit_parameters)s

        Returns
        -------
        self : GGNScoreClassifier
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight, X_val=X_val, y_val=y_val,
                         sample_weight_val=sample_weight_val)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Run one pass (one epoch, or one step for a full batch) over the data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            Class labels, or a multilabel indicator matrix.
        classes : array-like of shape (n_classes,), default=None
            All classes; required on the first call unless ``y`` has them all.
            On a later call it must equal ``classes_``.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, relative to the mean weight of this call's
            rows (each call is a pass over its own chunk).

        Returns
        -------
        self : GGNScoreClassifier
            The updated estimator.
        """
        return self._fit(X, y, sample_weight, incremental=True, classes=classes)

    def decision_function(self, X):
        """Raw network outputs (logits, or fitted one-hot scores).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes a 1-D score, positive for ``classes_[1]``; for
            multilabel targets one column per label.
        """
        check_is_fitted(self, ["hidden_weights_", "output_weights_"])
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32],
                          accept_sparse=_ACCEPT_SPARSE)
        out = self._raw_output(X)
        if len(self.classes_) == 2 and not self._multilabel:
            return out[:, 0] if out.shape[1] == 1 else out[:, 1] - out[:, 0]
        return out

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_labels)
            Predicted labels, or for multilabel targets the predicted
            indicator matrix.
        """
        scores = self.decision_function(X)
        if self._multilabel:  # the indicator matrix, as MLPClassifier
            threshold = 0.0 if self._loss_of_fit() == "log_loss" else 0.5
            return (scores > threshold).astype(int)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _has_proba(self):
        # As scikit-learn's SVC(probability=False): hasattr is False, and the
        # AttributeError's cause says why.
        loss = self._loss_of_fit()
        if loss != "log_loss":
            raise AttributeError(
                f"predict_proba is not available with loss={loss!r}: the "
                "squared-error classifier fits one-hot targets and its outputs "
                "are not probabilities. Use loss='log_loss' for class "
                "probabilities.")
        return True

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities (``loss="log_loss"`` only).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Softmax (or sigmoid) of the logits, shrunk by their posterior
            variance with ``predictive="probit"``; for multilabel targets
            each label's probability (rows need not sum to one).
        """
        if (self.predictive == "probit"
                and self._posterior()["_laplace"] is not None):
            return self._probit_proba(X)
        scores = self.decision_function(X)
        if self._multilabel:  # independent sigmoids: rows need not sum to 1
            return MultilabelLogLoss().probabilities(scores)
        if scores.ndim == 1:
            # σ(−z) for the first class, not 1 − σ(z), which cancels to a few
            # float32 ulps when σ(z) is near 1
            return expit(np.column_stack([-scores, scores]))
        return LogLoss().probabilities(scores)

    def _probit_proba(self, X):
        """The probit approximation of the linearized Laplace predictive:
        each logit ``f_c ~ N(μ_c, v_c)`` is shrunk to
        ``μ_c / sqrt(1 + π v_c / 8)`` before the sigmoid (for one logit
        MacKay's approximation of E σ(f), within 0.03 of it for every μ
        and v) or the softmax (the per-class generalization)."""
        check_is_fitted(self, ["hidden_weights_", "output_weights_"])
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32],
                          accept_sparse=_ACCEPT_SPARSE)
        dtype = self.hidden_weights_.dtype
        # (mapped once for the mean and variance)
        Z, Za = self._network_inputs(X, augmented=True)
        logits = self._outputs_at(Z, Za).astype(np.float64)
        variance = self._output_variance(Z, Za)
        logits /= np.sqrt(1.0 + np.pi * variance / 8.0)
        if self._multilabel:
            proba = MultilabelLogLoss().probabilities(logits)
        elif logits.shape[1] == 1:
            proba = expit(np.column_stack([-logits[:, 0], logits[:, 0]]))
        else:
            proba = LogLoss().probabilities(logits)
        return proba.astype(dtype, copy=False)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probabilities.
        """
        # scikit-learn's convention: exactly log(predict_proba), -inf included.
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))
