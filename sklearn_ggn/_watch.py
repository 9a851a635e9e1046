"""The fit of ``early_stopping="auto"``: the overfitting watch, then all rows.

A fresh mini-batch ``fit`` holds rows out (:func:`split`) and fits the rest
while :class:`~sklearn_ggn.engine.OverfittingWatch` watches the held-out
risk (the watch phase). Then, on all rows (:func:`fit_watched`):

* the watch found overfitting: the same fit again, from the same initial
  weights, for the epochs that scored best on the held-out rows;
* the watch's fit diverged, or converged before the watch's first epochs
  ended: the ordinary fit;
* otherwise the held-out rows join and the fit goes on from where it is.

Every phase is a call of the estimator's ``_fit_phase`` with a
:class:`~sklearn_ggn._plan.Phase`; nothing of a phase is kept on the
estimator but the fitted attributes of its solve.
"""

import contextlib
import copy
import math
import warnings
from numbers import Integral
from pathlib import Path

import numpy as np
from sklearn.base import is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight

from . import _plan
from ._plan import Phase
from ._inputs import AUTO_MAP_CANDIDATES, make_input_map
from .engine import OverfittingWatch

# standard errors of the paired held-out difference by which a later map of
# ``input_transform="auto"`` must lower the risk to be chosen (one-sided,
# about 2.3 %)
AUTO_MAP_Z = 2.0
# epochs the richer map's network, started from the plain one's watched fit,
# runs before the held-out rows compare the two
AUTO_MAP_EPOCHS = 5
# most network inputs the richer map of ``input_transform="auto"`` may give
# (its first layer's cost grows with them; wide inputs such as pixels keep
# the plain map)
AUTO_MAP_MAX_WIDTH = 1024


def split(est, data, sample_weight, watch):
    """``(idx_train, idx_val, val_weight, seed, rows_weight)`` of the watch,
    or None where the rows allow none: a class of one row, more classes
    than rows on a side, or a side without weight.

    Parameters
    ----------
    est : BaseGGNScore
    data : TrainingData
        The validated rows.
    sample_weight : array-like or None
        The weights as given to ``fit``.
    watch : WatchPlan
    """
    n_samples = data.X.shape[0]
    n_val = watch.n_val
    n_train = n_samples - n_val
    Y = data.Y
    stratify = None
    if is_classifier(est) and not getattr(est, "_multilabel", False):
        stratify = Y.argmax(axis=1) if Y.shape[1] > 1 else Y[:, 0]
        counts = np.bincount(stratify.astype(np.intp))
        counts = counts[counts > 0]
        if counts.min() < 2 or min(n_val, n_train) < counts.size:
            return None
    # (the weights as given, in float64: the held-out rows' weights and the
    # rows' count of tau="auto" are those of the fit without a watch, not
    # of weights rounded to float32 X first)
    weights = _check_sample_weight(sample_weight, data.X, dtype=np.float64,
                                   ensure_non_negative=True)
    # One seed for the split, the watch and the refit: the refit starts from
    # the watch's initial weights whatever random_state is.
    seed = phase_seed(est)
    idx_train, idx_val = train_test_split(
        np.arange(n_samples), test_size=n_val,
        random_state=check_random_state(seed), stratify=stratify)
    idx_train, idx_val = np.sort(idx_train), np.sort(idx_val)
    # the held-out rows weigh as the fit weighs them (class_weight), and
    # tau="auto"'s count of rows of the watch's fit is all rows' count
    weighed = est._with_class_weight(weights, Y)
    if not (weighed[idx_train].sum() > 0 and weighed[idx_val].sum() > 0):
        return None
    return (idx_train, idx_val, weighed[idx_val], seed,
            _plan.rows_weight(weighed, data.X.dtype))


def phase_seed(est):
    """One seed for the phases of a fit: ``random_state`` itself when it is
    an int (the phases start as the fit of one phase does), else an int
    drawn from it."""
    if isinstance(est.random_state, Integral):
        return int(est.random_state)
    return int(check_random_state(est.random_state).randint(
        np.iinfo(np.int32).max))


def fit_watched(est, data, watch_split, watch):
    """The fit of ``early_stopping="auto"``: the watch, then all rows; sets
    ``overfitting_watch_``. Under ``input_transform="auto"`` the held-out
    rows also choose the input map (:func:`_choose_map`), and the chosen
    map's phase goes on."""
    idx_train, idx_val, val_weight, seed, rows_weight = watch_split
    held_out = data.rows(idx_val)
    phase = Phase(max_iter=watch.longest, seed=seed, rows_weight=rows_weight,
                  continues=False)
    # Each phase's warnings are recorded and raised once at the end (also
    # when a phase raises): the watch's fit gives the input's and the
    # width's advice first, the fit on all rows mostly again.
    watch_warnings, final_warnings = [], []
    train = data.rows(idx_train)
    try:
        with _caught(watch_warnings):
            rule, status, risks = _choose_map(
                est, watch, lambda rule, **change: est._fit_phase(
                    train, False,
                    (held_out.X, held_out.Y, held_out.y, val_weight),
                    phase._replace(watch=rule, **change)), held_out, val_weight,
                train)
        report = _fit_all_rows(est, data, rule, status, watch, seed,
                               len(idx_val), final_warnings)
    finally:
        est.__dict__.pop("_map_candidate", None)
        _warn_once(watch_warnings, final_warnings)
    if risks is not None:
        report["input_transform"] = {"chosen": est.input_transform_,
                                     "validation_risk": risks}
    est.overfitting_watch_ = report


def _choose_map(est, watch, watch_phase, held_out, val_weight, train):
    """``(rule, status, risks)`` of the watch's phase (``watch_phase(rule,
    **change)`` fits it with the :class:`Phase` changed by ``change`` and
    returns its status). Under ``input_transform="auto"``: the phase of the
    plain map; then, unless it diverged or overfitted, a screen: the richer
    map's network started from the plain one's fit, which it holds (the
    plain map's columns with their weights, the encodings' weights zero:
    the same function), runs ``AUTO_MAP_EPOCHS`` more epochs on the same
    rows (when it has at most ``AUTO_MAP_MAX_WIDTH`` inputs). Only when
    that lowers the held-out risk does the richer map's own phase run, from
    its own initial weights, and it is chosen when it beats the plain
    phase on the held-out rows as well. "Lower" is a paired test: by more
    than ``AUTO_MAP_Z`` standard errors of the row-by-row difference of
    the held-out risks. Otherwise the estimator is left as the plain phase
    left it. ``risks``: the richer map's held-out risk (of the screen, or
    of its own phase when it ran) and the plain one's, or None without
    ``"auto"``."""
    if est.input_transform != "auto":
        rule = _watch_rule(watch)
        return rule, watch_phase(rule), None
    plain, richer = AUTO_MAP_CANDIDATES
    est._map_candidate = plain
    rule = _watch_rule(watch)
    status = watch_phase(rule)
    risks = {plain: _last_risk(est)}
    if status == "diverged" or rule.overfitting_at is not None:
        return rule, status, risks
    input_map = richer_map(est, train)
    if input_map is None:
        return rule, status, risks
    _, rows = _held_out_risks(est, status, held_out)
    state = est.__dict__.copy()
    est._map_candidate = richer
    nest(est, input_map)
    # (the richer phases' warnings reach the user only if its map is kept)
    richer_warnings = []
    with _caught(richer_warnings):
        screen = watch_phase(None, max_iter=AUTO_MAP_EPOCHS, continues=True,
                             seed=copy.deepcopy(est._rng))
        risks[richer], richer_rows = _held_out_risks(est, screen, held_out)
        chosen = _lower(richer_rows, rows, val_weight)
        if chosen:
            # the richer map's own phase, from its own initial weights,
            # must then beat the plain one on the held-out rows too
            richer_rule = _watch_rule(watch)
            richer_status = watch_phase(richer_rule)
            risks[richer], richer_rows = _held_out_risks(est, richer_status,
                                                         held_out)
            chosen = _lower(richer_rows, rows, val_weight)
    if chosen:
        for w in richer_warnings:
            _raise(w)
        return richer_rule, richer_status, risks
    est.__dict__.clear()
    est.__dict__.update(state)
    return rule, status, risks


def richer_map(est, rows):
    """The richer candidate map fitted on ``rows`` (:class:`TrainingData`,
    weighed as the fit weighs them) when it adds inputs to the plain map's
    fitted network and gives at most ``AUTO_MAP_MAX_WIDTH``; else None (no
    column has bins, or too many inputs)."""
    input_map = make_input_map(AUTO_MAP_CANDIDATES[1])._fit(
        rows.X, est._with_class_weight(rows.sample_weight, rows.Y))
    if est.hidden_weights_.shape[1] < input_map.n_features_out_ <= AUTO_MAP_MAX_WIDTH:
        return input_map
    return None


def nest(est, input_map):
    """Put the fitted network of a plain map into the network of a richer
    fitted ``input_map`` whose first columns are the plain map's columns
    (the same statistics of the same rows, as :class:`PiecewiseLinear`'s
    clipped columns are :class:`RobustClip`'s): the new columns' weights
    are zero, so that the network computes the same function."""
    U = est.hidden_weights_
    est.input_map_ = input_map
    est.hidden_weights_ = np.hstack([U, np.zeros(
        (U.shape[0], input_map.n_features_out_ - U.shape[1]), dtype=U.dtype)])


def _last_risk(est):
    """The last held-out risk the fit recorded (inf: none)."""
    return float((est.history_.get("validation_risk") or [np.inf])[-1])


def _held_out_risks(est, status, held_out):
    """``(risk, rows)``: the last held-out risk of a phase that ended with
    ``status`` and its row risks (:func:`row_risks`), inf if it diverged."""
    if status == "diverged":
        return np.inf, np.full(held_out.X.shape[0], np.inf)
    return _last_risk(est), row_risks(est, held_out)


def _watch_rule(watch):
    """A fresh :class:`OverfittingWatch` of the plan's ``watch``."""
    return OverfittingWatch(watch.epochs, watch.longest, watch.rise,
                            watch.gap, watch.patience)


def row_risks(est, rows):
    """The risk of every row of ``rows`` (:class:`TrainingData`) under the
    fitted weights, in the units the network is trained in: their weighted
    mean is the held-out risk the monitor records."""
    F = est._raw_output(rows.X)
    Y, _ = est._encode_targets(rows.Y.astype(np.float64, copy=False),
                               np.ones(F.shape[0]), keep=True)
    F = np.asarray(F, dtype=np.float64)
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    loss = est._loss_object()
    one = np.ones(1)
    return np.array([loss.risk(F[i:i + 1], Y[i:i + 1], one)
                     for i in range(F.shape[0])])


def _lower(rows, best, weight):
    """Whether the row risks ``rows`` are lower than ``best`` by more than
    ``AUTO_MAP_Z`` standard errors of their weighted mean difference."""
    if not np.all(np.isfinite(rows)):
        return False
    if not np.all(np.isfinite(best)):
        return True
    w = np.asarray(weight, dtype=np.float64) / np.sum(weight)
    d = best - rows
    mean = float(w @ d)
    n_eff = 1.0 / float(w @ w)
    se = math.sqrt(max(float(w @ (d - mean) ** 2), 0.0) / n_eff)
    return mean > AUTO_MAP_Z * se


@contextlib.contextmanager
def _caught(into):
    """Record into the list ``into`` every warning raised in the context,
    whatever the caller's filters (they apply when :func:`_warn_once`
    raises the warnings again)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            into.extend(caught)


def _warn_once(watch_warnings, final_warnings):
    """Raise the warnings of a watched fit, each once: those of the fit on
    all rows, and those of the watch's fit on the split that the fit on all
    rows did not raise from the same place (a data or width warning the
    watch's fit gave alone). The watch's own convergence warnings are about
    a fit that is not the model (its cap of epochs, its split's risk) and
    are dropped: the fit on all rows reports its own."""
    places = {(w.category, w.filename, w.lineno) for w in final_warnings}
    for w in watch_warnings:
        place = (w.category, w.filename, w.lineno)
        if issubclass(w.category, ConvergenceWarning) or place in places:
            continue
        places.add(place)
        _raise(w)
    for w in final_warnings:
        _raise(w)


def _raise(w):
    """Raise a recorded warning again, from where it was raised (its module
    named as ``warnings.warn`` names it, so that filters by module apply)."""
    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno,
                           module=_module_of(w.filename), source=w.source)


def _module_of(filename):
    """The dotted module name of a file of this package (``sklearn_ggn.x``),
    else the file's name without ``.py`` (``warn_explicit``'s own default;
    it raises nothing when given None)."""
    parts = Path(filename).with_suffix("").parts
    if "sklearn_ggn" not in parts:
        return filename[:-3] if filename.endswith(".py") else filename
    start = len(parts) - 1 - parts[::-1].index("sklearn_ggn")
    return ".".join(parts[start:])


def _fit_all_rows(est, data, rule, status, watch, seed, n_val, caught):
    """The fit on all rows after the watch (its warnings recorded into
    ``caught``): the refit to the best epoch, the ordinary fit, or the
    watch's fit continued with the held-out rows. Returns the watch's
    report, ``overfitting_watch_``."""
    watched = len(est.loss_curve_)
    risks = list(est.history_.get("validation_risk", []))
    scores = list(est.history_.get("validation_score", []))
    overfitting = rule.overfitting_at is not None
    best = rule.best_epoch(risks) if overfitting else None
    report = {"validation_rows": int(n_val), "epochs": watched,
              "overfitting": overfitting, "best_epoch": best,
              "validation_loss_curve": risks, "validation_scores": scores,
              "rule": {"epochs": watch.epochs, "longest": watch.longest,
                       "rise": watch.rise, "gap": watch.gap,
                       "patience": watch.patience}}
    with _caught(caught):
        _continue_on_all_rows(est, data, rule, status, watch, seed, watched, best)
    return report


def _continue_on_all_rows(est, data, rule, status, watch, seed, watched, best):
    """The solve on all rows that the watch's outcome calls for."""
    if best is not None:
        if est.verbose:
            print(f"Overfitting watch: the held-out risk rose for "
                  f"{watch.patience} epochs"
                  + (", its score no better; refitting on all rows for the "
                     f"{best} epochs that scored best on them."
                     if rule.rule.scored else
                     f"; refitting on all rows for the {best} epochs of its "
                     "least risk (no finite held-out score)."))
        est._fit_phase(data, False, None, Phase(max_iter=best, seed=seed,
                                                continues=False, refit=True))
    elif watched < watch.epochs or status == "diverged":
        if est.verbose:
            print("Overfitting watch: "
                  + ("the watch's fit diverged" if status == "diverged"
                     else "the fit ended before the watch did")
                  + "; fitting on all rows.")
        est._fit_phase(data, False, None,
                       Phase(max_iter=est.max_iter, seed=seed, continues=False))
    else:
        if est.verbose:
            print(f"Overfitting watch: no overfitting in {watched} epochs; "
                  "the held-out rows join the training rows.")
        est._solver_state.new_objective()
        est._fit_phase(data, False, None, Phase(max_iter=est.max_iter - watched,
                                                seed=seed, continues=True))
        est.n_iter_ = len(est.loss_curve_)
        for key in ("validation_risk", "validation_score"):
            est.history_.pop(key, None)
        est.validation_loss_curve_ = None
