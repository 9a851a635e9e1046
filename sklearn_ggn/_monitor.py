"""What a fit records and shows, epoch by epoch: the history continued
across warm starts, the validation risk and score, ``verbose`` lines and
scikit-learn's callbacks."""

from typing import NamedTuple

import numpy as np

from ._kernels import normalized_weights


class Solved(NamedTuple):
    """One solve of :meth:`BaseGGNScore._solve`: its problem, records,
    early-stopping rule (or None), monitor and the engine's result."""

    problem: object
    records: object
    early: object
    monitor: object
    result: object
    batch_size: int


class Records:
    """The per-iteration records of a fit, continued across warm starts.

    Parameters
    ----------
    estimator : BaseGGNScore
        Read for the records of the fit it continues.
    reuse : bool
        Whether this fit continues the estimator's weights.
    early_stopping : bool
        Whether the validation score decides (its scores are recorded).
    """

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

    def attributes(self, result, early=None):
        """The fitted attributes of the records (``early``: the solve's
        ``engine.EarlyStopping``, which kept the validation scores)."""
        state = result.state
        objectives = self.history["objective"]
        best_validation_score = (early.best_score if early is not None
                                 else self.best_validation_score)
        if self.validation_scores is not None and not self.validation_scores:
            # stopped (diverged) before the first validation score
            best_validation_score = None
        return {"history_": self.history, "loss_curve_": list(objectives),
                # as MLPClassifier: the iterations of this call; the running
                # total of a warm-started sequence is len(loss_curve_)
                "n_iter_": len(objectives) - self.earlier_iterations,
                "t_": state.n_steps,
                # as MLPClassifier: None when early stopping decided
                "best_loss_": None if early is not None else state.best_objective,
                "validation_scores_": self.validation_scores,
                # the held-out risk per iteration/epoch, next to the
                # training objective of loss_curve_
                "validation_loss_curve_": (
                    list(self.history["validation_risk"])
                    if "validation_risk" in self.history else None),
                "best_validation_score_": best_validation_score}


class Monitor:
    """The solver's callback: validation risk and score, records, verbose
    lines and scikit-learn's callbacks, once per iteration/epoch. The
    stopping rules on these records are the solver's.

    Parameters
    ----------
    estimator : BaseGGNScore
        The estimator being fitted (its callbacks' context, ``verbose``).
    network : TwoLayerNetwork
    loss : object
        The training loss (the validation risk).
    validation : tuple or None
        ``(X_val, Y_val, sw_val, scorer)`` as the network sees them.
    records : Records
    theta0 : ndarray of shape (p,)
    max_iter : int
        The solve's iterations (the callbacks' subtasks).
    training : tuple
        ``(X, y, sample_weight)`` as given to the callbacks.
    dtype : numpy.dtype
        X's dtype (of the weights a callback's estimator holds).
    inputs : dict
        What a callback's estimator predicts from besides the weights.
    """

    def __init__(self, estimator, network, loss, validation, records, theta0,
                 max_iter, training, dtype, inputs):
        self.estimator = estimator
        self.dtype = dtype
        self.inputs = inputs
        self.network = network
        self.loss = loss
        self.records = records
        self.n_iter = records.earlier_iterations
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
        if self.context is not None:
            stop = self.epoch_context.call_on_fit_task_end(
                estimator=self.estimator, **self.task,
                reconstruction_attributes=self._reconstruction(theta))
            self._begin_epoch(theta)
        return stop

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
        """End the callbacks' context; say which rule ended the fit
        (``verbose``; reaching ``max_iter`` is the warning's to say)."""
        if self.context is not None:
            # The epoch begun after the last one never ran: end it empty.
            self.epoch_context.call_on_fit_task_end(estimator=self.estimator)
            self.context.call_on_fit_task_end(
                estimator=self.estimator, **self.task,
                reconstruction_attributes=self._reconstruction(theta))
        if self.estimator.verbose and result.status != "max_iter":
            print(f"Stopping: {result.reason}.")
