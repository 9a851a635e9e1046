"""The estimators' shared logic: parameters, validation, the fit as one
transaction (validate → plan → solve → set attributes), and prediction from
the fitted weights. The plan is :mod:`sklearn_ggn._plan`'s, the numerics
:mod:`sklearn_ggn.engine`'s."""

import copy
import inspect
import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import _check_sample_weight

from . import _advice, _config, _evidence_map, _plan, _watch
from ._activations import ACTIVATIONS
from ._inputs import (
    AUTO_MAP_CANDIDATES,
    INPUT_MAPS,
    Identity,
    input_map_name,
    input_map_from_statistics,
    make_input_map,
)
from ._monitor import Monitor, Records, Solved
from ._network import TwoLayerNetwork
from ._persistence import PersistenceMixin
from ._plan import Phase
from ._posterior import PosteriorMixin, fitting_posterior, posterior_cache
from ._regularizers import REGULARIZERS
from ._tau import criterion_tau
from .engine import (
    AdaptiveStepSize,
    ArmijoLineSearch,
    Batching,
    EarlyStopping,
    GGNScoreSolver,
    GradientDescentSolver,
    NoImprovement,
    Problem,
    resolve_damping,
    step_structure,
)

try:  # scikit-learn >= 1.9: progress bars and monitors (sklearn.callback)
    from sklearn.callback import CallbackSupportMixin
except ImportError:  # pragma: no cover - older scikit-learn
    class CallbackSupportMixin:
        """Stand-in without callbacks for scikit-learn < 1.9."""

# a first partial_fit chunk of fewer rows fixes the input map with a warning
_MAP_MIN_ROWS = 20
# Attributes the callback machinery of scikit-learn keeps during a fit; a
# failed fit restores everything else.
_CALLBACK_ATTRIBUTES = ("_callback_fit_ctx", "_skl_callbacks_to_teardown")


class _Number(Interval):
    """An :class:`Interval` that rejects booleans: ``True`` is an ``Integral``
    and a ``Real`` to Python, but never a meaningful hyperparameter value."""

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


def _accepts_sample_weight(scorer):
    """Whether a scorer takes ``sample_weight``: a user's callable may be
    ``scorer(estimator, X, y)``, and a ``make_scorer`` scorer passes it to
    its metric, which may not take it."""
    # (make_scorer's scorers keep their metric as _score_func)
    scorer = getattr(scorer, "_score_func", scorer)
    try:
        parameters = inspect.signature(scorer).parameters.values()
    except (TypeError, ValueError):  # no signature to read: assume it does
        return True
    return any(p.name == "sample_weight" or p.kind is p.VAR_KEYWORD
               for p in parameters)


class TrainingData(NamedTuple):
    """The validated training data of a fit.

    Attributes
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        Validated inputs (float64 or float32).
    Y : ndarray of shape (n_samples, n_outputs)
        Targets in X's dtype, before the target encoding.
    y : object
        The targets as given (what scorers and callbacks see).
    sample_weight : ndarray of shape (n_samples,)
        Checked weights in X's dtype, held in float64 (class weights not
        applied).
    """

    X: object
    Y: np.ndarray
    y: object
    sample_weight: np.ndarray

    def rows(self, idx):
        """The data of the rows ``idx`` (by position)."""
        y = self.y.toarray() if sp.issparse(self.y) else np.asarray(self.y)
        return TrainingData(self.X[idx], self.Y[idx], y[idx],
                            self.sample_weight[idx])


class Start(NamedTuple):
    """Where a solve starts.

    Attributes
    ----------
    theta0 : ndarray
        The initial parameters, drawn in float64.
    rng : RandomState
        The fit's random stream.
    fresh_start : bool
        Whether no fitted weights are continued.
    reuse : bool
        Whether the solve continues the fitted weights and the solver's state.
    first_call : bool
        Whether this is a fit, or the first ``partial_fit`` call.
    """

    theta0: object
    rng: object
    fresh_start: bool
    reuse: bool
    first_call: bool


class BaseGGNScore(PersistenceMixin, PosteriorMixin, CallbackSupportMixin,
                   BaseEstimator, metaclass=ABCMeta):
    """Base class of the GGN-SCORE estimators; use the subclasses."""

    _parameter_constraints = {
        "n_hidden": [_Number(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "scaling": [
            StrOptions({"ntk", "mean_field"}),
            _Number(Real, 0, None, closed="neither"),
        ],
        "fit_intercept": ["boolean"],
        "regularizer": [StrOptions(set(REGULARIZERS))],
        "mu": [StrOptions({"auto"}), _Number(Real, 0, None, closed="neither")],
        "tau": [StrOptions(set(_plan.TAU_RULES)),
                _Number(Real, 0, None, closed="left")],
        "step_size": [_Number(Real, 0, 1, closed="right")],
        "damping": [StrOptions({"adaptive", "auto", "tau"}),
                    _Number(Real, 0, None, closed="neither")],
        "line_search": [StrOptions({"auto"}), "boolean"],
        "linear_solver": [StrOptions({"auto", "dual", "primal"})],
        "solver": [StrOptions({"ggn", "gd"})],
        "learning_rate": [_Number(Real, 0, None, closed="neither")],
        "batch_size": [StrOptions({"auto"}), _Number(Integral, 1, None, closed="left"),
                       None],
        "max_iter": [_Number(Integral, 1, None, closed="left")],
        "tol": [_Number(Real, 0, None, closed="left")],
        "n_iter_no_change": [_Number(Integral, 1, None, closed="left"),
                             Options(Real, {np.inf})],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "validation_fraction": [_Number(Real, 0, 1, closed="neither")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "store_initial_weights": ["boolean"],
        "curvature": [StrOptions({"auto", "exact", "true_vs_rest"})],
        "hessian": [StrOptions({"auto", "diagonal", "per_unit"})],
        "scoring": [str, callable, None],
        "input_transform": [StrOptions(set(INPUT_MAPS) | {"auto"}), None],
        "compute_dtype": [StrOptions({"auto", "float32", "float64"})],
    }

    @abstractmethod
    def __init__(self, n_hidden, activation, scaling, fit_intercept, regularizer,
                 mu, tau, step_size, damping, line_search, linear_solver, solver,
                 learning_rate, batch_size, max_iter, tol, n_iter_no_change,
                 early_stopping, validation_fraction, shuffle, random_state,
                 warm_start, verbose, store_initial_weights, curvature="auto",
                 hessian="auto", scoring=None, input_transform="auto",
                 compute_dtype="auto"):
        self.n_hidden = n_hidden
        self.activation = activation
        self.scaling = scaling
        self.fit_intercept = fit_intercept
        self.regularizer = regularizer
        self.mu = mu
        self.tau = tau
        self.step_size = step_size
        self.damping = damping
        self.line_search = line_search
        self.linear_solver = linear_solver
        self.solver = solver
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.shuffle = shuffle
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose
        self.store_initial_weights = store_initial_weights
        self.curvature = curvature
        self.hessian = hessian
        self.scoring = scoring
        self.input_transform = input_transform
        self.compute_dtype = compute_dtype

    # ---------------------------------------------------------------- hooks
    @abstractmethod
    def _validate_input(self, X, y, reset, classes=None, keep_features=False):
        """Return ``(X, Y)`` with Y the (b × K) training targets in X's dtype.

        ``reset``: set up the targets (and X's features) afresh;
        ``keep_features``: check X's features against the fitted ones even
        then (a warm start)."""

    @abstractmethod
    def _score_outputs(self, outputs, Y, sample_weight):
        """Score (R² or accuracy) of raw outputs against target matrix Y."""

    @abstractmethod
    def _loss_object(self):
        """The training loss of ``sklearn_ggn._losses``."""

    def _encode_targets(self, Y, sample_weight, keep, attributes=None):
        """``(Y in training units, fitted attributes of the encoding)``.

        ``keep``: reuse the fitted encoding (when there is one);
        ``attributes``: the encoding of this fit, for validation targets.
        The identity here (classifiers).
        """
        return Y, {}

    def _with_class_weight(self, sample_weight, Y):
        """The sample weights times ``class_weight``'s per-row factors (as
        ``compute_sample_weight``'s weights passed as ``sample_weight``)."""
        factor = self._class_sample_weight(Y)
        return sample_weight if factor is None else sample_weight * factor

    def _class_sample_weight(self, Y):
        """Per-row factors of the sample weights from ``class_weight``, or
        None (the regressor; a classifier without class weights)."""
        return None

    def _selects_tau(self):
        """Whether ``tau="auto"`` is chosen by GCV in full batch (validated
        for the squared error of the regressor; elsewhere the rule)."""
        return False

    def _full_batch_regression(self):
        """Whether ``batch_size="auto"`` keeps full batches up to
        ``AUTO_FULL_BATCH_ROWS`` rows with the structured step."""
        return self._selects_tau()

    def _watch_extends(self):
        """Whether the overfitting watch goes on past ``WATCH_EPOCHS`` while
        the fit may be memorizing (the regressors: a log-loss's gap also
        grows with the confidence of wrong predictions while the accuracy
        improves)."""
        return not is_classifier(self)

    def _select_tau(self, network, regularizer, X, Y, sample_weight, theta0, plan,
                    rng, fresh_start):
        """``(τ, tau_path_)`` of ``tau="auto"`` in full batch: the τ ≥
        ``AUTO_TAU_MIN`` of :data:`~sklearn_ggn._tau.TAU_GRID` minimizing
        the plan's criterion on the problem linearized at θ0 (see
        ``sklearn_ggn._tau``); the plan's τ when the criterion cannot choose.
        A warm start that continues a fit keeps that fit's τ (the same
        objective)."""
        if not fresh_start and getattr(self, "tau_path_", None) is not None:
            return self.tau_, self.tau_path_
        probe = Problem(network, self._loss_object(), regularizer, plan.tau, X, Y,
                        sample_weight, regularized=False)
        return criterion_tau(probe, theta0, rng, plan.tau_criterion, plan.tau)

    # --------------------------------------------------------------- helpers
    def _network(self, n_features, n_outputs):
        return TwoLayerNetwork(
            n_features, self.n_hidden, n_outputs,
            _plan.kappa(self.scaling, self.n_hidden), self.activation,
            self.fit_intercept,
        )

    def _fitted_network(self, n_features, n_outputs):
        """The network of the fitted weights, for predictions: its width
        from ``hidden_weights_``, its activation, κ and biases those of the
        fit (a parameter changed since, without a refit, changes nothing;
        weights set by hand before any fit take the parameters')."""
        form = self.__dict__.get("_network_form")
        if form is None:
            return self._network(n_features, n_outputs)
        activation, kappa, fit_intercept = form
        return TwoLayerNetwork(n_features, self.hidden_weights_.shape[0],
                               n_outputs, kappa, activation, fit_intercept)

    def _regularizer_object(self):
        return REGULARIZERS[self.regularizer](
            _plan.resolve_mu(self.get_params(deep=False)))

    def _initial_theta(self, network, dtype, rng, reuse):
        """θ0: from the public weight attributes when warm-starting, else
        drawn (:meth:`TwoLayerNetwork.initial_theta`)."""
        if not (reuse and hasattr(self, "hidden_weights_")):
            return network.initial_theta(rng, dtype)
        expected = {name + "_": shape
                    for name, shape in network.weight_shapes().items()}
        weights = {}
        for name, shape in expected.items():
            if not hasattr(self, name):
                raise ValueError(
                    f"warm start needs {name} of shape {shape} as well; set all "
                    f"of {sorted(expected)} or none of them."
                )
            value = np.asarray(getattr(self, name), dtype=dtype)
            if value.shape != shape:
                raise ValueError(
                    f"{name} has shape {value.shape} but this fit needs {shape} "
                    f"(n_hidden={network.n_hidden}, {network.n_features} "
                    f"inputs to the network (the columns of "
                    f"input_map_.transform(X)), n_outputs={network.n_outputs})."
                )
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{name} contains NaN or infinity.")
            weights[name[:-1]] = value
        return network.theta_of(weights, dtype=dtype)

    def _weights(self, network, theta, dtype):
        """The public weight attributes (names without the trailing ``_``), in
        ``dtype`` (X's)."""
        return network.weights(theta, dtype)

    def _fitted_theta(self, network, dtype):
        """θ of the public weight attributes, in ``dtype``."""
        return network.theta_of(
            {name: getattr(self, name + "_", None)
             for name in network.weight_shapes()}, dtype=dtype)

    @property
    def input_center_(self):
        """The column medians of the fitted input map (``input_map_``), or
        None when it has none (``input_transform=None``)."""
        return getattr(self.input_map_, "center_", None)

    @property
    def input_scale_(self):
        """The column factors of the fitted input map (``input_map_``), or
        None when it has none (``input_transform=None``)."""
        return getattr(self.input_map_, "scale_", None)

    @property
    def input_transform_(self):
        """The ``input_transform`` of ``input_map_`` (``"auto"``: the chosen)."""
        return input_map_name(self.input_map_)

    def _input_map(self, X, sample_weight, fresh_start, incremental=False):
        """The fitted input map of this fit: fitted on the training rows on
        a fresh start, else that of the fit whose weights are reused (a
        warm start or ``partial_fit`` continues the same map; weights set
        by hand before any fit are on the inputs as this fit maps them)."""
        kept = self.__dict__.get("input_map_")
        if not fresh_start and kept is not None:
            return kept
        # the first partial_fit chunk sets the map for the stream: a column
        # constant in it (a level absent from it, a pixel never lit there,
        # every column of a one-row chunk) is centered, not zeroed for good
        name = self._map_name()
        input_map = make_input_map(name, stream=incremental)
        if incremental and name is not None and X.shape[0] < _MAP_MIN_ROWS:
            warnings.warn(
                f"input_transform={self.input_transform!r} takes its "
                f"statistics from the first partial_fit chunk, here "
                f"{X.shape[0]} row(s), and keeps them for the whole stream. "
                f"Give partial_fit a first chunk of {_MAP_MIN_ROWS} rows or "
                "more that represents the data, or scale the inputs "
                "yourself and set input_transform=None.", UserWarning)
        return input_map._fit(X, sample_weight)

    def _input_width(self, n_features, fresh_start):
        """The network's input width for X of ``n_features`` columns when
        it is known before the input map is fitted: the kept map's, or the
        width the map gives any data (None when its fitted rows decide)."""
        kept = self.__dict__.get("input_map_")
        if not fresh_start and kept is not None:
            return kept.n_features_out_
        return make_input_map(self._map_name())._fixed_width(n_features)

    def _map_name(self):
        """The ``input_transform`` this fit's phase maps X with: the one
        given, or under ``"auto"`` the candidate being fitted
        (:mod:`~sklearn_ggn._watch`, :mod:`~sklearn_ggn._evidence_map`), else
        ``"robust_clip"``."""
        if self.input_transform != "auto":
            return self.input_transform
        return self.__dict__.get("_map_candidate", AUTO_MAP_CANDIDATES[0])

    def _fitted_input_map(self, n_features):
        """The fitted ``input_map_``; the identity of ``n_features`` columns
        for weights set by hand before any fit."""
        input_map = self.__dict__.get("input_map_")
        if input_map is None:
            return input_map_from_statistics(None, None, n_features)
        return input_map

    def _network_inputs(self, X, augmented=False):
        """Validated X as the network sees it: cast to the weights' dtype,
        then through the fitted input map (``input_map_``). The one path
        of every prediction from X.

        ``augmented=True`` returns ``(Z, Ẑ)`` with ``Ẑ`` the network's
        augmented inputs and ``Z`` a view of their first columns when the
        map can be written straight into them, else ``(Z, None)``."""
        X = X.astype(self.hidden_weights_.dtype, copy=False)
        input_map = self._fitted_input_map(X.shape[1])
        if not augmented:
            return input_map._map(X)
        network = self._fitted_network(input_map.n_features_out_,
                                       self.output_weights_.shape[1])
        return network.augment_mapped(X, input_map)

    def _raw_output(self, X):
        """Φ(X) of shape (n_samples, n_outputs_) from the public weights, for
        validated X (in the weights' dtype)."""
        return self._outputs_at(*self._network_inputs(X, augmented=True))

    def _outputs_at(self, Z, Za=None):
        """Φ from the public weights at the network's inputs ``Z``
        (:meth:`_network_inputs` of validated X, in the weights' dtype), or
        at their augmented form ``Za`` when given."""
        network = self._fitted_network(Z.shape[1], self.output_weights_.shape[1])
        theta = self._fitted_theta(network, self.hidden_weights_.dtype)
        return network.forward(theta, network.augment(Z) if Za is None else Za,
                               with_deriv=False).outputs

    def _step_structure(self, n_outputs):
        """The structure of this estimator's steps (the engine's
        ``step_structure``; empty for the exact step and for ``solver="gd"``)."""
        if self.solver != "ggn":
            return {}
        curvature, hessian = _plan.step_options(self.curvature, self.hessian)
        return step_structure(curvature, hessian, self._loss_object(), n_outputs)

    def _summary(self, X, n_outputs, sample_weight, rows_weight, incremental,
                 early_stopping=False, watchable=False, n_features=None):
        """The :class:`~sklearn_ggn._plan.DataSummary` of this fit's
        training rows (``sample_weight`` with class weights, float64;
        ``n_features`` the network's inputs, X's columns by default)."""
        return _plan.DataSummary(
            n_samples=X.shape[0],
            n_features=X.shape[1] if n_features is None else n_features,
            n_outputs=n_outputs,
            rows_weight=rows_weight,
            train_weight=(float(np.sum(sample_weight)),
                          float(np.sum(sample_weight.astype(np.float32)))),
            structure=self._step_structure(n_outputs),
            full_batch_rows=(_plan.AUTO_FULL_BATCH_ROWS
                             if self._full_batch_regression()
                             else _plan.AUTO_STRUCTURED_FULL_BATCH_ROWS),
            selects_tau=self._selects_tau(),
            squared_error=getattr(self, "loss", None) == "squared_error",
            watch_extends=self._watch_extends(), early_stopping=early_stopping,
            watchable=watchable, incremental=incremental)

    def _make_solver(self, problem, plan, rules):
        """The engine's solver of this fit's plan, owning its stopping
        ``rules`` on validation data."""
        batching = Batching(plan.batch_size, self.shuffle,
                            merge_short=plan.merge_short)
        stopping = (NoImprovement(self.tol, self.n_iter_no_change)
                    if plan.stops_on_objective else None)
        if self.solver == "gd":
            return GradientDescentSolver(self.learning_rate, batching,
                                         plan.max_iter, stopping, rules)
        return GGNScoreSolver(
            resolve_damping(plan.damping, problem.tau, plan.full_batch,
                            1.0 / problem.regularizer.hessian(np.zeros(1))[0],
                            structured=plan.structured, start=plan.damping_start),
            AdaptiveStepSize(self.step_size),
            ArmijoLineSearch() if plan.line_search else None,
            self.linear_solver, batching, plan.max_iter, stopping,
            epochs_are_passes=not plan.incremental, curvature=plan.curvature,
            hessian=plan.hessian, stop_when_stalled=plan.stop_when_stalled,
            damping_ends_fit=plan.damping_ends_fit, rules=rules)

    # ------------------------------------------------------------------ fit
    def _fit(self, X, y, sample_weight=None, incremental=False, classes=None,
             X_val=None, y_val=None, sample_weight_val=None):
        """Fit as one transaction: on any exception (a validation error,
        MemoryError, KeyboardInterrupt, a numerical error) the estimator is
        left exactly as it was before the call."""
        _config.note_first_compile()
        snapshot = self.__dict__.copy()
        try:
            first_call = not (incremental and hasattr(self, "n_iter_"))
            self._check_continued_loss(incremental, first_call)
            # a warm start continues the fitted weights and input map: X's
            # columns must be the fitted ones, by count and by name, as for
            # partial_fit and predict
            X_checked, Y = self._validate_input(
                X, y, reset=first_call, classes=classes,
                keep_features=self.warm_start and "n_features_in_" in self.__dict__)
            data = TrainingData(X_checked, Y, y, _check_sample_weight(
                sample_weight, X_checked, dtype=X_checked.dtype,
                ensure_non_negative=True).astype(np.float64, copy=False))
            if (X_val is None) != (y_val is None):
                raise ValueError("X_val and y_val must be given together.")
            if sample_weight_val is not None and X_val is None:
                raise ValueError("sample_weight_val weighs the rows of X_val "
                                 "and y_val, which were not given.")
            validation = None
            if X_val is not None:
                validation = (*self._validate_input(X_val, y_val, reset=False),
                              y_val, sample_weight_val)
            watch = self._watch_plan(data, incremental, validation)
            if watch is not None:
                split = _watch.split(self, data, sample_weight, watch)
                if split is not None:
                    _watch.fit_watched(self, data, split, watch)
                    return self
            if not _evidence_map.fit_chosen(self, data, incremental, validation):
                self._fit_phase(data, incremental, validation)
            # (a warm start or partial_fit continuing keeps what the first
            # fit's watch found)
            continues = incremental or self.warm_start
            self.overfitting_watch_ = (
                self.__dict__.get("overfitting_watch_") if continues else None)
            return self
        except BaseException:
            kept = {k: self.__dict__[k] for k in _CALLBACK_ATTRIBUTES
                    if k in self.__dict__}
            self.__dict__.clear()
            self.__dict__.update(snapshot)
            self.__dict__.update(kept)
            raise

    def _loss_of_fit(self):
        """The loss the weights were fitted with (``loss`` before any fit): a
        ``loss`` changed since changes nothing until a fit from scratch."""
        return self.__dict__.get("_fit_loss", self.loss)

    def _continues(self, incremental, first_call):
        """Whether this call reuses the fitted weights when there are some:
        a ``warm_start`` fit, or a ``partial_fit`` after the first."""
        return self.warm_start or (incremental and not first_call)

    def _check_continued_loss(self, incremental, first_call):
        """Raise when a fit that continues the fitted weights (``warm_start``
        or a later ``partial_fit``) would train another loss than theirs: the
        targets' encoding, the outputs and the predictions belong to it."""
        fitted = self.__dict__.get("_fit_loss")
        if (self._continues(incremental, first_call)
                and "hidden_weights_" in self.__dict__
                and fitted is not None and fitted != self.loss):
            how = ("partial_fit" if incremental and not first_call
                   else "warm_start=True")
            raise ValueError(
                f"loss={self.loss!r}, but the weights were fitted with "
                f"loss={fitted!r}: a fit that continues them ({how}) trains "
                f"the same loss. Set loss={fitted!r} again, or fit from "
                "scratch (warm_start=False, or fit instead of partial_fit).")

    def _watch_plan(self, data, incremental, validation):
        """The plan's overfitting watch of this fit, or None."""
        if incremental or not _plan.watches(self.early_stopping):
            return None
        watchable = (validation is None
                     and not (self.warm_start and hasattr(self, "hidden_weights_"))
                     and not self.__dict__.get("_skl_callbacks"))
        # (the rows' weights are the phases' business: the watch's plan
        # depends on the rows' count and the parameters)
        summary = self._summary(data.X, data.Y.shape[1], data.sample_weight, 1.0,
                                False, watchable=watchable)
        return _plan.plan_fit(self.get_params(deep=False), summary,
                              warn=False).watch

    def _fit_phase(self, data, incremental, validation, phase=Phase()):
        """One solve on ``data`` (:class:`TrainingData`): the estimator's
        fitted attributes are set when it succeeds. ``validation``:
        ``(X_val, Y_val, y_val, sample_weight_val)`` validated, or None."""
        X, Y = data.X, data.Y
        dtype = X.dtype
        sample_weight = self._with_class_weight(data.sample_weight, Y)
        if (getattr(self, "class_weight", None) is not None
                and not sample_weight.sum() > 0):
            raise ValueError(
                "The sample weights times class_weight are zero for every "
                f"row (class_weight={self.class_weight!r}): nothing to fit.")
        rows_weight = (phase.rows_weight if phase.rows_weight is not None
                       else _plan.rows_weight(sample_weight, dtype))
        if isinstance(self.scoring, str) and self.scoring != "loss":
            check_scoring(self, self.scoring)  # an unknown name fails here
        first_call = not (incremental and hasattr(self, "n_iter_"))
        # The generator is copied, not advanced in place, so that a failed
        # partial_fit leaves the estimator's stream where it was.
        if incremental and hasattr(self, "_rng"):
            rng = copy.deepcopy(self._rng)
        else:
            rng = check_random_state(self.random_state if phase.seed is None
                                     else phase.seed)
        reuse = (self._continues(incremental, first_call)
                 if phase.continues is None else phase.continues)
        fresh_start = not (reuse and hasattr(self, "hidden_weights_"))
        # Targets in the units the network is trained in (the regressor's
        # standardize_target); their statistics are kept while weights are
        # reused, so that a warm start or partial_fit continues the same map.
        Y, fitted = self._encode_targets(Y.astype(np.float64, copy=False),
                                         sample_weight, keep=not fresh_start)
        target_attributes = dict(fitted)
        # The network's inputs are the input map's columns. The random
        # stream draws θ0, then the early-stopping split; a map whose width
        # its fitted rows decide is fitted on the training rows after the
        # split, and θ0 drawn then.
        width = self._input_width(X.shape[1], fresh_start)
        start = (None if width is None
                 else self._start_weights(width, Y.shape[1], rng, reuse))
        X, Y, sample_weight, y, validation, early_stopping = self._validation_rows(
            X, Y, sample_weight, data.y, validation, target_attributes, incremental,
            rng)
        input_map = self._input_map(X, sample_weight, fresh_start, incremental)
        network, theta0 = start or self._start_weights(
            input_map.n_features_out_, Y.shape[1], rng, reuse)
        if self.store_initial_weights and (fresh_start
                                           or not hasattr(self, "initial_weights_")):
            fitted["initial_weights_"] = self._weights(network, theta0, dtype)
        plan = _plan.plan_fit(self.get_params(deep=False), self._summary(
            X, Y.shape[1], sample_weight, rows_weight, incremental, early_stopping,
            n_features=network.n_features))
        if phase.max_iter is not None:
            plan = plan._replace(max_iter=phase.max_iter)
        return self._solve(network, input_map, plan, phase, fitted,
                           target_attributes, (X, Y, sample_weight, y), validation,
                           Start(theta0, rng, fresh_start, reuse, first_call))

    def _start_weights(self, n_features, n_outputs, rng, reuse):
        """``(network, θ0)``: the network on ``n_features`` inputs (the
        input map's columns) and its initial parameters, drawn in float64
        (cast to the dtype the fit computes in by :meth:`_solve`)."""
        network = self._network(n_features, n_outputs)
        return network, self._initial_theta(network, np.float64, rng, reuse)

    def _validation_rows(self, X, Y, sample_weight, y, validation,
                         target_attributes, incremental, rng):
        """``(X, Y, sample_weight, y, validation, early_stopping)``: the
        training rows, and the validation rows ``(X_val, Y_val, sw_val,
        labels)`` (given, or with ``early_stopping=True`` a held-out split,
        stratified for classifiers), or None."""
        early_stopping = (not _plan.watches(self.early_stopping)
                          and bool(self.early_stopping) and not incremental)
        if validation is not None:
            X_val, Y_val, labels, sample_weight_val = validation
            Y_val = self._encode_targets(Y_val, None, keep=True,
                                         attributes=target_attributes)[0]
            X_val = X_val.astype(X.dtype, copy=False)
            if (sample_weight_val is not None
                    and not np.any(np.asarray(sample_weight_val) != 0)):
                raise ValueError("sample_weight_val is zero for every validation "
                                 "sample: the validation score would be undefined.")
            sw_val = _check_sample_weight(sample_weight_val, X_val, dtype=X.dtype,
                                          ensure_non_negative=True)
            return X, Y, sample_weight, y, (X_val, Y_val, sw_val, labels), \
                early_stopping
        if not early_stopping:
            return X, Y, sample_weight, y, None, False
        stratify = Y.argmax(axis=1) if is_classifier(self) else None
        if stratify is not None and Y.shape[1] == 1:
            stratify = Y[:, 0]
        if getattr(self, "_multilabel", False):
            stratify = None  # (as MLPClassifier: no stratified split)
        too_small = _advice.check_validation_split(self, X.shape[0], stratify)
        if too_small is not None:
            # as MLPClassifier's own too-small check names it, but the fit
            # goes on without early stopping (it can still learn)
            warnings.warn(f"The validation set is too small: {too_small} "
                          "Training on all samples without early stopping.",
                          UserWarning)
            return X, Y, sample_weight, y, None, False
        idx_train, idx_val = train_test_split(
            np.arange(X.shape[0]), test_size=self.validation_fraction,
            random_state=rng, stratify=stratify)
        # (y as given, a sparse indicator matrix as its dense array)
        labels = y.toarray() if sp.issparse(y) else np.asarray(y)
        validation = (X[idx_val], Y[idx_val], sample_weight[idx_val],
                      labels[idx_val])
        if not np.sum(sample_weight[idx_train]) > 0:
            raise ValueError("All samples left for training after the "
                             "early-stopping split have zero weight "
                             "(sample_weight times class_weight).")
        if not np.sum(validation[2]) > 0:
            raise ValueError("All samples of the early-stopping split's "
                             "validation set have zero weight (sample_weight "
                             "times class_weight): its score would be "
                             "undefined. Pass X_val, y_val and "
                             "sample_weight_val, or set early_stopping=False.")
        return (X[idx_train], Y[idx_train], sample_weight[idx_train],
                labels[idx_train], validation, True)

    def _solve(self, network, input_map, plan, phase, fitted, target_attributes,
               training, validation, start):
        """Map the inputs through the fitted ``input_map``, choose τ, solve,
        and set the fitted attributes."""
        theta0, rng, fresh_start, reuse, first_call = start
        X, Y, sample_weight, y = training
        given = (X, Y, sample_weight)  # (validated; perhaps the caller's)
        dtype, incremental = X.dtype, plan.incremental
        # the steps' dtype (compute_dtype, see _plan); the weights are
        # returned in X's dtype
        work = plan.work_dtype
        callback_rows = (X, y, sample_weight)  # as given to the callbacks
        inputs = {"input_map_": input_map}
        X, Xa, (x_max, unscaled) = self._mapped_inputs(network, input_map, X,
                                                       work)
        fitted.update(inputs)
        # (θ0 keeps its float64 draw: rounded to float32 first, the float32
        # fit would not follow the float64 one; initial_weights_ shows it
        # rounded to X's dtype)
        X, Y, sample_weight, theta0 = (a.astype(work, copy=False) for a in
                                       (X, Y, sample_weight, theta0))
        if validation is not None:
            validation = self._mapped_validation(validation, target_attributes,
                                                 input_map, dtype, work)
        regularizer = REGULARIZERS[self.regularizer](plan.mu)
        tau, fitted["tau_path_"] = plan.tau, None
        if plan.tau_rule == "select":
            tau, fitted["tau_path_"] = self._select_tau(
                network, regularizer, X, Y, sample_weight, theta0, plan, rng,
                fresh_start)
        fitted["tau_"] = tau
        if not incremental or first_call:
            _advice.check_width(self, network, self._step_structure(Y.shape[1]),
                                X.shape[0], plan.batch_size)
        monitor_args = (validation, callback_rows, dtype,
                        {**target_attributes, **inputs,
                         "_posterior_cache": fitting_posterior()})

        def run(tau, start):
            """One solve at τ from ``start`` (θ0 when None)."""
            problem = Problem(network, self._loss_object(), regularizer, tau, X,
                              Y, sample_weight, regularized=self.solver != "gd",
                              Xa=Xa)
            return self._one_solve(problem, plan, phase, reuse, theta0, start, rng,
                                   monitor_args)

        solved = run(tau, None)
        if plan.evidence_path and fresh_start and not plan.early_stopping:
            solved = self._climb_evidence(run, solved, network, (X, Y, sample_weight),
                                          fitted)
        problem, records, early, monitor, result, batch_size = solved
        penalty0 = float(problem.regularization(theta0)) if problem.regularized \
            else 0.0
        theta = early.best_theta if early else result.theta
        monitor.close(result, theta)
        _advice.check_finite(problem, result, theta)
        fitted.update(records.attributes(result, early),
                      **self._solved_attributes(network, problem, X, result,
                                                theta, dtype, rng, incremental,
                                                target_attributes, given),
                      batch_size_=batch_size)
        if not network.fit_intercept:  # (no intercepts of an earlier fit)
            for name in ("hidden_intercept_", "output_intercept_"):
                self.__dict__.pop(name, None)
        for name, value in fitted.items():
            setattr(self, name, value)
        _advice.report(self, result, incremental, refit=phase.refit)
        # (diverging already warns with its advice; reaching max_iter says
        # nothing of the cause of a constant prediction, e.g. a huge tau)
        if ((not records.continued or bool(phase.continues))
                and result.status != "diverged"):
            _advice.check_learned(self, problem, result, unscaled, x_max, penalty0,
                                  theta0, theta)
        return result.status

    def _one_solve(self, problem, plan, phase, reuse, theta0, start, rng, monitor_args):
        """One solve of ``problem`` from ``start`` (θ0 if None): a ``Solved``."""
        validation, callback_rows, dtype, inputs = monitor_args
        records = Records(self, reuse, plan.early_stopping)
        early = (EarlyStopping(self.tol, self.n_iter_no_change, theta0,
                               records.best_validation_score,
                               records.validation_scores)
                 if plan.early_stopping else None)
        rules = (early,) if early else (phase.watch,) if phase.watch else ()
        solver = self._make_solver(problem, plan, rules)
        # (callbacks reconstruct weights and input/target maps, no posterior)
        monitor = Monitor(self, problem.network, problem.loss, validation, records,
                          theta0, solver.max_iter, callback_rows, dtype, inputs)
        result = solver.solve(problem, theta0 if start is None else start, rng,
                              monitor, self._continued_state(records, problem.tau),
                              time_offset=records.elapsed)
        return Solved(problem, records, early, monitor, result,
                      solver.batching.batch_size)

    def _continued_state(self, records, tau):
        """A copy of the solver's state that the solve continues, or None."""
        if not (records.continued and hasattr(self, "_solver_state")):
            return None
        state = copy.deepcopy(self._solver_state)
        if getattr(self, "tau_", tau) != tau:
            # another τ is another objective (tau="auto" after partial_fit's
            # 1e-4, or on other rows): its epochs are not judged against the
            # best and last ones of the earlier objective, and the damping
            # starts again from its initial λ
            state.new_objective(restart=True)
        return state

    def _solved_attributes(self, network, problem, X, result, theta, dtype, rng,
                           incremental, target_attributes, given):
        """The fitted attributes of a solve that ended at ``theta`` (``X``
        the rows as the network saw them): the weights in X's ``dtype``,
        the posterior's cache, the network's form and the state a warm
        start or ``partial_fit`` continues from."""
        attributes = {name + "_": value for name, value
                      in self._weights(network, theta, dtype).items()}
        # the Laplace posterior is computed on first use (_posterior), from
        # the rows and parameters this fit keeps in its cache
        attributes["_posterior_cache"] = posterior_cache(
            self, self._posterior_unavailable(incremental, problem.tau),
            X, problem.Y, problem.sample_weight, problem.tau, theta,
            incremental, target_attributes, sources=given)
        attributes.update(
            _network_form=(network.activation, network.kappa,
                           network.fit_intercept),
            _fit_loss=self.loss,
            # (a seed for what the posterior fits on first use: from a copy,
            # so that the fit's stream does not move, and fixed now, so that
            # the first use does not draw from random_state then)
            _posterior_seed=int(copy.deepcopy(rng).randint(np.iinfo(np.int32).max)),
            _rng=rng, _solver_state=result.state,
            linear_solver_=result.linear_solver)
        return attributes

    def _mapped_inputs(self, network, input_map, X, work):
        """``(X, Xa, (x_max, unscaled))``: the inputs as the network sees
        them through the fitted ``input_map`` (``Xa`` their augmented form
        when mapped straight into it, as when X's dtype is the one the
        steps compute in), and what :func:`_advice.check_inputs` found."""
        X, Xa = (network.augment_mapped(X, input_map) if X.dtype == work
                 else (input_map._map(X), None))
        return X, Xa, _advice.check_inputs(
            X, mapped=not isinstance(input_map, Identity))

    def _mapped_validation(self, validation, target_attributes, input_map,
                           dtype, work):
        """The validation rows as the network sees them, with their scorer."""
        X_val, Y_val, sw_val, labels = validation
        scorer = self._validation_scorer(
            (X_val, Y_val, sw_val), labels,
            {**target_attributes, "input_map_": input_map}, dtype)
        # (the scorer predicts from the rows as given; the monitor's network
        # from the rows as the network sees them)
        X_val = input_map._map(X_val)
        return tuple(a.astype(work, copy=False)
                     for a in (X_val, Y_val, sw_val)) + (scorer,)

    def _validation_scorer(self, validation, labels, target_attributes, dtype):
        """The validation score of ``scoring``: a function of
        ``(network, θ, outputs, risk, Y_val, sw_val)`` (the validation rows'
        network outputs and risk in training units).

        ``None``: the estimator's ``score`` (accuracy, R²) from the outputs;
        ``"loss"``: minus the validation risk; a scorer name or callable:
        called as ``scorer(estimator, X_val, y_val)`` on a copy of the
        estimator that holds the current weights (with
        ``sample_weight=sw_val`` when the validation rows are weighted).
        """
        if self.scoring is None:
            return lambda network, theta, outputs, risk, Y, sw: \
                self._score_outputs(outputs, Y, sw)
        if self.scoring == "loss":
            return lambda network, theta, outputs, risk, Y, sw: -risk
        scorer = check_scoring(self, self.scoring)
        X_val, _, sw_val = validation
        weighted = not np.all(sw_val == 1)
        # the copy predicts from arrays (X_val is validated): without
        # feature names, it does not warn about them
        current = copy.copy(self)
        current.__dict__.pop("feature_names_in_", None)
        current.__dict__.update(target_attributes,
                                _posterior_cache=fitting_posterior())

        # (a callable of (estimator, X, y) alone scores the rows unweighted)
        weighted = weighted and _accepts_sample_weight(scorer)

        def score(network, theta, outputs, risk, Y, sw):
            for name, value in self._weights(network, theta, dtype).items():
                setattr(current, name + "_", value)
            if weighted:
                return float(scorer(current, X_val, labels, sample_weight=sw_val))
            return float(scorer(current, X_val, labels))

        return score
