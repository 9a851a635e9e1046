"""The plan of a fit: every "auto" rule, resolved in one place.

:func:`plan_fit` is a pure function of the estimator's parameters
(``get_params``) and a :class:`DataSummary` of the training data. The
estimator builds the problem, the solver and its stopping rules from the
:class:`FitPlan` it returns, and nothing reads the parameters again. The
evidence behind every constant below is on the documentation's defaults
page.
"""

import math
import warnings
from typing import NamedTuple

import numpy as np

# the values of ``tau`` whose τ the fit chooses (any other is the τ)
TAU_RULES = ("auto", "evidence", "gcv")
# batch_size="auto", exact step: full batch while n_samples * n_outputs <= this
AUTO_FULL_BATCH_ROWS = 1024
# batch_size="auto", exact step: this many rows of the kernel system per batch
AUTO_BATCH_ROWS = 256
# batch_size="auto", structured step: rows per mini-batch
AUTO_STRUCTURED_ROWS = 128
# batch_size="auto", structured step: full batch up to this many rows
# (AUTO_FULL_BATCH_ROWS for the regressors that keep full batches longer)
AUTO_STRUCTURED_FULL_BATCH_ROWS = 512
# tau="auto" in full batch: the penalty weighs as much as this many samples
AUTO_TAU_SAMPLES = 10.0
# tau="auto": never above this (tiny clean data sets underfit at 10/n)
AUTO_TAU_MAX = 1e-2
# tau="auto" on mini-batches and in partial_fit: never below this
AUTO_TAU_MINI_BATCH = 1e-4
# tau="auto" on mini-batches: the penalty weighs as much as this many samples
AUTO_TAU_MINI_BATCH_SAMPLES = 1.0
# tau="auto" selected by a criterion: its name for the squared error
AUTO_TAU_CRITERION = "gcv"
# tau="auto" selected by a criterion: the smallest τ it may choose
AUTO_TAU_MIN = 1e-4
# early_stopping="auto": epochs of the overfitting watch
WATCH_EPOCHS = 15
# early_stopping="auto": a regressor's longest watch while it may memorize
WATCH_MAX_EPOCHS = 50
# early_stopping="auto": relative rise of the held-out risk that counts
WATCH_RISE = 0.1
# early_stopping="auto": the same for the squared error
WATCH_RISE_SQUARED = 0.07
# early_stopping="auto": held-out risk this many times the training risk
WATCH_GAP = 1.5
# early_stopping="auto": epochs in a row the rise and the gap must hold
WATCH_PATIENCE = 3
# early_stopping="auto": fewest held-out rows and fewest training rows
WATCH_MIN_ROWS = 50
# early_stopping="auto": most held-out rows
WATCH_MAX_ROWS = 500


class DataSummary(NamedTuple):
    """What :func:`plan_fit` knows of the training data and the estimator's
    loss.

    Attributes
    ----------
    n_samples, n_features, n_outputs : int
        Rows, columns and network outputs of this fit.
    rows_weight : float
        The rows' count for ``tau="auto"`` on mini-batches: the sum of the
        sample weights (class weights included) of all rows, frequencies of
        rows (the watch's fit on part of them counts them all).
    train_weight : tuple of float
        The training rows' weight sum in float64 and in float32: the rows'
        count of the full-batch rule, in the dtype the fit computes in.
    structure : dict
        The step's structure (``engine.step_structure``; empty for the
        exact step and for gradient descent).
    full_batch_rows : int
        Rows up to which the structured step keeps full batches.
    selects_tau : bool
        Whether ``tau="auto"`` is chosen by a criterion in full batch.
    squared_error : bool
        Whether the loss is the squared error (the watch's smaller rise).
    watch_extends : bool
        Whether the overfitting watch goes on past :data:`WATCH_EPOCHS`
        while the fit may be memorizing (the regressors).
    early_stopping : bool
        Whether ``early_stopping=True`` has validation rows to follow
        (``X_val``, or a held-out split that the rows allow).
    watchable : bool
        Whether the fit may hold rows out for the overfitting watch: a
        fresh ``fit`` (no weights to continue) without ``X_val`` or
        scikit-learn callbacks (whose context is one fit).
    incremental : bool
        A ``partial_fit`` call.
    """

    n_samples: int
    n_features: int
    n_outputs: int
    rows_weight: float
    train_weight: tuple
    structure: dict
    full_batch_rows: int
    selects_tau: bool
    squared_error: bool = False
    watch_extends: bool = False
    early_stopping: bool = False
    watchable: bool = False
    incremental: bool = False


class WatchPlan(NamedTuple):
    """The overfitting watch of ``early_stopping="auto"``.

    Attributes
    ----------
    n_val : int
        Held-out rows.
    epochs : int
        Epochs the watch runs at least.
    longest : int
        Epochs it runs at most (while the fit may be memorizing).
    rise, gap : float
        The rule's rise of the held-out risk above its minimum, and its
        ratio to the training risk.
    patience : int
        Epochs in a row the rule must hold.
    """

    n_val: int
    epochs: int
    longest: int
    rise: float
    gap: float = WATCH_GAP
    patience: int = WATCH_PATIENCE


class FitPlan(NamedTuple):
    """Every "auto" rule of one fit, resolved (:func:`plan_fit`).

    Attributes
    ----------
    batch_size : int
        Rows per step.
    merge_short : bool
        Whether a short last batch joins the one before (``"auto"`` only).
    full_batch : bool
        Whether every step sees all rows (never for ``partial_fit``).
    work_dtype : type
        The dtype the steps compute in (``compute_dtype``; under ``"auto"``
        float64 for small full batches, else float32).
    tau_rule : {"given", "mini_batch", "samples", "select"}
        How τ is set: the parameter, the mini-batch value, ``10 / Σw``, or
        chosen from there by a criterion.
    tau : float
        τ, or where ``tau_rule="select"`` the value the criterion starts
        from (and falls back to).
    tau_criterion : {"gcv"} or None
        The criterion of ``tau_rule="select"``.
    evidence_path : bool
        Where τ is selected, unless ``tau="gcv"``: from the criterion's τ
        the fit climbs the Laplace evidence of the fitted network
        (:func:`sklearn_ggn._tau.evidence_path`).
    mu : float
        The regularizer's smoothing μ.
    damping : str or float
        The ``damping`` parameter, resolved by ``engine.resolve_damping``
        against τ and the batch.
    damping_start : float
        Where a full-batch adaptive damping starts from
        (``tau="auto"``'s full-batch rule).
    curvature, hessian : str
        The step's output curvature and H.
    structured : bool
        Per-unit H with one kernel row per sample.
    line_search : bool
        Armijo backtracking.
    max_iter : int
        Iterations or epochs of this call (1 for ``partial_fit``).
    stops_on_objective : bool
        Whether the objective's no-improvement rule ends the fit.
    stop_when_stalled : bool
        Whether a zero line-search step or the damping's stalled epochs end
        the fit.
    damping_ends_fit : bool
        Whether the adaptive damping's stalled epochs end the fit.
    early_stopping : bool
        ``early_stopping=True``: the validation score decides.
    watch : WatchPlan or None
        The overfitting watch, where the data allow one (the split itself
        may still find a class or a side without weight).
    incremental : bool
        A ``partial_fit`` call.
    """

    batch_size: int
    merge_short: bool
    full_batch: bool
    work_dtype: type
    tau_rule: str
    tau: float
    tau_criterion: object
    evidence_path: bool
    mu: float
    damping: object
    damping_start: float
    curvature: str
    hessian: str
    structured: bool
    line_search: bool
    max_iter: int
    stops_on_objective: bool
    stop_when_stalled: bool
    damping_ends_fit: bool
    early_stopping: bool
    watch: object
    incremental: bool


def kappa(scaling, n_hidden):
    """κ(n) of the ``scaling`` parameter."""
    if scaling == "ntk":
        return 1.0 / np.sqrt(n_hidden)
    if scaling == "mean_field":
        return 1.0 / n_hidden
    return float(scaling)


def resolve_mu(params):
    """μ of the ``mu`` parameter: ``"auto"`` is ``1/κ(n)``."""
    if params["mu"] == "auto":
        return 1.0 / kappa(params["scaling"], params["n_hidden"])
    return params["mu"]


def step_options(curvature, hessian):
    """``(curvature, hessian)`` of the step, "auto" resolved."""
    return ("true_vs_rest" if curvature == "auto" else curvature,
            "per_unit" if hessian == "auto" else hessian)


def watches(early_stopping):
    """Whether ``early_stopping`` asks for the overfitting watch (``"auto"``;
    a bool, NumPy's included, is early stopping on or off)."""
    return isinstance(early_stopping, str) and early_stopping == "auto"


def rule_tau(rows_weight):
    """τ of ``tau="auto"``'s full-batch rule, ``min(0.01, 10 / Σw)``."""
    return min(AUTO_TAU_MAX, AUTO_TAU_SAMPLES / rows_weight)


def mini_batch_tau(rows_weight):
    """τ of ``tau="auto"`` on mini-batches, ``max(1e-4, 1 / Σw)`` capped at
    0.01."""
    return min(AUTO_TAU_MAX, max(AUTO_TAU_MINI_BATCH,
                                 AUTO_TAU_MINI_BATCH_SAMPLES / rows_weight))


def rows_weight(sample_weight, dtype):
    """The weights' sum, taken in X's ``dtype`` (as the fit takes them) and
    summed in float64."""
    return float(np.sum(np.asarray(sample_weight, dtype=dtype)
                        .astype(np.float64, copy=False)))


def batch_plan(batch_size, n_samples, n_outputs, structured, full_batch_rows,
               incremental=False, warn=True):
    """Rows per step of ``batch_size`` (``"auto"``: full batch up to
    ``full_batch_rows`` rows for the structured step, while ``n · K ≤
    AUTO_FULL_BATCH_ROWS`` for the exact one, else their mini-batches;
    ``partial_fit`` always takes the mini-batches)."""
    if batch_size is None:
        return n_samples
    if batch_size == "auto":
        if structured:
            return (n_samples if n_samples <= full_batch_rows and not incremental
                    else min(n_samples, AUTO_STRUCTURED_ROWS))
        if n_samples * n_outputs <= AUTO_FULL_BATCH_ROWS and not incremental:
            return n_samples
        return min(n_samples, max(1, AUTO_BATCH_ROWS // n_outputs))
    if batch_size > n_samples and warn:
        warnings.warn(f"batch_size={batch_size} is larger than the {n_samples} "
                      "training samples; using a full batch.")
    return min(batch_size, n_samples)


def _tau(params, tau_rule, data, train_weight):
    """``(τ, criterion)`` of the plan."""
    if tau_rule == "given":
        return float(params["tau"]), None
    if tau_rule == "mini_batch":
        return (AUTO_TAU_MINI_BATCH if data.incremental
                else mini_batch_tau(data.rows_weight)), None
    criterion = AUTO_TAU_CRITERION if tau_rule == "select" else None
    return rule_tau(train_weight), criterion


def watch_plan(params, data, structured):
    """The :class:`WatchPlan` of ``early_stopping="auto"``, or None where the
    data allow no watch: ``partial_fit``, too few epochs or rows, or full
    batches on the watch's rows or on all of them."""
    max_iter = params["max_iter"]
    epochs = min(WATCH_EPOCHS, max_iter // 2)
    if not data.watchable or data.incremental or epochs < WATCH_PATIENCE + 2:
        return None
    n_val = min(WATCH_MAX_ROWS,
                int(math.ceil(params["validation_fraction"] * data.n_samples)))
    n_train = data.n_samples - n_val
    if n_val < WATCH_MIN_ROWS or n_train < WATCH_MIN_ROWS:
        return None
    for rows in (n_train, data.n_samples):
        if batch_plan(params["batch_size"], rows, data.n_outputs, structured,
                      data.full_batch_rows, warn=False) >= rows:
            return None
    longest = (min(WATCH_MAX_EPOCHS, max_iter // 2) if data.watch_extends
               else epochs)
    rise = WATCH_RISE_SQUARED if data.squared_error else WATCH_RISE
    return WatchPlan(n_val=n_val, epochs=epochs, longest=longest, rise=rise)


def _work_dtype(compute_dtype, data, full_batch):
    """The dtype a fit's steps compute in: ``compute_dtype`` when given;
    under ``"auto"``, float64 for a small full batch (solved to convergence,
    its steps would amplify float32 rounding), else float32."""
    if compute_dtype != "auto":
        return np.float64 if compute_dtype == "float64" else np.float32
    if full_batch and data.n_samples <= AUTO_FULL_BATCH_ROWS:
        return np.float64
    return np.float32


def plan_fit(params, data, *, warn=True):
    """The :class:`FitPlan` of a fit.

    Parameters
    ----------
    params : dict
        The estimator's ``get_params(deep=False)``.
    data : DataSummary
        The training data and what the loss implies.
    warn : bool, default=True
        Warn when an explicit ``batch_size`` exceeds the rows.

    Returns
    -------
    plan : FitPlan
    """
    structure = data.structure
    structured = structure.get("per_unit", False) and structure.get("rank") == 1
    n, incremental = data.n_samples, data.incremental
    batch_size = batch_plan(params["batch_size"], n, data.n_outputs, structured,
                            data.full_batch_rows, incremental, warn)
    full_batch = batch_size >= n and not incremental
    if params["tau"] not in TAU_RULES:
        tau_rule = "given"
    elif not full_batch:
        tau_rule = "mini_batch"
    else:
        tau_rule = "select" if data.selects_tau else "samples"
    work_dtype = _work_dtype(params["compute_dtype"], data, full_batch)
    train_weight = data.train_weight[0 if work_dtype == np.float64 else 1]
    if not 0.0 < train_weight < math.inf:
        # (float64 weights that float32 cannot hold; the float64 sum is
        # positive and finite, as validated)
        raise ValueError(
            f"The sample weights sum to {train_weight} in float32, the dtype "
            "the steps compute in: they underflow or overflow it (their "
            f"float64 sum is {data.train_weight[0]:.6g}). Rescale "
            "sample_weight (a common factor does not change the fit's "
            "weighting), or set compute_dtype='float64'.")
    tau, criterion = _tau(params, tau_rule, data, train_weight)
    line_search = params["line_search"]
    if line_search == "auto":
        line_search = full_batch or not structured
    curvature, hessian = step_options(params["curvature"], params["hessian"])
    early_stopping = data.early_stopping and not incremental
    mu = resolve_mu(params)
    return FitPlan(
        batch_size=batch_size, merge_short=params["batch_size"] == "auto",
        full_batch=full_batch, work_dtype=work_dtype,
        tau_rule=tau_rule, tau=tau, tau_criterion=criterion,
        evidence_path=tau_rule == "select" and params["tau"] != "gcv", mu=mu,
        damping=params["damping"], damping_start=rule_tau(train_weight),
        curvature=curvature, hessian=hessian, structured=structured,
        line_search=bool(line_search),
        max_iter=1 if incremental else params["max_iter"],
        stops_on_objective=not (incremental or early_stopping),
        stop_when_stalled=params["n_iter_no_change"] != np.inf,
        damping_ends_fit=not early_stopping, early_stopping=early_stopping,
        watch=(watch_plan(params, data, structured)
               if watches(params["early_stopping"]) else None),
        incremental=incremental)


class Phase(NamedTuple):
    """One solve of a fit. An ordinary fit is one phase, ``Phase()``; the
    overfitting watch's fit is two (:mod:`sklearn_ggn._watch`).

    Attributes
    ----------
    max_iter : int or None
        Iterations of this solve (None: the plan's).
    seed : int or None
        The random stream's seed (None: ``random_state``).
    rows_weight : float or None
        The rows' count of ``tau="auto"`` (None: this phase's rows').
    watch : OverfittingWatch or None
        The watch's stopping rule.
    continues : bool or None
        Whether the solve continues the fitted weights (None: as
        ``warm_start`` and ``partial_fit`` say).
    refit : bool
        A refit for the watch's best epochs (its ``max_iter`` is no
        warning's business).
    """

    max_iter: object = None
    seed: object = None
    rows_weight: object = None
    watch: object = None
    continues: object = None
    refit: bool = False
