"""Shared estimator logic: validation, initialisation and the training loop."""

import time
import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight

from ._activations import ACTIVATIONS, activate
from ._network import ForwardCache, TwoLayerNetwork
from ._regularizers import REGULARIZERS
from ._solver import (
    StepFailure,
    armijo_backtracking,
    choose_linear_solver,
    ggn_direction,
    step_size_rule,
)

# An objective this many times the initial one counts as divergence.
_DIVERGENCE_FACTOR = 1e4
# batch_size="auto": full batch while the dual system b·K stays this small.
_AUTO_FULL_BATCH_ROWS = 1024
_AUTO_BATCH_ROWS = 256


def _kappa(scaling, n_hidden):
    if scaling == "ntk":
        return 1.0 / np.sqrt(n_hidden)
    if scaling == "mean_field":
        return 1.0 / n_hidden
    return float(scaling)


class BaseGGNScore(BaseEstimator, metaclass=ABCMeta):
    """Base class of the GGN-SCORE estimators; use the subclasses."""

    _parameter_constraints = {
        "n_hidden": [Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "scaling": [
            StrOptions({"ntk", "mean_field"}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "fit_intercept": ["boolean"],
        "regularizer": [StrOptions(set(REGULARIZERS))],
        "mu": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "tau": [Interval(Real, 0, None, closed="left")],
        "step_size": [Interval(Real, 0, 1, closed="right")],
        "damping": [StrOptions({"auto", "tau"}),
                    Interval(Real, 0, None, closed="neither")],
        "line_search": ["boolean"],
        "linear_solver": [StrOptions({"auto", "dual", "primal"})],
        "solver": [StrOptions({"ggn", "gd"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left"),
                       None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "store_initial_weights": ["boolean"],
    }

    @abstractmethod
    def __init__(self, n_hidden, activation, scaling, fit_intercept, regularizer,
                 mu, tau, step_size, damping, line_search, linear_solver, solver,
                 learning_rate, batch_size, max_iter, tol, n_iter_no_change,
                 early_stopping, validation_fraction, shuffle, random_state,
                 warm_start, verbose, store_initial_weights):
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

    # ---------------------------------------------------------------- hooks
    @abstractmethod
    def _validate_input(self, X, y, reset, classes=None):
        """Return ``(X, Y)`` with Y the (b × K) training targets in X's dtype."""

    @abstractmethod
    def _score_outputs(self, outputs, Y, sample_weight):
        """Score (R² or accuracy) of raw outputs against target matrix Y."""

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

    def _store_theta(self, network, theta):
        for name, value in self._weights_dict(network, theta).items():
            setattr(self, name + "_", value)

    def _raw_output(self, X):
        """Φ(X) of shape (n_samples, n_outputs_) from the public weights."""
        pre = X @ self.hidden_weights_.T
        if self.fit_intercept:
            pre += self.hidden_intercept_
        rho, _ = activate(pre, self.activation, with_deriv=False)
        out = rho @ self.output_weights_
        out *= _kappa(self.scaling, self.n_hidden)
        if self.fit_intercept:
            out += self.output_intercept_
        return out

    def _resolve_batch_size(self, n_samples, n_outputs):
        if self.batch_size is None:
            return n_samples
        if self.batch_size == "auto":
            if n_samples * n_outputs <= _AUTO_FULL_BATCH_ROWS:
                return n_samples
            return max(1, min(n_samples, _AUTO_BATCH_ROWS // n_outputs))
        if self.batch_size > n_samples:
            warnings.warn(f"batch_size={self.batch_size} is larger than the "
                          f"{n_samples} training samples; using a full batch.")
        return min(self.batch_size, n_samples)

    # ------------------------------------------------------------------ fit
    def _fit(self, X, y, sample_weight=None, incremental=False, classes=None,
             X_val=None, y_val=None, sample_weight_val=None):
        first_call = not (incremental and hasattr(self, "n_iter_"))
        X, Y = self._validate_input(X, y, reset=first_call, classes=classes)
        dtype = X.dtype
        sample_weight = _check_sample_weight(sample_weight, X, dtype=dtype,
                                             ensure_non_negative=True)
        if (X_val is None) != (y_val is None):
            raise ValueError("X_val and y_val must be given together.")

        if not incremental or not hasattr(self, "_rng"):
            self._rng = check_random_state(self.random_state)
        rng = self._rng
        network = self._network(X.shape[1], Y.shape[1])
        reuse = self.warm_start or (incremental and not first_call)
        fresh_start = not (reuse and hasattr(self, "hidden_weights_"))
        theta = self._initial_theta(network, dtype, rng, reuse)
        if self.store_initial_weights and (fresh_start
                                           or not hasattr(self, "initial_weights_")):
            self.initial_weights_ = self._weights_dict(network, theta)
        self._reset_history(reuse)

        # Validation data: given (as in HistGradientBoosting), or with early
        # stopping a held-out split (stratified for classifiers).
        early_stopping = self.early_stopping and not incremental
        if X_val is not None:
            X_val, Y_val = self._validate_input(X_val, y_val, reset=False)
            X_val = X_val.astype(dtype, copy=False)
            Y_val = Y_val.astype(dtype, copy=False)
            sw_val = _check_sample_weight(sample_weight_val, X_val, dtype=dtype,
                                          ensure_non_negative=True)
        elif early_stopping:
            stratify = np.asarray(y) if is_classifier(self) else None
            idx_train, idx_val = train_test_split(
                np.arange(X.shape[0]), test_size=self.validation_fraction,
                random_state=rng, stratify=stratify,
            )
            X_val, Y_val, sw_val = X[idx_val], Y[idx_val], sample_weight[idx_val]
            X, Y, sample_weight = X[idx_train], Y[idx_train], sample_weight[idx_train]
            if not np.sum(sample_weight) > 0:
                raise ValueError("All samples left for training after the "
                                 "early-stopping split have zero sample_weight.")
        if X_val is not None:
            Xa_val = network.augment(X_val)
            s_val = sw_val / sw_val.sum()
            for key in ("validation_risk", "validation_score"):
                self.history_.setdefault(key, [])
        best_theta = theta

        n_samples = X.shape[0]
        Xa = network.augment(X)
        batch_size = self._resolve_batch_size(n_samples, Y.shape[1])
        full_batch = batch_size >= n_samples
        # partial_fit streams chunks: that is mini-batch training for "auto".
        state = _TrainingState(self, network, self._regularizer_object(), Y,
                               sample_weight, full_batch and not incremental)
        if reuse:  # judge divergence against the start of the whole sequence
            state.initial_objective = getattr(self, "_initial_objective", None)
        self.linear_solver_ = choose_linear_solver(network, batch_size,
                                                   self.linear_solver)
        max_iter = 1 if incremental else self.max_iter
        start = time.perf_counter()
        elapsed0 = self.history_["time"][-1] if self.history_["time"] else 0.0
        monitoring = 0.0  # time spent on validation, kept out of history_
        diverged = converged = False
        for _ in range(max_iter):
            if full_batch:
                theta, record, diverged = state.full_batch_iteration(theta, Xa)
            else:
                theta, record, diverged = state.epoch(theta, Xa, batch_size, rng)
            if diverged:
                break
            objective = record["objective"]
            previous_best = self.best_loss_
            self.n_iter_ += 1
            self.loss_curve_.append(objective)
            self.best_loss_ = min(self.best_loss_, objective)
            now = time.perf_counter()
            record["time"] = elapsed0 + now - start - monitoring
            if X_val is not None:
                outputs = network.forward(theta, Xa_val, with_deriv=False).outputs
                record["validation_risk"] = state.loss.risk(outputs, Y_val, s_val)
                record["validation_score"] = self._score_outputs(outputs, Y_val,
                                                                 sw_val)
                monitoring += time.perf_counter() - now
            for key, value in record.items():
                self.history_.setdefault(key, []).append(value)
            if self.verbose:
                extra = ("" if X_val is None else
                         f", validation score = {record['validation_score']:.6g}")
                print(f"Iteration {self.n_iter_}, objective = {objective:.8g}, "
                      f"risk = {record['risk']:.8g}, "
                      f"step size = {record['step_size']:.4g}{extra}, "
                      f"time = {record['time']:.3f}s")
            if early_stopping:
                score = record["validation_score"]
                self.validation_scores_.append(score)
                if score > self.best_validation_score_:
                    best_theta = theta
                if score < self.best_validation_score_ + self.tol:
                    self._no_improvement_count += 1
                else:
                    self._no_improvement_count = 0
                self.best_validation_score_ = max(self.best_validation_score_, score)
            elif objective > previous_best - self.tol:
                self._no_improvement_count += 1
            else:
                self._no_improvement_count = 0
            if full_batch and record["step_size"] == 0.0 and self.line_search:
                # No decrease along the Gauss-Newton direction: θ cannot move,
                # and every further iteration would repeat the same step.
                converged = True
                if self.verbose:
                    print("Line search found no decrease. Stopping.")
                break
            if not incremental and self._no_improvement_count > self.n_iter_no_change:
                converged = True
                if self.verbose:
                    print(f"Objective did not improve by more than tol={self.tol} for "
                          f"{self.n_iter_no_change} consecutive iterations. Stopping.")
                break
        if early_stopping:
            theta = best_theta
        self._store_theta(network, theta)
        self._initial_objective = state.initial_objective
        if diverged:
            advice = ["a larger damping", "a smaller step_size"]
            if not self.line_search:
                advice.append("line_search=True")
            warnings.warn(
                f"GGN-SCORE diverged after {self.n_iter_} iterations "
                f"({state.failure}); kept the last parameters from before it. Try "
                f"{', '.join(advice[:-1])} or {advice[-1]}.",
                ConvergenceWarning,
            )
        elif not converged and not incremental and self.max_iter > 1:
            warnings.warn(
                f"Maximum iterations ({self.max_iter}) reached and the optimization "
                "hasn't converged yet. Increase max_iter or tol.",
                ConvergenceWarning,
            )
        return self

    def _reset_history(self, reuse):
        """Start the per-iteration records, or continue them when warm-starting."""
        if not hasattr(self, "loss_curve_") or not reuse:
            self.loss_curve_ = []
            self.history_ = {"objective": [], "risk": [], "step_size": [],
                             "time": []}
            self.n_iter_ = 0
            self.t_ = 0
            self.best_loss_ = np.inf
            self.validation_scores_ = None
            self.best_validation_score_ = None
        if self.early_stopping and self.validation_scores_ is None:
            self.validation_scores_ = []
            self.best_validation_score_ = -np.inf
        self._no_improvement_count = 0

    def _weights_dict(self, network, theta):
        U_aug, V, b_o = network.unpack(theta)
        weights = {"hidden_weights": np.array(U_aug[:, : network.n_features]),
                   "output_weights": np.array(V)}
        if self.fit_intercept:
            weights["hidden_intercept"] = np.array(U_aug[:, -1])
            weights["output_intercept"] = np.array(b_o)
        return weights


class _TrainingState:
    """The objective and one step of the solver over a fixed training set."""

    def __init__(self, estimator, network, reg, Y, sample_weight, full_batch):
        self.est = estimator
        self.network = network
        self.reg = reg
        self.Y = Y
        self.sample_weight = sample_weight
        self.loss = estimator._loss_object()
        self.tau = float(estimator.tau)
        damping = estimator.damping
        if damping == "auto":
            damping = "tau" if full_batch and self.tau > 0 else 1.0
        if damping == "tau" and estimator.solver == "ggn" and self.tau == 0:
            raise ValueError(
                f"damping={estimator.damping!r} uses H = tau * g''(theta) here, "
                "which is zero for tau=0; set tau > 0 or a positive float damping."
            )
        self.curvature_scale = self.tau if damping == "tau" else float(damping)
        self.M_g = reg.self_concordance_constant(network.n_params)
        self.failure = None
        self._last_reg = (None, None)
        self.last_risk = np.nan
        self.initial_objective = None

    def regularization(self, theta):
        # θ accepted by a line search is the very array whose g was computed
        # in its trial: reuse it at the next step (one pass over p saved).
        if theta is self._last_reg[0]:
            return self._last_reg[1]
        value = self.tau * self.reg.value_sum(theta)
        self._last_reg = (theta, value)
        return value

    def objective(self, theta, Xa, Y, s, with_deriv=True):
        """``(L, R, cache)``; GD minimises the unregularized risk (SPEC §7)."""
        cache = self.network.forward(theta, Xa, with_deriv)
        risk = self.loss.risk(cache.outputs, Y, s)
        if self.est.solver == "gd":
            return risk, risk, cache
        return risk + self.regularization(theta), risk, cache

    def _diverged(self, objective, theta):
        if not np.isfinite(objective) or not np.all(np.isfinite(theta)):
            self.failure = "non-finite objective or parameters"
            return True
        if self.initial_objective is None:
            self.initial_objective = objective
        elif objective > _DIVERGENCE_FACTOR * max(1.0, self.initial_objective):
            self.failure = f"objective grew to {objective:.3g}"
            return True
        return False

    def step(self, theta, Xa, Y, s, current=None):
        """One GGN-SCORE (or GD) step on a batch.

        Returns ``(θ_new, L_before, L_after_or_None, α, cache_after_or_None)``;
        raises :class:`StepFailure`.
        """
        if current is None:
            current = self.objective(theta, Xa, Y, s)
        obj, risk, cache = current
        self.last_risk = risk
        if self._diverged(obj, theta):
            raise StepFailure(self.failure)
        if self.est.solver == "gd":
            residual, _ = self.loss.residual_and_factor(cache.outputs, Y, s)
            direction = self.network.gradient(theta, cache, residual)
            alpha = float(self.est.learning_rate)
            new = theta - alpha * direction
            return new, obj, None, alpha, None
        # float32 fits: the dual step runs in float32 and, when its error
        # estimate asks for it, gets mixed-precision iterative refinement with
        # float64 residuals or a float64 recomputation (see ggn_direction): at
        # the paper's τ the system's condition number (1e5-1e9) is beyond
        # float32 alone (measured direction errors 2e-3 at τ=1e-4 and 2 at
        # τ=1e-6). The primal form's cost is its p × p factorization, so it
        # is simply done in float64.
        form = choose_linear_solver(self.network, Xa.shape[0], self.est.linear_solver)
        theta_w, cache_w, Y_w, s_w = theta, cache, Y, s
        if theta.dtype != np.float64 and form == "primal":
            theta_w = theta.astype(np.float64)
            cache_w = ForwardCache(*(np.asarray(a, dtype=np.float64) for a in (
                cache.Xa, cache.rho, cache.rho_deriv, cache.outputs)))
            Y_w = Y.astype(np.float64, copy=False)
            s_w = s.astype(np.float64, copy=False)
        residual, factor = self.loss.residual_and_factor(
            cache_w.outputs, Y_w, s_w.astype(cache_w.outputs.dtype, copy=False))
        reg_grad, D, eta = self.reg.step_quantities(theta_w, self.tau,
                                                    self.curvature_scale)
        direction, grad = ggn_direction(self.network, theta_w, cache_w, residual,
                                        factor, reg_grad, D, form)
        alpha = step_size_rule(self.est.step_size, self.M_g, eta)
        direction = direction.astype(theta.dtype, copy=False)
        grad = grad.astype(theta.dtype, copy=False)
        if not self.est.line_search:
            return theta - alpha * direction, obj, None, alpha, None
        trials = {}

        def trial_objective(candidate):
            trials["last"] = self.objective(candidate, Xa, Y, s)
            return trials["last"][0]

        alpha, new_obj, new = armijo_backtracking(trial_objective, theta, direction,
                                                  grad, alpha, obj)
        if alpha == 0.0:  # no decrease found along d: stay put
            return theta, obj, obj, 0.0, current
        return new, obj, new_obj, alpha, trials["last"]

    def full_batch_iteration(self, theta, Xa):
        """One step on all samples: ``(θ, record, diverged)``."""
        s = self.sample_weight / self.sample_weight.sum()
        current = getattr(self, "_current", None)
        try:
            new, _, _, alpha, after = self.step(theta, Xa, self.Y, s, current)
            if after is None:
                after = self.objective(new, Xa, self.Y, s)
            if self._diverged(after[0], new):
                raise StepFailure(self.failure)
        except StepFailure as exc:
            self.failure = str(exc)
            return theta, None, True
        self._current = after
        self.est.t_ += 1
        return new, {"objective": after[0], "risk": after[1], "step_size": alpha}, False

    def epoch(self, theta, Xa, batch_size, rng):
        """One shuffled pass in mini-batches: ``(θ, record, diverged)``.

        The record holds the epoch means (weighted by batch weight) of the
        batch objectives and risks before each step, and of the step sizes.
        """
        n = Xa.shape[0]
        epoch_start = theta
        order = rng.permutation(n) if self.est.shuffle else np.arange(n)
        sums = {"objective": 0.0, "risk": 0.0, "step_size": 0.0}
        weight_total = 0.0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            w = self.sample_weight[idx]
            w_sum = float(w.sum())
            if w_sum <= 0:
                continue
            try:
                new, before, _, alpha, _ = self.step(theta, Xa[idx], self.Y[idx],
                                                     w / w_sum)
                if not np.all(np.isfinite(new)):
                    raise StepFailure("non-finite parameters")
            except StepFailure as exc:
                # Batches of this epoch may already have moved θ far off (the
                # divergence test only sees batch objectives): go back to the
                # parameters that completed the last epoch.
                self.failure = str(exc)
                return epoch_start, None, True
            theta = new
            last_batch = (idx, w / w_sum)
            for key, value in (("objective", before), ("risk", self.last_risk),
                               ("step_size", alpha)):
                sums[key] += value * w_sum
            weight_total += w_sum
            self.est.t_ += 1
        # The last step of the epoch is checked on its own batch.
        if weight_total > 0 and self._diverged(
                self.objective(theta, Xa[last_batch[0]], self.Y[last_batch[0]],
                               last_batch[1], False)[0], theta):
            return epoch_start, None, True
        return theta, {k: v / weight_total for k, v in sums.items()}, False
