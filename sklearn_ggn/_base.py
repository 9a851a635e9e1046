"""Shared estimator logic: validation, initialisation, warm starts, and the
fitted attributes. The numerics live in :mod:`sklearn_ggn.engine`."""

import copy
import inspect
import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import check_scoring
from sklearn.model_selection import train_test_split
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import _check_sample_weight

from . import _config
from ._activations import ACTIVATIONS
from ._inputs import robust_clip, robust_clip_statistics
from ._kernels import normalized_weights
from ._network import TwoLayerNetwork
from ._regularizers import REGULARIZERS
from ._tau import select_tau
from .engine import (
    AdaptiveDamping,
    AdaptiveStepSize,
    ArmijoLineSearch,
    Batching,
    FixedDamping,
    GGNScoreSolver,
    GradientDescentSolver,
    NoImprovement,
    Problem,
    SolverState,
    StepFailure,
    TrustDamping,
    resolve_damping,
    step_structure,
)

try:  # scikit-learn >= 1.9: progress bars and monitors (sklearn.callback)
    from sklearn.callback import CallbackSupportMixin
except ImportError:  # pragma: no cover - older scikit-learn
    class CallbackSupportMixin:
        """Stand-in without callbacks for scikit-learn < 1.9."""

# batch_size="auto": full batch while the dual system b·K stays this small.
_AUTO_FULL_BATCH_ROWS = 1024
_AUTO_BATCH_ROWS = 256
# ... and for the structured step (hessian="per_unit"), whose Gram costs
# b²(d̂ + n) and whose kernel system has one row per sample (true-vs-rest
# curvature): this many rows per batch (docs/defaults.rst).
_AUTO_STRUCTURED_ROWS = 128
# ... in full batch up to this many samples (a 700-row one-hot task ran 66
# full-batch iterations in 2.8x the MLP's time, and 0.65x as mini-batches
# at a better accuracy; docs/defaults.rst)
_AUTO_STRUCTURED_FULL_BATCH_ROWS = 512


class FitPlan(NamedTuple):
    """Every "auto" rule of one fit, resolved from the parameters and the
    data's shape (:func:`plan_fit`); the solver is built from it.

    Attributes
    ----------
    batch_size : int
        Rows per step.
    merge_short : bool
        Whether a short last batch joins the one before (``"auto"`` only).
    full_batch : bool
        Whether every step sees all rows (never for ``partial_fit``).
    float64_work : bool
        Whether a float32 fit computes in float64 (small full batches).
    tau_rule : {"given", "mini_batch", "samples", "select"}
        How τ is set: the parameter, the mini-batch value, ``10 / Σw``, or
        chosen from there by generalized cross-validation (``tau="auto"``)
        or the evidence (``tau="evidence"``).
    curvature, hessian : str
        The step's output curvature and H ("auto" resolved).
    structured : bool
        Per-unit H with one kernel row per sample (the structured defaults
        of batches, damping and line search apply).
    line_search : bool
        Armijo backtracking.
    max_iter : int
        Iterations or epochs of this call (1 for ``partial_fit``).
    stops_on_objective : bool
        Whether the objective's no-improvement rule ends the fit (not with
        early stopping, whose validation score decides, nor for
        ``partial_fit``).
    stop_when_stalled : bool
        Whether a zero line-search step or the damping's stalled epochs end
        the fit (not with ``n_iter_no_change=np.inf``).
    damping_ends_fit : bool
        Whether the adaptive damping's stalled epochs end the fit (not with
        early stopping: they only raise the damping).
    incremental : bool
        A ``partial_fit`` call.
    """

    batch_size: int
    merge_short: bool
    full_batch: bool
    float64_work: bool
    tau_rule: str
    curvature: str
    hessian: str
    structured: bool
    line_search: bool
    max_iter: int
    stops_on_objective: bool
    stop_when_stalled: bool
    damping_ends_fit: bool
    incremental: bool


def _step_options(curvature, hessian):
    """``(curvature, hessian)`` of the step, "auto" resolved."""
    return ("true_vs_rest" if curvature == "auto" else curvature,
            "per_unit" if hessian == "auto" else hessian)


def _watches(early_stopping):
    """Whether ``early_stopping`` asks for the overfitting watch (``"auto"``;
    a bool, NumPy's included, is early stopping on or off)."""
    return isinstance(early_stopping, str) and early_stopping == "auto"


def plan_fit(params, n_samples, n_outputs, *, structure, full_batch_rows,
             selects_tau, incremental=False, early_stopping=False, warn=True):
    """The :class:`FitPlan` of a fit: every "auto" rule in one place.

    A pure function of the estimator's parameters (``get_params``), the
    data's shape and what the estimator's loss implies: the step's
    ``structure`` (``engine.step_structure``), the rows up to which the
    structured step keeps full batches, and whether ``tau="auto"`` is chosen
    by GCV there.

    * ``batch_size="auto"``: the structured step (one kernel row per
      sample) in full batch up to ``full_batch_rows`` rows, else batches of
      ``_AUTO_STRUCTURED_ROWS``; the exact step in full batch while
      ``n_samples · K ≤ _AUTO_FULL_BATCH_ROWS``, else ``256 // K`` rows.
      ``partial_fit`` streams chunks of a larger set: always the mini-batches.
    * A full-batch fit of up to ``_AUTO_FULL_BATCH_ROWS`` rows computes in
      float64 (its solves to convergence amplify float32 rounding).
    * ``tau="auto"`` (and ``"evidence"``): ``max(_AUTO_TAU_MINI_BATCH,
      1 / Σw)`` on mini-batches (the floor alone in ``partial_fit``), else
      ``10 / Σw`` (capped), refined by GCV (or the evidence) where
      ``selects_tau``.
    * ``line_search="auto"``: in full batch, and on the exact step's
      mini-batches; not on the structured step's (the adaptive damping's
      test on the next batch guards them).
    """
    structured = structure.get("per_unit", False) and structure.get("rank") == 1
    size = params["batch_size"]
    if size is None:
        batch_size = n_samples
    elif size == "auto":
        if structured:
            batch_size = (n_samples if n_samples <= full_batch_rows
                          and not incremental
                          else min(n_samples, _AUTO_STRUCTURED_ROWS))
        elif n_samples * n_outputs <= _AUTO_FULL_BATCH_ROWS and not incremental:
            batch_size = n_samples
        else:  # the exact step: 256 rows of the kernel system, all outputs
            batch_size = min(n_samples, max(1, _AUTO_BATCH_ROWS // n_outputs))
    else:
        if size > n_samples and warn:
            warnings.warn(f"batch_size={size} is larger than the {n_samples} "
                          "training samples; using a full batch.")
        batch_size = min(size, n_samples)
    full_batch = batch_size >= n_samples and not incremental
    if params["tau"] not in ("auto", "evidence"):
        tau_rule = "given"
    elif not full_batch:
        tau_rule = "mini_batch"
    else:
        tau_rule = "select" if selects_tau else "samples"
    line_search = params["line_search"]
    if line_search == "auto":
        line_search = full_batch or not structured
    curvature, hessian = _step_options(params["curvature"], params["hessian"])
    return FitPlan(
        batch_size=batch_size, merge_short=size == "auto", full_batch=full_batch,
        float64_work=full_batch and n_samples <= _AUTO_FULL_BATCH_ROWS,
        tau_rule=tau_rule, curvature=curvature, hessian=hessian,
        structured=structured, line_search=bool(line_search),
        max_iter=1 if incremental else params["max_iter"],
        stops_on_objective=not (incremental or early_stopping),
        stop_when_stalled=params["n_iter_no_change"] != np.inf,
        damping_ends_fit=not early_stopping, incremental=incremental)


def _rule_tau(sample_weight):
    """τ of ``tau="auto"``'s full-batch rule: ``min(0.01, 10/n)``, samples
    counted as frequency weights (a row of weight 2 counts as the same row
    twice). The full-batch damping starts there too."""
    return min(_AUTO_TAU_MAX, _AUTO_TAU_SAMPLES / float(np.sum(sample_weight)))


# tau="auto": the penalty weighs as much as this many samples' loss
# (τ = c / n_samples). Chosen on 8 small data sets (issue 8 study, seeds 0-2):
# c = 5-10 put all of them within 0.01 of scikit-learn's MLP or above it
# (diabetes R² 0.40-0.43 against the MLP's 0.34, where τ = 1e-4 interpolates
# to R² < 0), and converges sooner than τ = 1e-4.
_AUTO_TAU_SAMPLES = 10.0
# ... capped: on tiny, clean data sets (60-100 rows, noise-free targets) 10/n
# underfits (τ = 0.17: train R² 0.22, CV R² 0.12; τ = 0.01: 0.97 / 0.92),
# while the study's sets keep their margins at 0.01.
_AUTO_TAU_MAX = 1e-2
# ... in full batch. Mini-batch fits and partial_fit have the floor τ = 1e-4:
# the batches' noise and the adaptive damping's stall rule already
# regularize, and 10/n cost accuracy there (letter 0.937 against 0.951,
# friedman1 with 3 000 rows R² 0.937 against 0.951; a 5-class noisy set
# gained, 0.738 against 0.712, still both above the MLP); partial_fit keeps
# τ independent of the chunk size of a stream.
_AUTO_TAU_MINI_BATCH = 1e-4
# ... raised to this many samples' loss, τ = max(1e-4, c / n), in a
# mini-batch fit (not partial_fit: a chunk is not the data set). On the 14
# public real tables of fewer than 10 000 rows of benchmarks/realdata.py
# (seeds 0-2) 8 missed the MLP on some seed with 1e-4 alone, 4 with c = 1
# (c = 3: 5, c = 10: 6, costing clean tables up to 0.03). Corrected tables
# (no leaking columns, panels split by person): 7 → 4 of 20; on 25 tables
# kept out of the choice 2 → 3, mean score +0.003; the panel's
# geometric-mean time 0.50 → 0.57 (docs/defaults.rst, "0.9.0").
_AUTO_TAU_MINI_BATCH_SAMPLES = 1.0


def _rows_weight(sample_weight, dtype):
    """The weights' sum, the rows' count of ``tau="auto"``: taken in X's
    ``dtype`` (as the fit takes them), summed in float64."""
    return float(np.sum(np.asarray(sample_weight, dtype=dtype)
                        .astype(np.float64, copy=False)))


def _mini_batch_tau(rows_weight):
    """τ of ``tau="auto"`` in a mini-batch fit: ``max(1e-4, 1/n)``, samples
    counted as frequency weights, capped as the full-batch rule is (weights
    that sum to less than 100 rows, e.g. normalized to one, take 0.01)."""
    return min(_AUTO_TAU_MAX, max(_AUTO_TAU_MINI_BATCH,
                                  _AUTO_TAU_MINI_BATCH_SAMPLES / rows_weight))


# Full-batch regression with the squared error: τ minimizing the generalized
# cross-validation of the problem linearized at the initial weights (ridge on
# θ, see _tau.py), on a grid 1e-6..1 (issue 18 study: within 0.008 of the best
# τ in hindsight on five data sets, seeds 0-1; docs/defaults.rst).
_AUTO_TAU_CRITERION = "gcv"
# ... chosen among τ ≥ 1e-4: the linearization at θ0 cannot see the network
# leave its linear regime, which a near-Newton fit at smaller τ does (inputs
# not standardized: GCV's minimum 1e-6 gave friedman1 R² 0.80 / 0.74 against
# 0.95 / 0.93 at 1e-4); on clean data the floor cost ≤ 0.002.
_AUTO_TAU_MIN = 1e-4
# A fresh fit whose final training risk is above this fraction of the risk of
# a constant prediction has not learned: it warns (never silently).
_LEARNED_FRACTION = 0.9
# ... at max_iter, when the fit ran at least this many iterations; and it is
# an over-strong tau's doing when the penalty at the
# initial weights outweighs the constant's risk this many times and either
# shrank the weights below this fraction of their initial norm or kept every
# step size α below this (α = ᾱ / (1 + M_g η) with a huge ∇g).
_MIN_JUDGED = 10
# early_stopping="auto": the overfitting watch of a fresh mini-batch fit. A
# held-out split (validation_fraction of the rows, at most _WATCH_MAX_ROWS,
# at least _WATCH_MIN_ROWS, else no watch) is left out of the first
# _WATCH_EPOCHS epochs (at most half of max_iter). Its risk staying more than
# _WATCH_RISE above its minimum and _WATCH_GAP times above the epoch's
# training risk for _WATCH_PATIENCE epochs in a row, while the estimator's
# score on it over those epochs is on average no better than its best by
# the risk's minimum, is overfitting: the model is then refit on all rows for the
# epochs that scored best on the split. (The score's condition since 0.9.1:
# with many noisy classes the held-out log-loss grows with the confidence of
# the wrong predictions while the accuracy still improves, and the refit at
# the best epoch lost 0.01-0.06 to running on; docs/defaults.rst, "0.9.1".
# For the squared error of one output and R² it adds nothing: on one split
# the risk and the score order the epochs alike.)
# Otherwise the split's rows join the training rows and the fit goes on from
# where it is. Chosen on the panel's trajectories (docs/defaults.rst,
# "0.8.0"): the rule fires on the one-hot and mixed tasks, whose held-out
# risk rises from epoch 2-22 on (+20-170 % by the end) while the training
# risk falls, and on none of the tasks whose held-out score still improves
# at the end (the gap keeps 500 held-out rows of 35 000 from calling the
# noise of early epochs overfitting: their risk stays within 0.85-1.13 of
# the training risk).
_WATCH_EPOCHS = 15
# ... and for a regressor, on from there while the held-out risk stands more
# than _WATCH_GAP times the training risk (the fit may memorize its rows:
# the gap condition of the rule holds) and above its minimum (at a new
# minimum the fit still learns what the held-out rows need: Forbes2000 of
# the real "holdout" tables, a heavy-tailed target whose held-out risk
# stood 7x the training risk at epoch 15 while it kept falling, was watched
# 50 epochs without this condition and lost 0.035 R²), up to this many
# epochs (at most half of max_iter). A log-loss's gap is no such sign
# (mnist10k 11-49x and a 500-feature 5-class task 390-410x at epoch 15
# while their held-out accuracy still improves), so classifiers keep 15.
# Chosen on the panel's watched trajectories (benchmarks/tail.py, seeds
# 0-2): the one-hot regressions (gap 2.6-3.3 at epoch 15) fire at epochs
# 20-44 where 15 caught two of six and the other four ran 69-75 epochs;
# no other regression's rule fires in those fits. docs/defaults.rst,
# "0.9.3".
_WATCH_MAX_EPOCHS = 50
_WATCH_RISE = 0.1
# ... 7 % for the squared error, whose held-out risk grows slowly where the
# log-loss of memorized labels soars (the panel's overfitting regressions:
# 1.17-1.35x their minimum at the end, the classifications 1.5-2.7x)
_WATCH_RISE_SQUARED = 0.07
_WATCH_GAP = 1.5
_WATCH_PATIENCE = 3
_WATCH_MIN_ROWS = 50
_WATCH_MAX_ROWS = 500
_PENALTY_DOMINATES = 100.0
_COLLAPSED_NORM = 0.1
_TINY_STEP = 1e-2
# Inputs this large break curvature-based steps (a standardized rare pixel of
# MNIST reaches 2 733): warn at fit time.
_EXTREME_INPUT = 100.0
# a first partial_fit chunk of fewer rows fixes the input map with a warning
_MAP_MIN_ROWS = 20
# Features off unit scale: a root-mean-square above this (raw iris: 5.9, raw
# digits: up to 12; standardized features: 1, min-max scaled ones: <= 1), or
# standard deviations spread over more than this ratio (dense X).
_UNSCALED_RMS = 5.0
_UNSCALED_SPREAD = 1e3
# A width is absurd for the data when it has this many parameters per
# training sample and the fit is estimated at this many flops (hours) or one
# step at this many bytes.
_ABSURD_PARAMS_PER_SAMPLE = 1000
_ABSURD_FIT_FLOPS = 1e13
_ABSURD_STEP_BYTES = 2 * 2**30
# Attributes the callback machinery of scikit-learn keeps during a fit; a
# failed fit restores everything else.
_CALLBACK_ATTRIBUTES = ("_callback_fit_ctx", "_skl_callbacks_to_teardown")


class _Number(Interval):
    """An :class:`Interval` that rejects booleans: ``True`` is an ``Integral``
    and a ``Real`` to Python, but never a meaningful hyperparameter value."""

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


def _scaling_advice(X):
    """The first remedy a scale warning names: the estimator's own input
    map, dense or sparse X (these warnings fire only without it)."""
    return "use input_transform='robust_clip' (the default), or "


def _unscaled_features(X):
    """A sentence naming how X's features are off unit scale, or None."""
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0), dtype=float).ravel()
        mean_sq = np.asarray(X.multiply(X).mean(axis=0), dtype=float).ravel()
    else:
        mean = X.mean(axis=0, dtype=np.float64)
        mean_sq = np.einsum("ij,ij->j", X, X, dtype=np.float64) / X.shape[0]
    rms = np.sqrt(mean_sq)
    std = np.sqrt(np.maximum(mean_sq - mean**2, 0.0))
    j = int(np.argmax(rms))
    if rms[j] > _UNSCALED_RMS:
        return (f"feature {j} has root-mean-square {rms[j]:.3g} (mean "
                f"{mean[j]:.3g}, standard deviation {std[j]:.3g})")
    varying = std[std > 1e-12 * max(float(std.max()), 1e-300)]
    if not sp.issparse(X) and varying.size >= 2 and (
            varying.max() > _UNSCALED_SPREAD * varying.min()):
        return (f"the features' standard deviations range from "
                f"{varying.min():.3g} to {varying.max():.3g}")
    return None


# The damping strategies a fitted estimator may carry in its solver state,
# by the name its plain-dict form records.
_DAMPING_STRATEGIES = {cls.__name__: cls for cls in
                       (AdaptiveDamping, FixedDamping, TrustDamping)}


def _plain(value):
    """A NumPy scalar as the Python number it holds (other values as they
    are)."""
    return value.item() if isinstance(value, np.generic) else value


def _solver_state_to_dict(state):
    """:class:`SolverState` as a dict of numbers, strings and None (the
    damping strategy as its class name and attributes)."""
    plain = {name: _plain(getattr(state, name)) for name in
             ("initial_objective", "best_objective", "n_iter", "n_steps",
              "step_to")}
    # (partial_fit's last step, judged by the next call: an array, which
    # skops and pickle store as such)
    plain["step_from"] = (None if state.step_from is None
                          else np.array(state.step_from))
    damping = state.damping
    if damping is not None:
        if type(damping).__name__ not in _DAMPING_STRATEGIES:
            raise TypeError(f"cannot store the damping strategy "
                            f"{type(damping).__name__} as a plain dict")
        damping = {"strategy": type(damping).__name__,
                   "attributes": {k: _plain(v) for k, v in vars(damping).items()}}
    plain["damping"] = damping
    return plain


def _solver_state_from_dict(plain):
    """The :class:`SolverState` stored by :func:`_solver_state_to_dict`."""
    plain = dict(plain)
    damping = plain.pop("damping", None)
    if damping is not None:
        strategy = _DAMPING_STRATEGIES[damping["strategy"]]
        restored = strategy.__new__(strategy)
        restored.__dict__.update(damping["attributes"])
        damping = restored
    return SolverState(damping=damping, **plain)


def _no_posterior(reason):
    """The posterior's attributes of a fit that has none, and why."""
    return {"_laplace": None, "uncertainty_": None,
            "log_marginal_likelihood_": None, "_laplace_unavailable": reason}


def _fitting_posterior():
    """The posterior cache of the copies that score a model during its fit
    (validation scores, scikit-learn's callbacks): none, so that they use
    the fitted logits (a probit predictive needs the final weights')."""
    return {"state": _no_posterior("the model is being fitted"), "inputs": None}


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


def _kappa(scaling, n_hidden):
    if scaling == "ntk":
        return 1.0 / np.sqrt(n_hidden)
    if scaling == "mean_field":
        return 1.0 / n_hidden
    return float(scaling)


class BaseGGNScore(CallbackSupportMixin, BaseEstimator, metaclass=ABCMeta):
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
        "tau": [StrOptions({"auto", "evidence"}),
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
        "input_transform": [StrOptions({"robust_clip"}), None],
    }

    @abstractmethod
    def __init__(self, n_hidden, activation, scaling, fit_intercept, regularizer,
                 mu, tau, step_size, damping, line_search, linear_solver, solver,
                 learning_rate, batch_size, max_iter, tol, n_iter_no_change,
                 early_stopping, validation_fraction, shuffle, random_state,
                 warm_start, verbose, store_initial_weights, curvature="auto",
                 hessian="auto", scoring=None, input_transform="robust_clip"):
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

    # ---------------------------------------------------------- persistence
    def __getstate__(self):
        """The state for pickle and ``skops.io``: the solver's state carried
        to the next warm start or ``partial_fit`` (``_solver_state``) as a
        plain dict of numbers and strings, so that a ``skops`` file of a
        fitted estimator names no type but the estimator's own class; the
        Laplace posterior computed (not the training rows it is computed
        from)."""
        cache = self.__dict__.get("_posterior_cache")
        if cache is not None and cache["inputs"] is not None:
            self._posterior()
        state = super().__getstate__()
        solver_state = state.get("_solver_state")
        if isinstance(solver_state, SolverState):
            state = dict(state, _solver_state=_solver_state_to_dict(solver_state))
        return state

    # Copies take the state as it is (a posterior not yet computed stays so):
    # __getstate__ is for pickle and skops.
    def __copy__(self):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __setstate__(self, state):
        solver_state = state.get("_solver_state")
        if isinstance(solver_state, dict):
            state = dict(state, _solver_state=_solver_state_from_dict(solver_state))
        if "_posterior_state" in state:  # stored by 0.9.1 and before
            state = dict(state)
            state["_posterior_cache"] = {"state": state.pop("_posterior_state"),
                                         "inputs": None}
            state.pop("_posterior_inputs", None)
        super().__setstate__(state)

    # ---------------------------------------------------------------- hooks
    @abstractmethod
    def _validate_input(self, X, y, reset, classes=None):
        """Return ``(X, Y)`` with Y the (b × K) training targets in X's dtype."""

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
        ``_AUTO_FULL_BATCH_ROWS`` rows with the structured step (the
        regressor's squared error, which chooses τ by GCV there, and its
        Huber loss)."""
        return self._selects_tau()

    def _select_tau(self, network, X, Y, sample_weight, theta0, rule, rng,
                    fresh_start):
        """``(τ, tau_path_)`` of ``tau="auto"`` in full batch: the τ ≥ 1e-4 of
        :data:`~sklearn_ggn._tau.TAU_GRID` minimizing the GCV of the problem
        linearized at θ0 (see ``sklearn_ggn._tau``); ``rule`` when the
        criterion cannot choose. A warm start that continues a fit keeps that
        fit's τ (the same objective)."""
        if not fresh_start and getattr(self, "tau_path_", None) is not None:
            return self.tau_, self.tau_path_
        probe = Problem(network, self._loss_object(), self._regularizer_object(),
                        rule, X, Y, sample_weight, regularized=False)
        criterion = "evidence" if self.tau == "evidence" else _AUTO_TAU_CRITERION
        # a copy: the subsample (more than MAX_GRAM_ROWS rows) does not move
        # the estimator's random stream
        tau, path = select_tau(probe, theta0, copy.deepcopy(rng),
                               criterion=criterion,
                               response="parameters", tau_min=_AUTO_TAU_MIN)
        path.update(criterion=criterion, tau_min=_AUTO_TAU_MIN)
        return (rule if tau is None else tau), path

    # --------------------------------------------------------------- helpers
    def _network(self, n_features, n_outputs):
        return TwoLayerNetwork(
            n_features, self.n_hidden, n_outputs,
            _kappa(self.scaling, self.n_hidden), self.activation, self.fit_intercept,
        )

    def _regularizer_object(self):
        mu = 1.0 / _kappa(self.scaling, self.n_hidden) if self.mu == "auto" else self.mu
        return REGULARIZERS[self.regularizer](mu)

    def _initial_theta(self, network, dtype, rng, reuse):
        """θ0: from the public weight attributes when warm-starting, else drawn.

        Draw: ``U_ij ~ N(0, 1/d)`` (pre-activations of order one for
        standardised inputs), ``V_ic ~ N(0, 1)``, zero biases.
        """
        n, d, K = network.n_hidden, network.n_features, network.n_outputs
        if reuse and hasattr(self, "hidden_weights_"):
            expected = {"hidden_weights_": (n, d), "output_weights_": (n, K)}
            if self.fit_intercept:
                expected.update(hidden_intercept_=(n,), output_intercept_=(K,))
            parts = {}
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
                        f"(n_hidden={n}, n_features={d}, n_outputs={K})."
                    )
                if not np.all(np.isfinite(value)):
                    raise ValueError(f"{name} contains NaN or infinity.")
                parts[name] = value
            return network.pack(parts["hidden_weights_"], parts["output_weights_"],
                                parts.get("hidden_intercept_"),
                                parts.get("output_intercept_"), dtype=dtype)
        U = rng.standard_normal((n, d)) / np.sqrt(d)
        V = rng.standard_normal((n, K))
        return network.pack(U, V, np.zeros(n), np.zeros(K), dtype=dtype)

    def _weights(self, network, theta, dtype):
        """The public weight attributes (names without the trailing ``_``), in
        ``dtype`` (X's)."""
        U, b_h, V, b_o = (w if w is None else w.astype(dtype, copy=False)
                          for w in network.public_weights(theta))
        weights = {"hidden_weights": U, "output_weights": V}
        if self.fit_intercept:
            weights["hidden_intercept"] = b_h
            weights["output_intercept"] = b_o
        return weights

    def _input_statistics(self, X, sample_weight, fresh_start, incremental=False):
        """``(input_center_, input_scale_)`` of this fit: from the training
        rows on a fresh start (``input_transform="robust_clip"``, dense X),
        else those of the fit whose weights are reused (a warm start or
        ``partial_fit`` continues the same map; weights set by hand before
        any fit are on the inputs as this fit maps them); ``(None, None)``
        when the network sees X as given."""
        if not fresh_start and "input_center_" in self.__dict__:
            return self.input_center_, self.input_scale_
        if self.input_transform == "robust_clip":
            center, scale = robust_clip_statistics(X, sample_weight)
            if incremental:
                # the first partial_fit chunk sets the map for the stream: a
                # column constant in it (a level absent from it, a pixel
                # never lit there, every column of a one-row chunk) is
                # centered, not zeroed for good
                scale = np.where(scale > 0, scale, 1.0)
                if X.shape[0] < _MAP_MIN_ROWS:
                    warnings.warn(
                        "input_transform='robust_clip' takes its statistics "
                        f"from the first partial_fit chunk, here {X.shape[0]} "
                        "row(s), and keeps them for the whole stream. Give "
                        f"partial_fit a first chunk of {_MAP_MIN_ROWS} rows or "
                        "more that represents the data, or scale the inputs "
                        "yourself and set input_transform=None.", UserWarning)
            return center, scale
        return None, None

    def _network_inputs(self, X, augmented=False):
        """Validated X as the network sees it: through the fitted
        ``input_transform`` (``input_center_``, ``input_scale_``).

        ``augmented=True`` returns ``(Z, Ẑ)`` with ``Ẑ`` the network's
        augmented inputs and ``Z`` a view of their first columns when the
        map can be written straight into them (X in the weights' dtype),
        else ``(Z, None)``."""
        center = getattr(self, "input_center_", None)
        scale = getattr(self, "input_scale_", None)
        if not augmented:
            return robust_clip(X, center, scale)
        if X.dtype != self.hidden_weights_.dtype:
            return robust_clip(X, center, scale), None
        return self._network(X.shape[1], self.output_weights_.shape[1]
                             ).augment_mapped(X, center, scale)

    def _raw_output(self, X):
        """Φ(X) of shape (n_samples, n_outputs_) from the public weights, for
        validated X in the weights' dtype."""
        return self._outputs_at(*self._network_inputs(X, augmented=True))

    def _outputs_at(self, Z, Za=None):
        """Φ from the public weights at the network's inputs ``Z``
        (:meth:`_network_inputs` of validated X, in the weights' dtype), or
        at their augmented form ``Za`` when given."""
        network = self._network(Z.shape[1], self.output_weights_.shape[1])
        theta = network.pack(self.hidden_weights_, self.output_weights_,
                             getattr(self, "hidden_intercept_", None),
                             getattr(self, "output_intercept_", None),
                             dtype=self.hidden_weights_.dtype)
        return network.forward(theta, network.augment(Z) if Za is None else Za,
                               with_deriv=False).outputs

    def _step_structure(self, n_outputs):
        """The structure of this estimator's steps (the engine's
        ``step_structure``; empty for the exact step and for ``solver="gd"``)."""
        if self.solver != "ggn":
            return {}
        curvature, hessian = _step_options(self.curvature, self.hessian)
        return step_structure(curvature, hessian, self._loss_object(), n_outputs)

    def _plan(self, n_samples, n_outputs, incremental=False, early_stopping=False,
              warn=True):
        """This fit's :class:`FitPlan`: :func:`plan_fit` of the parameters
        and the data's shape."""
        params = self.get_params(deep=False)
        phase = self.__dict__.get("_watch_phase")
        if phase is not None:
            params["max_iter"] = phase["max_iter"]
        return plan_fit(params, n_samples, n_outputs,
                        structure=self._step_structure(n_outputs),
                        full_batch_rows=(_AUTO_FULL_BATCH_ROWS
                                         if self._full_batch_regression()
                                         else _AUTO_STRUCTURED_FULL_BATCH_ROWS),
                        selects_tau=self._selects_tau(), incremental=incremental,
                        early_stopping=early_stopping, warn=warn)

    def _make_solver(self, problem, plan):
        """The engine's solver for this fit's :class:`FitPlan`."""
        batching = Batching(plan.batch_size, self.shuffle,
                            merge_short=plan.merge_short)
        stopping = (NoImprovement(self.tol, self.n_iter_no_change)
                    if plan.stops_on_objective else None)
        if self.solver == "gd":
            return GradientDescentSolver(self.learning_rate, batching,
                                         plan.max_iter, stopping)
        return GGNScoreSolver(
            resolve_damping(self.damping, problem.tau, plan.full_batch,
                            1.0 / problem.regularizer.hessian(np.zeros(1))[0],
                            structured=plan.structured,
                            start=_rule_tau(problem.sample_weight)),
            AdaptiveStepSize(self.step_size),
            ArmijoLineSearch() if plan.line_search else None,
            self.linear_solver, batching, plan.max_iter, stopping,
            epochs_are_passes=not plan.incremental, curvature=plan.curvature,
            hessian=plan.hessian, stop_when_stalled=plan.stop_when_stalled,
            damping_ends_fit=plan.damping_ends_fit)

    # ------------------------------------------------------------------ fit
    def _fit(self, X, y, sample_weight=None, incremental=False, classes=None,
             X_val=None, y_val=None, sample_weight_val=None):
        """Fit as one transaction: on any exception (a validation error,
        MemoryError, KeyboardInterrupt, a numerical error) the estimator is
        left exactly as it was before the call."""
        _config.note_first_compile()
        snapshot = self.__dict__.copy()
        try:
            watch = None
            if not incremental and X_val is None and _watches(self.early_stopping):
                watch = self._watch_split(X, y, sample_weight, classes)
            if watch is None:
                self._fit_transaction(X, y, sample_weight, incremental, classes,
                                      X_val, y_val, sample_weight_val)
                # (a warm start or partial_fit continuing keeps what the
                # first fit's watch found)
                continues = incremental or self.warm_start
                self.overfitting_watch_ = (
                    self.__dict__.get("overfitting_watch_") if continues else None)
                return self
            return self._fit_watched(*watch)
        except BaseException:
            kept = {k: self.__dict__[k] for k in _CALLBACK_ATTRIBUTES
                    if k in self.__dict__}
            self.__dict__.clear()
            self.__dict__.update(snapshot)
            self.__dict__.update(kept)
            raise
        finally:
            self.__dict__.pop("_watch_phase", None)
            self.__dict__.pop("_watch_stopped_at", None)

    def _watch_split(self, X, y, sample_weight, classes):
        """The arguments of :meth:`_fit_watched` for ``early_stopping="auto"``'s
        overfitting watch, or None when this fit has none: a fresh
        mini-batch fit (no warm start continuing, no scikit-learn callbacks,
        whose context is one fit) with enough rows for the split, every
        class on both of its sides, some weight on each, and mini-batches on
        the watch's rows as on all of them."""
        if self.warm_start and hasattr(self, "hidden_weights_"):
            return None  # (continuing a fit, or weights set by hand)
        if self.__dict__.get("_skl_callbacks"):
            return None
        epochs = min(_WATCH_EPOCHS, self.max_iter // 2)
        if epochs < _WATCH_PATIENCE + 2:
            return None
        # (at least `epochs`: both are max_iter // 2 capped, at 15 and 50)
        longest = (min(_WATCH_MAX_EPOCHS, self.max_iter // 2)
                   if self._watch_extends() else epochs)
        # (the fit validates X and y again and says what it finds once)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X_checked, Y = self._validate_input(X, y, reset=True, classes=classes)
        n_samples = X_checked.shape[0]
        n_val = min(_WATCH_MAX_ROWS, int(np.ceil(self.validation_fraction * n_samples)))
        n_train = n_samples - n_val
        if n_val < _WATCH_MIN_ROWS or n_train < _WATCH_MIN_ROWS:
            return None
        if (self._plan(n_train, Y.shape[1], warn=False).full_batch
                or self._plan(n_samples, Y.shape[1], warn=False).full_batch):
            return None
        stratify = None
        if is_classifier(self) and not getattr(self, "_multilabel", False):
            stratify = Y.argmax(axis=1) if Y.shape[1] > 1 else Y[:, 0]
            counts = np.bincount(stratify.astype(np.intp))
            counts = counts[counts > 0]
            if counts.min() < 2 or min(n_val, n_train) < counts.size:
                return None
        sample_weight = _check_sample_weight(sample_weight, X_checked,
                                             dtype=np.float64,
                                             ensure_non_negative=True)
        # One seed for the split, the watch and the refit: the refit starts
        # from the watch's initial weights whatever random_state is (an int
        # is its own seed, as in the fit without the watch).
        if isinstance(self.random_state, Integral):
            seed = int(self.random_state)
        else:
            seed = int(check_random_state(self.random_state).randint(
                np.iinfo(np.int32).max))
        idx_train, idx_val = train_test_split(
            np.arange(n_samples), test_size=n_val,
            random_state=check_random_state(seed), stratify=stratify)
        idx_train, idx_val = np.sort(idx_train), np.sort(idx_val)
        # the held-out rows weigh as the fit weighs them (class_weight), and
        # the count of rows for tau="auto" of the watch's fit on part of
        # them is summed as the fits of all rows sum it (class weights too)
        weighed = self._with_class_weight(sample_weight, Y)
        if not (weighed[idx_train].sum() > 0 and weighed[idx_val].sum() > 0):
            return None
        rows_weight = _rows_weight(weighed, X_checked.dtype)
        val_weight = weighed[idx_val]
        # rows by position: formats without row indexing become CSR
        if sp.issparse(X) and X.format not in ("csr", "csc"):
            X = X.tocsr()
        if sp.issparse(y) and y.format not in ("csr", "csc"):
            y = y.tocsr()
        return (X, y, sample_weight, idx_train, idx_val, val_weight, epochs,
                longest, seed, rows_weight)

    def _watch_extends(self):
        """Whether the overfitting watch goes on beyond ``_WATCH_EPOCHS``
        while the held-out risk stands ``_WATCH_GAP`` times above the
        training risk and above its minimum (the regressor: a log-loss's
        gap also grows with the confidence of wrong predictions while the
        accuracy improves)."""
        return not is_classifier(self)

    def _fit_watched(self, X, y, sample_weight, idx_train, idx_val, val_weight,
                     epochs, longest, seed, rows_weight):
        """The fit of ``early_stopping="auto"``: the watch, then all rows."""
        def rows(a, idx):
            # (rows by position of arrays, sparse matrices, lists and
            # DataFrames alike)
            return None if a is None else _safe_indexing(a, idx)

        # at least `epochs` epochs, at most `longest` (see _WATCH_MAX_EPOCHS)
        self._watch_phase = {"max_iter": longest, "watch": True, "seed": seed,
                             "rows_weight": rows_weight, "watch_epochs": epochs}
        # the watch's own fit is internal: its warnings (max_iter reached,
        # the input's advice) belong to the fit on all rows, which repeats them
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._fit_transaction(
                rows(X, idx_train), rows(y, idx_train), sample_weight[idx_train],
                False, None, rows(X, idx_val), rows(y, idx_val), val_weight)
        watched = len(self.loss_curve_)
        diverged = self._watch_phase.get("status") == "diverged"
        stopped_at = self.__dict__.get("_watch_stopped_at")
        risks = list(self.history_.get("validation_risk", []))
        scores = list(self.history_.get("validation_score", []))
        scored = bool(np.isfinite(scores).any())
        best = None
        if stopped_at is not None:
            # the epoch that scored best, or without a finite score (a scorer
            # that failed) the one of the least held-out risk
            best = int(np.argmax(np.nan_to_num(scores, nan=-np.inf)) if scored
                       else np.nanargmin(risks)) + 1
        watch = {"validation_rows": int(len(idx_val)), "epochs": watched,
                 "overfitting": stopped_at is not None, "best_epoch": best,
                 "validation_loss_curve": risks, "validation_scores": scores}
        if stopped_at is not None:
            # overfitting: the same fit on all rows, ended at the best epoch
            if self.verbose:
                print(f"Overfitting watch: the held-out risk rose for "
                      f"{_WATCH_PATIENCE} epochs"
                      + (", its score no better; refitting on all rows for the "
                         f"{best} epochs that scored best on them." if scored else
                         f"; refitting on all rows for the {best} epochs of its "
                         "least risk (no finite held-out score)."))
            self._watch_phase = {"max_iter": best, "refit": True, "seed": seed}
            self._fit_transaction(X, y, sample_weight, False, None, None, None, None)
        elif watched < epochs or diverged:
            # the watch's fit diverged, or converged before the watch's first
            # _WATCH_EPOCHS ended: the ordinary fit on all rows (one that
            # converged while a regressor's watch went on joins them, below)
            if self.verbose:
                print("Overfitting watch: "
                      + ("the watch's fit diverged" if diverged
                         else "the fit ended before the watch did")
                      + "; fitting on all rows.")
            self._watch_phase = {"max_iter": self.max_iter, "seed": seed}
            self._fit_transaction(X, y, sample_weight, False, None, None, None, None)
        else:
            # no overfitting: the held-out rows join, the fit goes on, on
            # the objective over all rows
            if self.verbose:
                print(f"Overfitting watch: no overfitting in {watched} epochs; "
                      "the held-out rows join the training rows.")
            self._solver_state.new_objective()
            self._watch_phase = {"max_iter": self.max_iter - watched,
                                 "continue": True, "seed": seed}
            self._fit_transaction(X, y, sample_weight, False, None, None, None, None)
            self.n_iter_ = len(self.loss_curve_)
            for key in ("validation_risk", "validation_score"):
                self.history_.pop(key, None)
            self.validation_loss_curve_ = None
        self.overfitting_watch_ = watch
        return self

    def _fit_transaction(self, X, y, sample_weight, incremental, classes, X_val,
                         y_val, sample_weight_val):
        first_call = not (incremental and hasattr(self, "n_iter_"))
        X, Y = self._validate_input(X, y, reset=first_call, classes=classes)
        dtype = X.dtype
        # targets and weights (in X's dtype, as given) held in float64 until
        # the dtype the fit computes in is known (below); X stays in its dtype
        Y = Y.astype(np.float64, copy=False)
        sample_weight = _check_sample_weight(
            sample_weight, X, dtype=dtype, ensure_non_negative=True
        ).astype(np.float64, copy=False)
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together.")
        # class weights multiply the sample weights, before the split and the
        # normalization (as compute_sample_weight's weights passed as
        # sample_weight would)
        sample_weight = self._with_class_weight(sample_weight, Y)
        if (getattr(self, "class_weight", None) is not None
                and not sample_weight.sum() > 0):
            raise ValueError(
                "The sample weights times class_weight are zero for every "
                f"row (class_weight={self.class_weight!r}): nothing to fit.")
        # the rows' count for tau="auto" on mini-batches (weights as
        # frequencies, class weights included; the watch's fit on part of
        # the rows takes all rows')
        phase = self.__dict__.get("_watch_phase")
        rows_weight = (phase or {}).get("rows_weight",
                                        _rows_weight(sample_weight, dtype))
        if isinstance(self.scoring, str) and self.scoring != "loss":
            check_scoring(self, self.scoring)  # an unknown name fails here

        # The generator is copied, not advanced in place, so that a failed
        # partial_fit leaves the estimator's stream where it was.
        # a fit of early_stopping="auto" (its phases start afresh from the
        # watch's seed, but for the one that continues the watch's fit)
        if incremental and hasattr(self, "_rng"):
            rng = copy.deepcopy(self._rng)
        else:
            rng = check_random_state(self.random_state if phase is None
                                     else phase["seed"])
        network = self._network(X.shape[1], Y.shape[1])
        reuse = (self.warm_start or (incremental and not first_call)
                 if phase is None else phase.get("continue", False))
        fresh_start = not (reuse and hasattr(self, "hidden_weights_"))
        # drawn in float64 and cast to the dtype the fit computes in (below)
        theta0 = self._initial_theta(network, np.float64, rng, reuse)
        fitted = {}  # attributes assigned when the fit succeeds
        # Targets in the units the network is trained in (the regressor's
        # standardize_target); their statistics are kept while weights are
        # reused, so that a warm start or partial_fit continues the same map.
        Y, target_attributes = self._encode_targets(Y, sample_weight,
                                                    keep=not fresh_start)
        fitted.update(target_attributes)
        if self.store_initial_weights and (fresh_start
                                           or not hasattr(self, "initial_weights_")):
            fitted["initial_weights_"] = self._weights(network, theta0, dtype)

        # Validation data: given (as in HistGradientBoosting), or with early
        # stopping a held-out split (stratified for classifiers).
        early_stopping = (not _watches(self.early_stopping)
                          and bool(self.early_stopping) and not incremental)
        validation = None
        validation_labels = None  # y of the validation rows, as given
        if X_val is not None:
            X_val, Y_val = self._validate_input(X_val, y_val, reset=False)
            Y_val = self._encode_targets(Y_val, None, keep=True,
                                         attributes=target_attributes)[0]
            X_val = X_val.astype(dtype, copy=False)
            if (sample_weight_val is not None
                    and not np.any(np.asarray(sample_weight_val) != 0)):
                raise ValueError("sample_weight_val is zero for every validation "
                                 "sample: the validation score would be undefined.")
            sw_val = _check_sample_weight(sample_weight_val, X_val, dtype=dtype,
                                          ensure_non_negative=True)
            validation = (X_val, Y_val, sw_val)
            validation_labels = y_val
        elif early_stopping:
            stratify = Y.argmax(axis=1) if is_classifier(self) else None
            if stratify is not None and Y.shape[1] == 1:
                stratify = Y[:, 0]
            if getattr(self, "_multilabel", False):
                stratify = None  # (as MLPClassifier: no stratified split)
            too_small = self._check_validation_split(X.shape[0], stratify)
            if too_small is not None:
                # as MLPClassifier's own too-small check names it, but the fit
                # goes on without early stopping (it can still learn)
                warnings.warn(f"The validation set is too small: {too_small} "
                              "Training on all samples without early stopping.",
                              UserWarning)
                early_stopping = False
        if early_stopping and validation is None:
            idx_train, idx_val = train_test_split(
                np.arange(X.shape[0]), test_size=self.validation_fraction,
                random_state=rng, stratify=stratify,
            )
            validation = (X[idx_val], Y[idx_val], sample_weight[idx_val])
            X, Y, sample_weight = X[idx_train], Y[idx_train], sample_weight[idx_train]
            # (y as given, a sparse indicator matrix as its dense array)
            labels = y.toarray() if sp.issparse(y) else np.asarray(y)
            validation_labels, y = labels[idx_val], labels[idx_train]
            if not np.sum(sample_weight) > 0:
                raise ValueError("All samples left for training after the "
                                 "early-stopping split have zero weight "
                                 "(sample_weight times class_weight).")
            if not np.sum(validation[2]) > 0:
                raise ValueError("All samples of the early-stopping split's "
                                 "validation set have zero weight (sample_weight "
                                 "times class_weight): its score would be "
                                 "undefined. Pass X_val, y_val and "
                                 "sample_weight_val, or set early_stopping=False.")

        plan = self._plan(X.shape[0], Y.shape[1], incremental, early_stopping)
        batch_size = plan.batch_size
        # A full-batch fit of small data (up to _AUTO_FULL_BATCH_ROWS rows,
        # where batch_size="auto" keeps full batches) computes in float64:
        # its steps solve the kernel system to convergence, where float32
        # rounding, amplified by the system's condition number and by the
        # line search's decisions, would move the fit away from the float64
        # one (1-2 % after a dozen steps on digits). The weights are returned
        # in X's dtype. Mini-batch fits, partial_fit and larger full batches
        # compute in X's dtype.
        work = np.float64 if plan.float64_work else dtype
        # the inputs the network sees (input_transform)
        center, scale = self._input_statistics(X, sample_weight, fresh_start,
                                               incremental)
        inputs = {"input_center_": center, "input_scale_": scale}
        fitted.update(inputs)
        # (mapped straight into the augmented array the steps read, when X's
        # dtype is the one they compute in)
        raw_X, (X, Xa) = X, (network.augment_mapped(X, center, scale)
                             if X.dtype == work
                             else (robust_clip(X, center, scale), None))
        # (max and -min: no temporary of X's size)
        x_max = float(max(X.max(), -X.min()))
        if x_max >= _EXTREME_INPUT:
            warnings.warn(
                f"X has values up to {x_max:.4g} in absolute value. Curvature-based "
                "steps are sensitive to extreme inputs (an outlying row can take "
                f"a huge step): {_scaling_advice(X)}standardize with "
                "StandardScaler, and for heavy tails use RobustScaler or "
                "QuantileTransformer, or clip the features.", UserWarning)
        # (robust_clip puts every column on unit scale)
        unscaled = _unscaled_features(X) if center is None else None
        if unscaled is not None and x_max < _EXTREME_INPUT:
            warnings.warn(
                f"The features of X are not standardized: {unscaled}. The "
                "initial weights and the curvature of the steps assume inputs "
                f"of unit scale: {_scaling_advice(X)}standardize them, e.g. with "
                "StandardScaler in a Pipeline.", UserWarning)
        training = (raw_X, y, sample_weight)  # as given to the callbacks
        # (θ0 keeps its float64 draw: rounded to float32 first, the float32
        # fit would follow the float64 one only to ~2 % on digits at
        # tau=1e-5; initial_weights_ shows it rounded to X's dtype)
        X, Y, sample_weight, theta0 = (a.astype(work, copy=False) for a in
                                       (X, Y, sample_weight, theta0))
        if validation is not None:
            scorer = self._validation_scorer(
                validation, validation_labels,
                {**target_attributes, **inputs}, dtype)
            # (the scorer predicts from the rows as given; the monitor's
            # network from the rows as the network sees them)
            validation = (robust_clip(validation[0], center, scale),) + validation[1:]
            validation = tuple(a.astype(work, copy=False) for a in validation)
            validation = validation + (scorer,)
        tau_path = None
        if plan.tau_rule == "given":
            tau = float(self.tau)
        elif plan.tau_rule == "mini_batch":
            tau = (_AUTO_TAU_MINI_BATCH if incremental else
                   _mini_batch_tau(rows_weight))
        else:
            tau = _rule_tau(sample_weight)
            if plan.tau_rule == "select":
                tau, tau_path = self._select_tau(network, X, Y, sample_weight,
                                                 theta0, tau, rng, fresh_start)
        fitted["tau_"] = tau
        fitted["tau_path_"] = tau_path
        if not incremental or first_call:
            self._check_width(network, X.shape[0], batch_size)
        problem = Problem(network, self._loss_object(), self._regularizer_object(),
                          tau, X, Y, sample_weight,
                          regularized=self.solver != "gd", Xa=Xa)
        penalty0 = float(problem.regularization(theta0)) if problem.regularized \
            else 0.0
        solver = self._make_solver(problem, plan)
        records = _Records(self, reuse, early_stopping)
        # (the epochs' reconstructions for scikit-learn's callbacks: the
        # weights, the input and target maps, no posterior)
        monitor = _Monitor(self, network, problem.loss, validation, early_stopping,
                           records, theta0, solver.max_iter, training, dtype,
                           {**target_attributes, **inputs,
                            "_posterior_cache": _fitting_posterior()})
        state = (copy.deepcopy(self._solver_state)
                 if records.continued and hasattr(self, "_solver_state") else None)
        if state is not None and getattr(self, "tau_", tau) != tau:
            # another τ is another objective (tau="auto" after partial_fit's
            # 1e-4, or on other rows): its epochs are not judged against the
            # best and last ones of the earlier objective
            state.new_objective()
        result = solver.solve(problem, theta0, rng, monitor, state,
                              time_offset=records.elapsed)
        if phase is not None:
            phase["status"] = result.status
        theta = monitor.best_theta if early_stopping else result.theta
        monitor.close(result, theta)
        self._check_finite(problem, result, theta)
        fitted.update({name + "_": value for name, value
                       in self._weights(network, theta, dtype).items()})
        fitted.update(records.attributes(result, early_stopping))
        # the Laplace posterior is computed on first use (_posterior): a fit
        # that never asks for intervals, the evidence or the probit
        # predictive does not pay its Gram over all rows. Its inputs are kept
        # in a cache of their own, with the parameters of this fit (a later
        # set_params does not change what this fit's posterior is); a fit
        # without a posterior keeps no rows.
        reason = self._posterior_unavailable(incremental, tau)
        # ("inputs": the rows and the fit's parameters, one value: a thread
        # reads both or neither)
        fitted["_posterior_cache"] = (
            {"state": _no_posterior(reason), "inputs": None}
            if reason is not None else
            {"state": None,
             "inputs": ((X, Y, sample_weight, float(tau),
                         np.array(theta, dtype=np.float64), bool(incremental),
                         dict(target_attributes)),
                        self.get_params(deep=False))})
        fitted.update(_rng=rng, _solver_state=result.state,
                      linear_solver_=result.linear_solver,
                      batch_size_=solver.batching.batch_size)
        for name, value in fitted.items():
            setattr(self, name, value)
        self._report(result, incremental)
        # (diverging already warns with its advice; reaching max_iter says
        # nothing of the cause of a constant prediction, e.g. a huge tau)
        if ((not records.continued or (phase or {}).get("continue", False))
                and result.status != "diverged"):
            self._check_learned(problem, result, unscaled, x_max, penalty0,
                                theta0, theta)
        return self

    # the prior of the Laplace posterior: the fit's ("fitted"), or scaled by
    # the evidence at the fitted weights ("evidence"; see _laplace)
    _posterior_prior_scale = "fitted"

    # the loss whose Laplace posterior the estimator offers
    _posterior_loss = None

    def _posterior_unavailable(self, incremental, tau):
        """Why no Laplace posterior is computed for this fit, or None."""
        if self._posterior_loss is None:
            return "this estimator has no predictive uncertainty"
        if self.uncertainty is None:
            return "uncertainty=None"
        if self.loss != self._posterior_loss or self.solver != "ggn":
            return (f"the Laplace posterior is defined for "
                    f"loss={self._posterior_loss!r} fitted by solver='ggn' "
                    f"(this is loss={self.loss!r}, solver={self.solver!r})"
                    + getattr(self._loss_object(), "posterior_note", ""))
        if incremental:
            return ("partial_fit sees one chunk of the data, and the posterior "
                    "needs the curvature over the whole training set: call fit")
        if not tau > 0:
            return ("tau=0 puts no prior on the weights (the Laplace "
                    "posterior is improper): use tau > 0")
        return None

    def _posterior(self):
        """The Laplace posterior's attributes (``_laplace``,
        ``uncertainty_``, ``log_marginal_likelihood_``, ...), computed on
        first use from the fit's rows with the fit's parameters and kept in
        the fit's cache (the estimator's attributes stay as the fit left
        them: a cached function of the fitted state); the rows are released
        then."""
        cache = self.__dict__.get("_posterior_cache")
        if cache is None:
            raise NotFittedError(f"This {type(self).__name__} instance is not "
                                 "fitted yet. Call 'fit' with appropriate "
                                 "arguments before using this estimator.")
        # (one read of the pending inputs; the state is stored before they
        # are released, so a thread that finds none finds the state: two
        # threads may both compute it, never neither)
        pending = cache["inputs"]
        if pending is not None:
            (X, Y, sample_weight, tau, theta, incremental, target), params = pending
            # the estimator as it was fitted (its parameters then)
            fitted = type(self).__new__(type(self))
            fitted.__dict__.update(self.__dict__)
            fitted.__dict__.update(params)
            network = fitted._network(X.shape[1], Y.shape[1])
            cache["state"] = fitted._posterior_attributes(
                network, X, Y, sample_weight, tau, theta, incremental, target)
            cache["inputs"] = None
        return cache["state"]

    @property
    def uncertainty_(self):
        """The structure of the Laplace posterior (``"dual"``, ``"primal"``,
        ``"last_layer"``), or None when there is none."""
        return self._posterior()["uncertainty_"]

    @property
    def log_marginal_likelihood_(self):
        """The log evidence of the Laplace approximation, or None."""
        return self._noise_checked()["log_marginal_likelihood_"]

    def _noise_checked(self):
        """The posterior, after a warning when its noise variance (squared
        error) has no residual degrees of freedom behind it: what uses σ̂²
        (the intervals, the evidence, ``noise_variance_``) says so."""
        state = self._posterior()
        laplace = state.get("_laplace")
        if laplace is None or laplace.get("noise_variance") is None:
            return state
        # the residual degrees of freedom of σ̂²: below one it says nothing
        targets = laplace["n_weighted"] * self.n_outputs_
        if targets - laplace["dof"] < 1.0:
            warnings.warn(
                "The noise variance cannot be estimated: the fit spends "
                f"{laplace['dof']:.3g} effective parameters on {targets:.3g} "
                "training targets (sample weights count as rows), so its "
                "residuals say nothing of the noise: its predictive standard "
                "deviations and evidence are not meaningful. Use more rows (or "
                "weights that count them), or a larger tau.", UserWarning)
        return state

    def _posterior_attributes(self, network, X, Y, sample_weight, tau, theta,
                              incremental, target_attributes):
        """The linearized Laplace posterior at the fitted θ over all training
        rows (``sklearn_ggn._laplace``), as fitted attributes: the stored
        factor ``_laplace`` (a dict of plain arrays), ``uncertainty_``,
        ``log_marginal_likelihood_`` and, for the squared error,
        ``noise_variance_``."""
        from . import _laplace

        reason = self._posterior_unavailable(incremental, tau)
        if reason is not None:
            return _no_posterior(reason)
        attributes = {"_laplace": None, "uncertainty_": None,
                      "log_marginal_likelihood_": None}
        problem = Problem(network, self._loss_object(), self._regularizer_object(),
                          tau, X.astype(np.float64, copy=False),
                          Y.astype(np.float64, copy=False),
                          sample_weight.astype(np.float64, copy=False))
        rows = int(np.count_nonzero(sample_weight > 0))
        try:
            structure = _laplace.choose_structure(self.uncertainty, network, rows,
                                                  sp.issparse(X))
        except MemoryError as exc:
            # the fit itself succeeded: keep it, with the structure that fits
            warnings.warn(f"uncertainty={self.uncertainty!r} does not fit in "
                          f"memory ({exc}); the Laplace posterior is computed "
                          "for the last layer only (uncertainty='last_layer').",
                          UserWarning)
            structure = "last_layer"
        theta = theta.astype(np.float64)
        try:
            posterior = _laplace.fit_posterior(problem, theta, structure,
                                               self._posterior_prior_scale)
        except StepFailure as exc:
            attributes["_laplace_unavailable"] = (
                f"the Laplace posterior ({structure}) could not be factorized: "
                f"{exc}")
            warnings.warn("No predictive uncertainty: "
                          f"{attributes['_laplace_unavailable']}. Try a larger "
                          "tau.", UserWarning)
            return attributes
        log_z, sigma2 = _laplace.log_evidence(problem, theta, posterior)
        posterior["noise_variance"] = sigma2
        posterior["n_weighted"] = float(np.sum(sample_weight, dtype=np.float64))
        attributes.update(_laplace=posterior, uncertainty_=structure,
                          _laplace_unavailable=None,
                          **self._evidence_attributes(log_z, sigma2, posterior,
                                                      target_attributes))
        return attributes

    def _evidence_attributes(self, log_z, sigma2, posterior, target_attributes):
        """``log_marginal_likelihood_`` (and the regressor's noise) in the
        units of y."""
        return {"log_marginal_likelihood_": log_z}

    def _output_variance(self, Z, Za=None):
        """``J(x) P⁻¹ J(x)ᵀ`` per row and output (n, K), in training units,
        at the network's inputs ``Z`` (:meth:`_network_inputs` of validated
        X), or at their augmented form ``Za`` when given."""
        from . import _laplace

        state = self._posterior()
        posterior = state["_laplace"]
        if posterior is None:
            raise ValueError(
                "No predictive uncertainty is available: "
                f"{state.get('_laplace_unavailable') or 'refit the estimator'}.")
        network = self._network(Z.shape[1], self.output_weights_.shape[1])
        theta = network.pack(self.hidden_weights_, self.output_weights_,
                             getattr(self, "hidden_intercept_", None),
                             getattr(self, "output_intercept_", None),
                             dtype=np.float64)
        variance = _laplace.output_variance(
            network, theta, posterior, network.augment(Z) if Za is None else Za)
        return variance / posterior["n_weighted"]

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
                                _posterior_cache=_fitting_posterior())

        # (a callable of (estimator, X, y) alone scores the rows unweighted)
        weighted = weighted and _accepts_sample_weight(scorer)

        def score(network, theta, outputs, risk, Y, sw):
            for name, value in self._weights(network, theta, dtype).items():
                setattr(current, name + "_", value)
            if weighted:
                return float(scorer(current, X_val, labels, sample_weight=sw_val))
            return float(scorer(current, X_val, labels))

        return score

    def _check_width(self, network, n_samples, batch_size):
        """Warn before fitting when n_hidden is absurd for the data: far more
        parameters than samples and an estimated cost of hours or a step of
        gigabytes."""
        from . import _memory

        p = network.n_params
        structure = self._step_structure(network.n_outputs)
        costs = network.step_costs(batch_size, **structure)
        # the forward passes and Jacobian products: ~10 passes over b × p
        flops = min(costs.values()) + 10.0 * batch_size * p
        nbytes = min(_memory.estimate_solver_bytes(
            batch_size, network.n_features, network.n_hidden, network.n_outputs,
            network.fit_intercept, **structure).values())
        steps = -(-n_samples // batch_size) * self.max_iter
        if (p > _ABSURD_PARAMS_PER_SAMPLE * n_samples
                and (flops * steps > _ABSURD_FIT_FLOPS
                     or nbytes > _ABSURD_STEP_BYTES)):
            warnings.warn(
                f"n_hidden={self.n_hidden} gives {p:,} parameters for "
                f"{n_samples} training samples ({p / n_samples:,.0f} per "
                f"sample); one step is estimated at {flops:.2g} flops and "
                f"{nbytes / 2**30:.2g} GiB, the fit (max_iter={self.max_iter}) "
                f"at {flops * steps:.2g} flops. Widths of 100 to a few "
                "thousand units suit data of this size: lower n_hidden.",
                UserWarning)

    @staticmethod
    def _check_finite(problem, result, theta):
        """MLPClassifier's error when the data leave no finite parameters:
        non-finite weights, or (after a divergence) weights whose training
        risk is not finite, i.e. a model that would predict NaN or inf."""
        finite = np.all(np.isfinite(theta))
        if finite and result.status == "diverged":
            with np.errstate(all="ignore"):
                evaluation = problem.evaluate(theta, problem.batch(),
                                              with_deriv=False)
            finite = np.isfinite(evaluation.objective)
        if not finite:
            raise ValueError(
                "Solver produced non-finite parameter weights. The input data may"
                " contain large values and need to be preprocessed.")

    def _check_learned(self, problem, result, unscaled, x_max, penalty0,
                       theta0, theta):
        """Warn when a fit ends no better than a constant prediction, with
        its most likely cause: an over-strong tau, unscaled features, or the
        step (damping, step_size; gd's learning_rate). At max_iter (whose
        warning already says to run longer) a fit of fewer than
        ``_MIN_JUDGED`` iterations is not judged; a longer one that still
        predicts no better than a constant warns, even when its risk is
        still creeping down."""
        risks = self.history_["risk"][-result.state.n_iter:]
        if not risks:
            return
        w = problem.sample_weight
        baseline = problem.loss.constant_risk(problem.Y, w / w.sum())
        if not baseline > 0 or not risks[-1] > _LEARNED_FRACTION * baseline:
            return  # (a constant already predicts the weighted data exactly)
        if result.status == "max_iter" and len(risks) < _MIN_JUDGED:
            return  # too short to judge: the max_iter warning says to go on
        steps = self.history_["step_size"][-len(risks):]
        shrink = np.linalg.norm(theta) / max(np.linalg.norm(theta0),
                                             np.finfo(float).tiny)
        if problem.regularized and problem.tau > 0 \
                and penalty0 > _PENALTY_DOMINATES * baseline \
                and (shrink < _COLLAPSED_NORM or max(steps) < _TINY_STEP):
            advice = (f"tau={problem.tau:.3g} is too strong: the penalty "
                      f"τ Σ ḡ(θ) at the initial weights, {penalty0:.3g}, is "
                      f"{penalty0 / baseline:.3g} times the risk of a constant "
                      f"prediction, so the penalty, not the data, drives the "
                      f"fit (step sizes α ≤ {max(steps):.2g}, weights at "
                      f"{shrink:.2g} of their initial norm). Use a smaller tau "
                      + ("(search np.logspace(-5, -1, 5); tau='auto' weighs "
                         "sample_weight as repeated rows, so weights that sum "
                         "to few rows give a heavy penalty)."
                         if self.tau in ("auto", "evidence") else
                         "(tau='auto', or search np.logspace(-5, -1, 5))."))
        elif unscaled is not None or x_max > 10:
            reason = unscaled or f"their values reach {x_max:.3g}"
            advice = (f"The features are not standardized ({reason}): scale "
                      f"them, e.g. with StandardScaler in a Pipeline.")
        elif self.solver == "gd":
            advice = (f"Try another learning_rate than {self.learning_rate} or a "
                      "larger max_iter.")
        else:
            advice = ("Try a larger damping, a smaller step_size or a larger "
                      "max_iter.")
        warnings.warn(
            f"The fit did not learn: its final training risk {risks[-1]:.4g} is "
            f"{risks[-1] / baseline:.0%} of the risk of a constant prediction "
            f"({baseline:.4g}); it ended because {result.reason}. {advice}",
            ConvergenceWarning)

    def _check_validation_split(self, n_samples, labels):
        """Why the early-stopping split cannot work, or None when it can: at
        least two validation rows (R² and accuracy of one row are
        meaningless or NaN), and for classifiers one row of every class on
        each side of the stratified split."""
        fraction = self.validation_fraction
        n_val = int(np.ceil(fraction * n_samples))
        n_train = n_samples - n_val
        need_val, need_train, why = 2, 2, "two validation samples"
        if labels is not None:
            codes, counts = np.unique(labels, return_counts=True)
            if counts.min() < 2:
                # an error, as MLPClassifier's (train_test_split's) words
                few = self.classes_[codes[counts < 2].astype(int)].tolist()
                raise ValueError(
                    "The least populated classes in y have only 1 member, which "
                    "is too few for the stratified split of early_stopping=True. "
                    f"Classes with too few members are: {few}. Add samples of "
                    "them or set early_stopping=False.")
            need_val = need_train = max(2, len(counts))
            why = f"one validation sample of each of the {len(counts)} classes"
        if n_val < need_val or n_train < need_train:
            low = need_val / n_samples
            high = 1 - need_train / n_samples
            hint = (f"set validation_fraction to at least {low:.3g}" if low <= high
                    else "use more training samples")
            return (f"early_stopping=True holds out validation_fraction={fraction} "
                    f"of the {n_samples} training samples ({n_val} samples, "
                    f"leaving {n_train}), but needs at least {need_val} for {why} "
                    f"and {need_train} to train on; {hint}, pass X_val and y_val, "
                    f"or set early_stopping=False.")
        return None

    def _report(self, result, incremental):
        """Warn about a fit that did not end by converging."""
        if result.status == "diverged":
            if self.solver == "gd":
                # plain gradient descent has neither damping nor step_size
                advice = [f"a smaller learning_rate than {self.learning_rate}",
                          "standardized features (StandardScaler)"]
            else:
                advice = ["a larger damping", "a smaller step_size"]
                if self.line_search is not True:
                    advice.append("line_search=True")
            warnings.warn(
                f"{'Gradient descent' if self.solver == 'gd' else 'GGN-SCORE'} "
                f"diverged after {self.n_iter_} iterations "
                f"({result.reason}); kept the last parameters from before it. Try "
                f"{', '.join(advice[:-1])} or {advice[-1]}.",
                ConvergenceWarning,
            )
        elif (result.status == "max_iter" and not incremental and self.max_iter > 1
              and not (self.__dict__.get("_watch_phase") or {}).get("refit")):
            warnings.warn(
                f"Maximum iterations ({self.max_iter}) reached and the optimization "
                "hasn't converged yet. Increase max_iter or tol.",
                ConvergenceWarning,
            )


class _Records:
    """The per-iteration records of a fit, continued across warm starts."""

    def __init__(self, estimator, reuse, early_stopping):
        self.continued = reuse and hasattr(estimator, "loss_curve_")
        if self.continued:
            self.history = {k: list(v) for k, v in estimator.history_.items()}
            self.validation_scores = (None if estimator.validation_scores_ is None
                                      else list(estimator.validation_scores_))
            self.best_validation_score = estimator.best_validation_score_
        else:
            self.history = {"objective": [], "risk": [], "step_size": [], "time": []}
            self.validation_scores = None
            self.best_validation_score = None
        if early_stopping and self.validation_scores is None:
            self.validation_scores = []
        if early_stopping and self.best_validation_score is None:
            # (also after a fit that diverged before its first score)
            self.best_validation_score = -np.inf
        times = self.history["time"]
        self.elapsed = times[-1] if times else 0.0
        # iterations of the earlier calls of a warm-started sequence
        self.earlier_iterations = len(self.history["objective"])

    def append(self, record):
        for key, value in record.items():
            self.history.setdefault(key, []).append(value)

    def attributes(self, result, early_stopping):
        state = result.state
        objectives = self.history["objective"]
        best_validation_score = self.best_validation_score
        if self.validation_scores is not None and not self.validation_scores:
            # stopped (diverged) before the first validation score
            best_validation_score = None
        return {"history_": self.history, "loss_curve_": list(objectives),
                # as MLPClassifier: the iterations of this call; the running
                # total of a warm-started sequence is len(loss_curve_)
                "n_iter_": len(objectives) - self.earlier_iterations,
                "t_": state.n_steps,
                # as MLPClassifier: None when early stopping decided
                "best_loss_": None if early_stopping else state.best_objective,
                "validation_scores_": self.validation_scores,
                # the held-out risk per iteration/epoch, next to the
                # training objective of loss_curve_
                "validation_loss_curve_": (
                    list(self.history["validation_risk"])
                    if "validation_risk" in self.history else None),
                "best_validation_score_": best_validation_score}


class _OverfittingRule:
    """The overfitting watch's rule, epoch by epoch (``early_stopping="auto"``).

    Overfitting: for ``patience`` epochs in a row the held-out risk stays
    more than ``rise`` above its running minimum and more than ``gap`` times
    the epoch's training risk, and the held-out score of those epochs is on
    average no better than the best it reached by the risk's minimum.

    Parameters
    ----------
    rise : float
        Relative rise of the held-out risk above its minimum.
    gap : float, default=_WATCH_GAP
    patience : int, default=_WATCH_PATIENCE
    """

    def __init__(self, rise, gap=_WATCH_GAP, patience=_WATCH_PATIENCE):
        self.rise = rise
        self.gap = gap
        self.patience = patience
        self.best_risk = np.inf
        self.above = 0
        # the best held-out score so far and up to the epoch of the risk's
        # minimum (NaN while no score is finite), and every epoch's score
        self.max_score = np.nan
        self.best_score = np.nan
        self.scores = []

    def _far_above(self, risk, training_risk):
        """The held-out risk more than ``gap`` times the training risk."""
        return risk > self.gap * training_risk

    def may_be_memorizing(self, risk, training_risk):
        """After the epoch just recorded: its held-out risk far above the
        training risk and above its minimum (what a regressor's watch goes
        on for past ``_WATCH_EPOCHS``)."""
        return self._far_above(risk, training_risk) and risk > self.best_risk

    def __call__(self, risk, score, training_risk):
        """Record one epoch; True when the fit overfits."""
        self.scores.append(score)
        if np.isfinite(score):  # (not the NaN of a scorer that failed)
            self.max_score = float(np.fmax(self.max_score, score))
        if risk < self.best_risk:
            # the best so far, not the minimum's own: on a few dozen
            # held-out rows one epoch's score is a row or two off
            self.best_score = self.max_score
        self.best_risk = min(self.best_risk, risk)
        # risen above its minimum, and far above the training risk: a rise
        # of a held-out risk that the training risk keeps up with is the
        # noise of the early epochs of large data, not memorizing
        overfits = (risk > (1 + self.rise) * self.best_risk
                    and self._far_above(risk, training_risk))
        self.above = self.above + 1 if overfits else 0
        if self.above < self.patience:
            return False
        # and no better in the estimator's score than by the risk's minimum:
        # a log-loss that grows with the confidence of the wrong predictions
        # while the accuracy still improves (many noisy classes) is not
        # overfitting the user's metric. Without finite scores to compare,
        # the risk decides alone.
        recent = self.scores[-self.patience:]
        if not (np.isfinite(self.best_score) and np.all(np.isfinite(recent))):
            return True
        return sum(recent) / len(recent) <= self.best_score


class _Monitor:
    """The solver's callback: validation scores, early stopping, verbose
    lines and scikit-learn's callbacks, once per iteration/epoch."""

    def __init__(self, estimator, network, loss, validation, early_stopping,
                 records, theta0, max_iter, training, dtype, inputs):
        self.estimator = estimator
        self.dtype = dtype
        # the fit's input_transform statistics: with the weights, what a
        # callback's reconstructed estimator predicts from
        self.inputs = inputs
        self.network = network
        self.loss = loss
        self.early_stopping = early_stopping
        self.records = records
        self.best_theta = theta0
        self.n_iter = records.earlier_iterations
        self.no_improvement = 0
        # early_stopping="auto": the watch's overfitting rule
        phase = estimator.__dict__.get("_watch_phase") or {}
        self.watch = phase.get("watch", False)
        # a regressor's watch goes on from this epoch while its held-out
        # risk stands _WATCH_GAP times above the training risk and above
        # its minimum, to the solve's max_iter (see _WATCH_MAX_EPOCHS)
        self.watch_epochs = phase.get("watch_epochs")
        self.max_iter = max_iter
        self.watch_ended = False
        self.watch_rule = _OverfittingRule(
            _WATCH_RISE_SQUARED if estimator.loss == "squared_error"
            else _WATCH_RISE)
        self.validation = None
        if validation is not None:
            X_val, Y_val, sw_val, scorer = validation
            self.validation = (network.augment(X_val), Y_val, sw_val,
                               normalized_weights(sw_val)[0], scorer)
            for key in ("validation_risk", "validation_score"):
                records.history.setdefault(key, [])
        self.context = None
        if hasattr(estimator, "_init_callback_context"):
            X, y, sample_weight = training
            self.task = {"X": X, "y": y, "metadata": {"sample_weight": sample_weight}}
            # One more subtask than iterations: as in scikit-learn's lbfgs
            # bridge, the epoch begun after the last one is closed empty.
            self.context = estimator._init_callback_context(
                max_subtasks=max_iter + 1)
            self.context.call_on_fit_task_begin(estimator=estimator, **self.task)
            self._begin_epoch(theta0)

    def _reconstruction(self, theta):
        return lambda: {**{name + "_": value for name, value in
                           self.estimator._weights(self.network, theta,
                                                   self.dtype).items()},
                        **self.inputs}

    def _begin_epoch(self, theta):
        self.epoch_context = self.context.subcontext(task_name="epoch")
        self.epoch_context.call_on_fit_task_begin(
            estimator=self.estimator, **self.task,
            reconstruction_attributes=self._reconstruction(theta))

    def __call__(self, record, theta):
        self.n_iter += 1
        if self.validation is not None:
            Xa_val, Y_val, sw_val, s_val, scorer = self.validation
            outputs = self.network.forward(theta, Xa_val, with_deriv=False).outputs
            risk = self.loss.risk(outputs, Y_val, s_val)
            record["validation_risk"] = risk
            record["validation_score"] = scorer(self.network, theta, outputs, risk,
                                                Y_val, sw_val)
        self.records.append(record)
        if self.estimator.verbose:
            self._print(record)
        stop = False
        if self.early_stopping:
            stop = self._early_stopping(record["validation_score"], theta)
        if self.watch and "validation_risk" in record:
            if self.watch_rule(record["validation_risk"], record["validation_score"],
                               record["risk"]):
                self.estimator._watch_stopped_at = self.n_iter
                stop = True
            elif (self.watch_epochs is not None
                  and self.watch_epochs <= self.n_iter < self.max_iter
                  and not self.watch_rule.may_be_memorizing(
                      record["validation_risk"], record["risk"])):
                # the held-out risk is back near the training risk, or at a
                # new minimum (the fit still learns what the held-out rows
                # need): no memorizing to watch for; the held-out rows join
                self.watch_ended = True
                stop = True
        if self.context is not None:
            stop |= self.epoch_context.call_on_fit_task_end(
                estimator=self.estimator, **self.task,
                reconstruction_attributes=self._reconstruction(theta))
            self._begin_epoch(theta)
        return stop

    def _early_stopping(self, score, theta):
        records, tol = self.records, self.estimator.tol
        records.validation_scores.append(score)
        if score > records.best_validation_score:
            self.best_theta = theta
        if score < records.best_validation_score + tol:
            self.no_improvement += 1
        else:
            self.no_improvement = 0
        records.best_validation_score = max(records.best_validation_score, score)
        return self.no_improvement > self.estimator.n_iter_no_change

    def _print(self, record):
        parts = [f"Iteration {self.n_iter}", f"objective = {record['objective']:.8g}",
                 f"risk = {record['risk']:.8g}",
                 f"step size = {record['step_size']:.4g}"]
        if "damping" in record:
            parts.append(f"damping = {record['damping']:.4g}")
        if "validation_score" in record:
            parts.append(f"validation score = {record['validation_score']:.6g}")
        parts.append(f"time = {record['time']:.3f}s")
        print(", ".join(parts))

    def close(self, result, theta):
        if self.context is not None:
            # The epoch begun after the last one never ran: end it empty.
            self.epoch_context.call_on_fit_task_end(estimator=self.estimator)
            self.context.call_on_fit_task_end(
                estimator=self.estimator, **self.task,
                reconstruction_attributes=self._reconstruction(theta))
        if self.estimator.verbose and result.status != "max_iter":
            if result.status == "stopped" and self.early_stopping:
                tol, n = self.estimator.tol, self.estimator.n_iter_no_change
                reason = (f"the validation score did not improve by more than "
                          f"tol={tol} for {n} consecutive iterations")
            elif "_watch_stopped_at" in self.estimator.__dict__:
                scored = bool(np.isfinite(self.watch_rule.scores).any())
                reason = (f"the held-out risk of the overfitting watch stayed "
                          f"above its minimum for {_WATCH_PATIENCE} epochs"
                          + (", its score no better" if scored else ""))
            elif self.watch_ended:
                reason = ("the held-out risk of the overfitting watch is at its "
                          "minimum or within "
                          f"{_WATCH_GAP:g} times the training risk")
            else:
                reason = result.reason
            print(f"Stopping: {reason}.")
