"""Warnings and errors of a fit, each with the remedy it names: inputs off
unit scale, an absurd width, a split too small for early stopping, a fit
that diverged, did not converge or did not learn."""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from . import _memory
from ._plan import TAU_RULES

# inputs this large break curvature-based steps (a standardized rare pixel
# of MNIST reaches 2 733): warn at fit time
EXTREME_INPUT = 100.0
# features off unit scale: a root-mean-square above this
UNSCALED_RMS = 5.0
# features off unit scale: standard deviations spread over more than this
UNSCALED_SPREAD = 1e3
# an absurd width: this many parameters per training sample, and ...
ABSURD_PARAMS_PER_SAMPLE = 1000
# ... a fit estimated at this many flops, or ...
ABSURD_FIT_FLOPS = 1e13
# ... one step at this many bytes
ABSURD_STEP_BYTES = 2 * 2**30
# a fresh fit whose training risk ends above this fraction of a constant
# prediction's has not learned
LEARNED_FRACTION = 0.9
# ... judged at max_iter only after this many iterations
MIN_JUDGED = 10
# ... and it is an over-strong tau's doing when the initial penalty
# outweighs the constant's risk this many times and either ...
PENALTY_DOMINATES = 100.0
# ... shrank the weights below this fraction of their initial norm, or ...
COLLAPSED_NORM = 0.1
# ... kept every step size below this
TINY_STEP = 1e-2


# the first remedy a scale warning names: the estimator's own input map
# (these warnings fire only without it)
_SCALING_ADVICE = ("use input_transform='auto' (the default) or "
                   "'robust_clip', or ")


def unscaled_features(X):
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
    if rms[j] > UNSCALED_RMS:
        return (f"feature {j} has root-mean-square {rms[j]:.3g} (mean "
                f"{mean[j]:.3g}, standard deviation {std[j]:.3g})")
    varying = std[std > 1e-12 * max(float(std.max()), 1e-300)]
    if not sp.issparse(X) and varying.size >= 2 and (
            varying.max() > UNSCALED_SPREAD * varying.min()):
        return (f"the features' standard deviations range from "
                f"{varying.min():.3g} to {varying.max():.3g}")
    return None


def check_inputs(X, mapped):
    """Warn about inputs the network sees (``X``, after the input map when
    ``mapped``) that curvature steps handle badly. Returns ``(x_max,
    unscaled)``: the largest magnitude and :func:`unscaled_features`' sentence
    (None with the map, which puts every column on unit scale)."""
    # (max and -min: no temporary of X's size)
    x_max = float(max(X.max(), -X.min()))
    if x_max >= EXTREME_INPUT:
        warnings.warn(
            f"X has values up to {x_max:.4g} in absolute value. Curvature-based "
            "steps are sensitive to extreme inputs (an outlying row can take "
            f"a huge step): {_SCALING_ADVICE}standardize with "
            "StandardScaler, and for heavy tails use RobustScaler or "
            "QuantileTransformer, or clip the features.", UserWarning)
    unscaled = None if mapped else unscaled_features(X)
    if unscaled is not None and x_max < EXTREME_INPUT:
        warnings.warn(
            f"The features of X are not standardized: {unscaled}. The "
            "initial weights and the curvature of the steps assume inputs "
            f"of unit scale: {_SCALING_ADVICE}standardize them, e.g. with "
            "StandardScaler in a Pipeline.", UserWarning)
    return x_max, unscaled


def check_width(est, network, structure, n_samples, batch_size):
    """Warn before fitting when n_hidden is absurd for the data: far more
    parameters than samples and an estimated cost of hours or a step of
    gigabytes."""
    p = network.n_params
    costs = network.step_costs(batch_size, **structure)
    # the forward passes and Jacobian products: ~10 passes over b × p
    flops = min(costs.values()) + 10.0 * batch_size * p
    nbytes = min(_memory.estimate_solver_bytes(
        batch_size, network.n_features, network.n_hidden, network.n_outputs,
        network.fit_intercept, **structure).values())
    steps = -(-n_samples // batch_size) * est.max_iter
    if (p > ABSURD_PARAMS_PER_SAMPLE * n_samples
            and (flops * steps > ABSURD_FIT_FLOPS or nbytes > ABSURD_STEP_BYTES)):
        warnings.warn(
            f"n_hidden={est.n_hidden} gives {p:,} parameters for "
            f"{n_samples} training samples ({p / n_samples:,.0f} per "
            f"sample); one step is estimated at {flops:.2g} flops and "
            f"{nbytes / 2**30:.2g} GiB, the fit (max_iter={est.max_iter}) "
            f"at {flops * steps:.2g} flops. Widths of 100 to a few "
            "thousand units suit data of this size: lower n_hidden.",
            UserWarning)


def check_finite(problem, result, theta):
    """MLPClassifier's error when the data leave no finite parameters:
    non-finite weights, or (after a divergence) weights whose training risk
    is not finite, i.e. a model that would predict NaN or inf."""
    finite = np.all(np.isfinite(theta))
    if finite and result.status == "diverged":
        with np.errstate(all="ignore"):
            evaluation = problem.evaluate(theta, problem.batch(), with_deriv=False)
        finite = np.isfinite(evaluation.objective)
    if not finite:
        raise ValueError(
            "Solver produced non-finite parameter weights. The input data may"
            " contain large values and need to be preprocessed.")


def _not_learned_advice(est, problem, steps, shrink, penalty0, baseline,
                        unscaled, x_max):
    """The most likely cause of a fit that did not learn, as advice."""
    if problem.regularized and problem.tau > 0 \
            and penalty0 > PENALTY_DOMINATES * baseline \
            and (shrink < COLLAPSED_NORM or max(steps) < TINY_STEP):
        return (f"tau={problem.tau:.3g} is too strong: the penalty "
                f"τ Σ ḡ(θ) at the initial weights, {penalty0:.3g}, is "
                f"{penalty0 / baseline:.3g} times the risk of a constant "
                f"prediction, so the penalty, not the data, drives the "
                f"fit (step sizes α ≤ {max(steps):.2g}, weights at "
                f"{shrink:.2g} of their initial norm). Use a smaller tau "
                + ("(search np.logspace(-5, -1, 5); tau='auto' weighs "
                   "sample_weight as repeated rows, so weights that sum "
                   "to few rows give a heavy penalty)."
                   if est.tau in TAU_RULES else
                   "(tau='auto', or search np.logspace(-5, -1, 5))."))
    path = getattr(est, "tau_path_", None)
    if path is not None and (shrink < COLLAPSED_NORM or max(steps) < TINY_STEP):
        how = ({"gcv": "generalized cross-validation"}.get(
            path.get("criterion"), "its criterion")
            + " of the problem linearized at the initial weights")
        climb = path.get("evidence_path")
        if climb is not None and climb["chosen"] != 0:
            how = ("the Laplace evidence of the fitted network, climbing from "
                   "the τ of " + how)
        return (f"tau={est.tau!r} chose τ = {problem.tau:.3g} by "
                f"{how}: the criterion finds the "
                "signal too weak for the network to beat a constant "
                f"prediction, and the weights shrank to {shrink:.2g} of their "
                "initial norm. If you expect signal, compare smaller fixed "
                "values by cross-validation (e.g. tau in np.logspace(-5, -1, "
                "5) in GridSearchCV).")
    if unscaled is not None or x_max > 10:
        reason = unscaled or f"their values reach {x_max:.3g}"
        return (f"The features are not standardized ({reason}): scale "
                f"them, e.g. with StandardScaler in a Pipeline.")
    if est.solver == "gd":
        return (f"Try another learning_rate than {est.learning_rate} or a "
                "larger max_iter.")
    return "Try a larger damping, a smaller step_size or a larger max_iter."


def check_learned(est, problem, result, unscaled, x_max, penalty0, theta0, theta):
    """Warn when a fit ends no better than a constant prediction, with its
    most likely cause: an over-strong tau, unscaled features, or the step
    (damping, step_size; gd's learning_rate). At max_iter (whose warning
    already says to run longer) a fit of fewer than :data:`MIN_JUDGED`
    iterations is not judged."""
    risks = est.history_["risk"][-result.state.n_iter:]
    if not risks:
        return
    w = problem.sample_weight
    baseline = problem.loss.constant_risk(problem.Y, w / w.sum())
    # a risk at the rounding level of the targets is zero (a constant
    # target's standardized values are rounding noise of its mean)
    rounding = np.finfo(np.float64).eps * (1.0 + float(np.average(
        np.square(np.asarray(problem.Y, dtype=np.float64)).sum(axis=1),
        weights=w)))
    if not (baseline > 0 and risks[-1] > max(LEARNED_FRACTION * baseline,
                                             rounding)):
        return  # (a constant already predicts the weighted data exactly)
    if result.status == "max_iter" and len(risks) < MIN_JUDGED:
        return  # too short to judge: the max_iter warning says to go on
    steps = est.history_["step_size"][-len(risks):]
    shrink = np.linalg.norm(theta) / max(np.linalg.norm(theta0),
                                         np.finfo(float).tiny)
    advice = _not_learned_advice(est, problem, steps, shrink, penalty0, baseline,
                                 unscaled, x_max)
    warnings.warn(
        f"The fit did not learn: its final training risk {risks[-1]:.4g} is "
        f"{risks[-1] / baseline:.0%} of the risk of a constant prediction "
        f"({baseline:.4g}); it ended because {result.reason}. {advice}",
        ConvergenceWarning)


def check_validation_split(est, n_samples, labels):
    """Why the early-stopping split cannot work, or None when it can: at
    least two validation rows (R² and accuracy of one row are meaningless
    or NaN), and for classifiers one row of every class on each side of the
    stratified split."""
    fraction = est.validation_fraction
    n_val = int(np.ceil(fraction * n_samples))
    n_train = n_samples - n_val
    need_val, need_train, why = 2, 2, "two validation samples"
    if labels is not None:
        codes, counts = np.unique(labels, return_counts=True)
        if counts.min() < 2:
            # an error, as MLPClassifier's (train_test_split's) words
            few = est.classes_[codes[counts < 2].astype(int)].tolist()
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


def report(est, result, incremental, refit=False):
    """Warn about a fit that did not end by converging (a refit to the
    watch's best epoch ends at its ``max_iter`` by design)."""
    if result.status == "diverged":
        if est.solver == "gd":
            # plain gradient descent has neither damping nor step_size
            advice = [f"a smaller learning_rate than {est.learning_rate}",
                      "standardized features (StandardScaler)"]
        else:
            advice = ["a larger damping", "a smaller step_size"]
            if est.line_search is not True:
                advice.append("line_search=True")
        warnings.warn(
            f"{'Gradient descent' if est.solver == 'gd' else 'GGN-SCORE'} "
            f"diverged after {est.n_iter_} iterations "
            f"({result.reason}); kept the last parameters from before it. Try "
            f"{', '.join(advice[:-1])} or {advice[-1]}.",
            ConvergenceWarning,
        )
    elif (result.status == "max_iter" and not incremental and est.max_iter > 1
          and not refit):
        warnings.warn(
            f"Maximum iterations ({est.max_iter}) reached and the optimization "
            "hasn't converged yet. Increase max_iter or tol.",
            ConvergenceWarning,
        )
