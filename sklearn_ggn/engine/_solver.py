"""The training loop, once: GGN-SCORE and the paper's gradient-descent
baseline."""

import math
import time
import zlib
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np

from .. import _memory
from .._config import one_blas_thread
from .._kernels import all_finite
from ._linearization import StepFailure
from ._strategies import grew

# BLAS thread policy: steps estimated below this many flops run on one BLAS
# thread. Measured on a 2-core machine with other work running (per step,
# 1 vs 2 threads): letter-sized mini-batches (b = 9, K = 26) 6.2 vs 87 ms,
# b = 256, K = 1: 23 vs 70 ms, b = 100, K = 10 (4.7e8 flops): 97 vs 748 ms;
# even a full batch of 1000 rows with 10 500 parameters (1.1e10 flops) was
# faster on one thread there (0.64 vs 1.07 s). On the idle machine, two
# threads changed small steps by -18 % to +17 % (b = 9, K = 26: 2.95 vs
# 3.48 ms; b = 256, K = 1: 6.4 vs 5.3 ms; b = 100, K = 10: 52 vs 60 ms) and
# gained 1.2-1.3x on full batches of 4.7e9-1.1e10 flops (256 vs 207 ms), which
# keep the caller's threads: the cap costs little when idle and saves 3-14x
# when the machine is busy.
SMALL_STEP_FLOPS = 1e9


def choose_linear_solver(network, batch_size, linear_solver="auto", itemsize=8,
                         available_bytes=None, *, rank=None, per_unit=False):
    """The form of the Gauss-Newton system for steps on ``batch_size`` rows.

    ``"auto"`` takes the form with fewer flops (``TwoLayerNetwork.step_costs``)
    among those whose peak memory fits in the available memory; an explicit
    form is checked the same way. Nothing is allocated (see
    ``sklearn_ggn._memory`` for the estimates).

    Parameters
    ----------
    network : TwoLayerNetwork
    batch_size : int
        Rows per step.
    linear_solver : {"auto", "dual", "primal"}, default="auto"
    itemsize : int, default=8
        4 for float32 fits.
    available_bytes : int or None, default=None
        None measures the machine's available memory.
    rank : int or None, default=None
        Rows of the kernel system per sample (K when None: the exact output
        curvature; 1 for ``curvature="true_vs_rest"``).
    per_unit : bool, default=False
        Whether H is constant over each hidden unit (``hessian="per_unit"``).

    Returns
    -------
    form : {"dual", "primal"}

    Raises
    ------
    MemoryError
        When no allowed form fits, with both sizes and the ``batch_size`` or
        ``n_hidden`` that would.
    """
    return _memory.choose_linear_solver(
        linear_solver, batch_size, network.n_features, network.n_hidden,
        network.n_outputs, network.fit_intercept, itemsize, available_bytes,
        rank=rank, per_unit=per_unit)


def step_structure(curvature, hessian, loss, n_outputs):
    """The structure of a GGN-SCORE step for the cost and memory model.

    Parameters
    ----------
    curvature : {"exact", "true_vs_rest"}
    hessian : {"diagonal", "per_unit"}
    loss : object
        The loss (its ``reduces(curvature, n_outputs)`` says whether the
        curvature has one row per sample; a loss without it keeps Q exact).
    n_outputs : int

    Returns
    -------
    structure : dict
        Empty for the exact step (K rows of the kernel system per sample,
        diagonal H); else ``{"rank": R, "per_unit": bool}``.
    """
    reduces = getattr(loss, "reduces", None)
    rank = 1 if reduces is not None and reduces(curvature, n_outputs) else None
    per_unit = hessian == "per_unit"
    if per_unit and rank is None:
        rank = n_outputs
    if rank is None and not per_unit:
        return {}
    return {"rank": rank, "per_unit": per_unit}


@dataclass
class SolverState:
    """What a solver carries from one ``solve`` to the next (warm starts and
    ``partial_fit``).

    Attributes
    ----------
    initial_objective : float or None
        The first objective of the sequence; divergence is judged against it.
    best_objective : float
        Smallest objective recorded so far (the stopping rule's reference).
    n_iter : int
        Iterations (full batch) or epochs run so far.
    n_steps : int
        Steps taken so far.
    damping : object or None
        The damping strategy with its adapted state (``AdaptiveDamping``).
    step_from : ndarray or None
        Between ``partial_fit`` calls (adaptive damping): θ before the last
        call's last step, which the next call's first batch judges (the
        adaptive damping's test on the next batch; a call of one batch
        would otherwise never be judged, and small chunks diverged).
    step_to : int or None
        The CRC-32 of the θ that step led to: the next call judges the step
        only when it starts from that θ (not after a ``fit``, weights set by
        hand or a change of dtype in between).
    """

    initial_objective: float = None
    best_objective: float = np.inf
    n_iter: int = 0
    n_steps: int = 0
    damping: object = None
    step_from: object = None
    step_to: object = None

    def carry_step(self, previous, theta):
        """Keep θ before the last step (``previous``, or None to keep
        none) for the next ``partial_fit`` call, with the mark of θ."""
        self.step_from = previous
        self.step_to = None if previous is None else _mark(theta)

    def carried_step(self, theta):
        """θ before the last call's last step when ``theta`` is where that
        step led, else None."""
        previous = self.step_from
        if (previous is None or np.shape(previous) != theta.shape
                or self.step_to != _mark(theta)):
            return None
        return np.asarray(previous, dtype=theta.dtype)

    def new_objective(self, restart=False):
        """Go on with another objective: its epochs are not judged against
        the ones before (the best objective here, the damping's last epoch
        and stalled epochs; divergence stays judged against the first
        objective, the stall rule's scale its first epoch).

        Parameters
        ----------
        restart : bool, default=False
            Another τ: the adaptive damping's λ starts again as in a fresh
            fit. False: more rows of the same problem, λ kept.
        """
        self.best_objective = np.inf
        if hasattr(self.damping, "new_objective"):
            self.damping.new_objective(restart=restart)


def _mark(theta):
    """A CRC-32 of θ's bytes (and dtype): the same θ, the same mark."""
    theta = np.ascontiguousarray(theta)
    return zlib.crc32(theta.tobytes(), zlib.crc32(theta.dtype.str.encode()))


@dataclass
class SolverResult:
    """The outcome of :meth:`Solver.solve`.

    Attributes
    ----------
    theta : ndarray of shape (p,)
        Final parameters (the last finite ones when the fit diverged).
    history : list of dict
        One record per iteration/epoch: ``"objective"``, ``"risk"``,
        ``"step_size"``, ``"damping"`` (GGN only), ``"time"`` and whatever the
        callback added.
    status : str
        ``"max_iter"``, ``"converged"`` (the stopping rule), ``"stopped"``
        (the callback asked), ``"no_decrease"`` (a full-batch line search
        found no decrease) or ``"diverged"``.
    reason : str
        A sentence saying why the loop ended.
    linear_solver : str or None
        The form every step of this solve used (None for gradient descent).
    state : SolverState
        To pass to the next ``solve`` of a warm-started sequence.
    """

    theta: np.ndarray
    history: list
    status: str
    reason: str
    linear_solver: str
    state: SolverState = field(default_factory=SolverState)


@dataclass
class _Step:
    theta: np.ndarray
    before: object  # Evaluation at the old θ
    after: object  # Evaluation at the new θ when the step computed it
    alpha: float
    damping: float = np.nan


class Solver:
    """The loop shared by GGN-SCORE and gradient descent.

    Parameters
    ----------
    batching : Batching
        Rows per step and shuffling.
    max_iter : int
        Iterations (full batch) or epochs (mini-batch) of one ``solve``.
    stopping : NoImprovement or None
        Rule on the objective; None leaves stopping to ``max_iter``, the
        rules on validation data and the callback (``partial_fit``).
    epochs_are_passes : bool, default=True
        False when a solve sees one chunk of a larger data set
        (``partial_fit``): its "epoch" is not a pass over the data, so the
        per-epoch rules (the damping's stall floor) are not applied, while
        the per-step adaptation carries on across the chunks.
    rules : sequence, default=()
        Stopping rules on validation data (``engine.EarlyStopping``,
        ``engine.OverfittingWatch``): ``rule(record, θ, n_iter)`` after the
        callback, returning None or the reason the fit ends.
    """

    form = None
    # (GGNScoreSolver's rules for stalled fits; gradient descent has none)
    damping_ends_fit = True
    stop_when_stalled = True

    def __init__(self, batching, max_iter, stopping=None, epochs_are_passes=True,
                 rules=()):
        self.batching = batching
        self.max_iter = max_iter
        self.stopping = stopping
        self.epochs_are_passes = epochs_are_passes
        self.rules = tuple(rules)

    def solve(self, problem, theta0, rng, callback=None, state=None, time_offset=0.0):
        """Minimise ``problem`` from ``theta0``.

        Parameters
        ----------
        problem : Problem
        theta0 : ndarray of shape (p,)
            Not modified.
        rng : numpy.random.RandomState
            Shuffles the epochs.
        callback : callable, default=None
            ``callback(record, theta) -> bool`` after every iteration/epoch;
            it may add entries to ``record``, and True stops the loop. Its
            time is not counted in ``record["time"]``.
        state : SolverState, default=None
            From the previous ``solve`` of a warm-started sequence.
        time_offset : float, default=0.0
            Added to the recorded times (training time of earlier solves).

        Returns
        -------
        result : SolverResult
        """
        state = SolverState() if state is None else state
        self.prepare(problem, state)
        small = self.step_flops(problem) < SMALL_STEP_FLOPS
        with one_blas_thread() if small else nullcontext():
            return self._loop(problem, theta0, rng, callback, state, time_offset)

    def step_flops(self, problem):
        """Estimated flops of one step (picks the BLAS thread policy)."""
        costs = problem.network.step_costs(min(self.batching.batch_size,
                                               problem.n_samples),
                                           **self.structure(problem))
        return costs[self.form] if self.form else 0.0

    def _loop(self, problem, theta0, rng, callback, state, time_offset):
        theta = theta0
        # (a partial_fit chunk of one batch is an epoch of one step: the
        # adaptive damping judges the last call's step on its rows)
        full_batch = (self.batching.full_batch(problem.n_samples)
                      and self.epochs_are_passes)
        self._carries_evaluation = full_batch
        history = []
        status, reason = "max_iter", f"maximum iterations ({self.max_iter}) reached"
        start = time.perf_counter()
        excluded = 0.0  # time spent in the callback
        current = None  # evaluation at θ, carried between full-batch steps
        for _ in range(self.max_iter):
            try:
                if full_batch:
                    theta, record, current = self._full_batch_iteration(
                        problem, theta, current, state)
                else:
                    theta, record = self._epoch(problem, theta, rng, state)
            except StepFailure as exc:
                status, reason = "diverged", str(exc)
                break
            state.n_iter += 1
            previous_best = state.best_objective
            state.best_objective = min(previous_best, record["objective"])
            now = time.perf_counter()
            record["time"] = time_offset + now - start - excluded
            stop = bool(callback(record, theta)) if callback is not None else False
            # (every rule hears of every iteration: they keep their state)
            ended = [reason for reason in (rule(record, theta, state.n_iter)
                                           for rule in self.rules) if reason]
            excluded += time.perf_counter() - now
            history.append(record)
            if full_batch and record["step_size"] == 0.0 and self.stalls_at_zero_step:
                # No decrease along the Gauss-Newton direction: θ cannot move,
                # and every further iteration would repeat the same step.
                status, reason = "no_decrease", ("the line search found no decrease "
                                                 "along the Gauss-Newton direction")
                break
            if ended or stop:
                status = "stopped"
                reason = ended[0] if ended else "the callback asked to stop"
                break
            damping = getattr(self, "damping", None)
            if (not full_batch and damping is not None and damping.converged()
                    and self.stop_when_stalled and self.damping_ends_fit):
                status = "converged"
                reason = (f"the epoch objective improved by less than "
                          f"{damping.stall_first:.1%} of the first epoch's in "
                          f"{damping.patience} consecutive epochs, even with the "
                          f"damping raised")
                break
            if self.stopping is not None and self.stopping(record["objective"],
                                                           previous_best):
                status = "converged"
                reason = (f"the objective did not improve by more than "
                          f"tol={self.stopping.tol} for "
                          f"{self.stopping.n_iter_no_change} consecutive iterations")
                break
        return SolverResult(theta, history, status, reason, self.form, state)

    # ---------------------------------------------------------- the loop
    def _check(self, objective, theta, state):
        """Raise :class:`StepFailure` when the fit diverges (θ None: already
        known finite, the objective alone is judged)."""
        if not math.isfinite(objective) or (theta is not None
                                            and not all_finite(theta)):
            raise StepFailure("non-finite objective or parameters")
        if state.initial_objective is None:
            state.initial_objective = objective
        elif grew(float(objective), float(state.initial_objective)):
            raise StepFailure(f"objective grew to {objective:.3g}")

    def _full_batch_iteration(self, problem, theta, current, state):
        batch = problem.batch()
        if current is None:
            current = problem.evaluate(theta, batch)
        self._check(current.objective, theta, state)
        step = self.step(problem, theta, batch, current)
        after = step.after
        if after is None:
            after = problem.evaluate(step.theta, batch)
        self._judge(after, current)
        self._check(after.objective, step.theta, state)
        state.n_steps += 1
        record = {"objective": after.objective, "risk": after.risk,
                  "step_size": step.alpha}
        self._add_damping(record, step.damping)
        return step.theta, record, after

    def _epoch(self, problem, theta, rng, state):
        """One pass in mini-batches. The record holds the epoch means
        (weighted by batch weight) of the batch objectives and risks before
        each step, and of the step sizes. A :class:`StepFailure` leaves the
        caller's θ, the parameters that completed the last epoch (batches of
        this epoch may already have moved θ far off: the divergence test only
        sees batch objectives)."""
        keys = ("objective", "risk", "step_size", "damping")
        damping = getattr(self, "damping", None)
        batches = self.batching.epoch(problem.n_samples, rng)
        theta, sums, weight_total = self._epoch_steps(problem, theta, batches,
                                                       state, damping, keys)
        # objective and risk over all the epoch's rows; the step size and
        # the damping over the batches that took a step
        stepped = sums["stepped"] or 1.0  # (no step: their sums are 0)
        record = {"objective": sums["objective"] / weight_total,
                  "risk": sums["risk"] / weight_total,
                  "step_size": sums["step_size"] / stepped}
        self._add_damping(record, sums["damping"] / stepped)
        if damping is not None and self.epochs_are_passes:
            damping.end_epoch(record["objective"], len(batches))
        return theta, record

    def _epoch_steps(self, problem, theta, batches, state, damping, keys):
        """The steps of one epoch: ``(θ, weighted sums of keys and the
        weight of the batches that stepped ("stepped"), total batch
        weight)``."""
        objective_sum = risk_sum = alpha_sum = damping_sum = weight_total = 0.0
        stepped = 0.0
        last = None
        adaptive = damping is not None and damping.adaptive
        previous = None  # θ before the last step, judged on the next batch
        if not self.epochs_are_passes and adaptive:
            # partial_fit: the last call's last step, when this call starts
            # where that step led (not after a fit, weights set by hand or
            # another dtype in between)
            previous = state.carried_step(theta)
        for idx in batches:
            batch = problem.batch(idx, step=True)
            if batch is None:
                # rows of zero weight: no step, and no risk, but their share
                # of the epoch (b w̄) counts in its means, which estimate
                # the weighted objective of all rows
                weight = len(idx) * problem.mean_weight
                if problem.regularized:
                    objective_sum += problem.regularization(theta) * weight
                weight_total += weight
                continue
            current = problem.evaluate(theta, batch)
            if adaptive and previous is not None:
                # (the previous θ's objective on this batch, a forward pass,
                # only when this batch's objective at θ fails the screen)
                old = (None if damping.screened(current.objective)
                       else problem.evaluate(previous, batch, False).objective)
                if not damping.accept(current.objective, old):
                    theta = previous  # undo the last step
                    current = problem.evaluate(theta, batch)
            if adaptive:
                damping.observe(current.objective)
            # θ is checked once: the epoch's first, then every step's own
            # (an undone step returns to a θ checked before); a pass over
            # the p parameters per step saved
            self._check(current.objective, theta if last is None else None,
                        state)
            step = self.step(problem, theta, batch, current)
            if not all_finite(step.theta):
                raise StepFailure("non-finite parameters")
            previous = theta
            theta = step.theta
            last = batch
            weight = batch.weight
            objective_sum += current.objective * weight
            risk_sum += current.risk * weight
            alpha_sum += step.alpha * weight
            damping_sum += step.damping * weight
            weight_total += weight
            stepped += weight
            state.n_steps += 1
        # The last step of the epoch is checked on its own batch.
        if last is not None:
            self._check(problem.evaluate(theta, last, False).objective, None, state)
        state.carry_step(previous if adaptive and not self.epochs_are_passes
                         else None, theta)
        sums = dict(zip(keys, (objective_sum, risk_sum, alpha_sum, damping_sum)))
        sums["stepped"] = stepped
        return theta, sums, weight_total

    @staticmethod
    def _add_damping(record, damping):
        if not np.isnan(damping):
            record["damping"] = damping

    # ---------------------------------------------------------- the step
    stalls_at_zero_step = False
    # whether a step's evaluation at the new θ is reused by the next step
    _carries_evaluation = True

    def prepare(self, problem, state):
        """Set-up before the first step of a ``solve``."""

    def structure(self, problem):
        """``{"rank": R, "per_unit": bool}`` of this solver's steps on
        ``problem`` for the cost and memory model; empty for the exact step
        (K rows per sample, diagonal H)."""
        return {}

    def step(self, problem, theta, batch, current):
        """One step from θ on ``batch`` (``current`` is its evaluation)."""
        raise NotImplementedError

    def _judge(self, after, current):
        """A full-batch step's evaluation ``after`` it, against ``current``
        before it (for the damping of a step without a line search)."""


class GGNScoreSolver(Solver):
    """GGN-SCORE: ``θ ← θ − α d`` with ``(J̃ᵀJ̃ + H) d = Jᵀe + ∇g``.

    Parameters
    ----------
    damping : FixedDamping
        Gives ``λ_H`` of ``H = λ_H ḡ''(θ)`` for each step.
    step_size : AdaptiveStepSize
        ``α = min(1, ᾱ / (1 + M_g η))``.
    line_search : ArmijoLineSearch or None
        Backtracking from that α on the batch objective.
    linear_solver : {"auto", "dual", "primal"}
        Form of the linear system; ``"auto"`` is resolved once per ``solve``
        for the batch size (:func:`choose_linear_solver`).
    batching, max_iter, stopping, epochs_are_passes, rules
        See :class:`Solver`.
    curvature : {"exact", "true_vs_rest"}, default="exact"
        The output curvature Q of every step (``Problem.linearize``).
    hessian : {"diagonal", "per_unit"}, default="diagonal"
        The structure of H (``Problem.linearize``).
    stop_when_stalled : bool, default=True
        False keeps iterating after a zero line-search step and after the
        adaptive damping's stalled epochs (the estimators'
        ``n_iter_no_change=np.inf``: run ``max_iter`` iterations, as MLP
        does).
    damping_ends_fit : bool, default=True
        False: the adaptive damping's stalled epochs raise the damping but
        do not end the fit (with early stopping the validation score
        decides: a fit still improving its validation score does not stop).
    """

    def __init__(self, damping, step_size, line_search, linear_solver, batching,
                 max_iter, stopping=None, epochs_are_passes=True,
                 curvature="exact", hessian="diagonal", stop_when_stalled=True,
                 damping_ends_fit=True, rules=()):
        super().__init__(batching, max_iter, stopping, epochs_are_passes, rules)
        self.stop_when_stalled = stop_when_stalled
        self.damping_ends_fit = damping_ends_fit
        self.damping = damping
        self.step_size = step_size
        self.line_search = line_search
        self.linear_solver = linear_solver
        self.curvature = curvature
        self.hessian = hessian

    @property
    def stalls_at_zero_step(self):
        return self.line_search is not None and self.stop_when_stalled

    def prepare(self, problem, state):
        # an adapted damping continues across warm starts and partial_fit
        if (type(state.damping) is type(self.damping)
                and _settings(state.damping) == _settings(self.damping)):
            self.damping = state.damping
        state.damping = self.damping
        self.damping.rows = min(self.batching.batch_size, problem.n_samples)
        self.form = choose_linear_solver(
            problem.network, min(self.batching.batch_size, problem.n_samples),
            self.linear_solver, problem.dtype.itemsize, **self.structure(problem))

    def structure(self, problem):
        return step_structure(self.curvature, self.hessian, problem.loss,
                              problem.network.n_outputs)

    def step(self, problem, theta, batch, current):
        damping = self.damping.value()
        # float32 fits: the dual step runs in float32 (with mixed-precision
        # refinement when its error estimate asks, see Linearization); the
        # primal form's cost is its p × p factorization, so it is simply
        # linearized in float64.
        work = (np.float64 if theta.dtype != np.float64 and self.form == "primal"
                else None)
        lin, eta = problem.linearize(theta, batch, current, damping, work,
                                     self.curvature, self.hessian)
        raw = lin.direction(self.form)
        direction = raw.astype(theta.dtype, copy=False)
        alpha = self.step_size(problem.M_g, eta)
        if self.line_search is None:
            # (the damping hears of the step from the objective it leaves:
            # _judge, once the full-batch iteration has evaluated it; on
            # mini-batches the next batch judges it)
            new = np.multiply(direction, -alpha)
            new += theta
            return _Step(new, current, None, alpha, damping)
        trials = {}

        def trial_objective(candidate):
            # a full-batch iteration carries the accepted trial to the next
            # step, which needs the activations' derivatives; a mini-batch
            # step only its objective
            trials["last"] = problem.evaluate(candidate, batch,
                                              self._carries_evaluation)
            return trials["last"].objective

        slope = lin.cached_slope(raw)
        if slope is None:
            slope = float(np.dot(lin.gradient.astype(theta.dtype, copy=False),
                                 direction))
        # (the linearization's arrays, its sensitivities and a float32 step's
        # float64 copies among them, are freed before the trial points'
        # forward passes)
        lin = None
        proposed = alpha
        alpha, _, new = self.line_search(trial_objective, theta, direction, None,
                                         alpha, current.objective, slope=slope)
        self.damping.update(alpha, proposed)
        if alpha == 0.0:  # no decrease found along d: stay put
            return _Step(theta, current, current, 0.0, damping)
        return _Step(new, current, trials["last"], alpha, damping)

    def _judge(self, after, current):
        if self.line_search is None:
            self.damping.judge(after.objective, current.objective)


class GradientDescentSolver(Solver):
    """The paper's baseline: ``θ ← θ − lr ∇R(θ)`` on the unregularized risk.

    Parameters
    ----------
    learning_rate : float
        The step ``lr``.
    batching, max_iter, stopping, rules
        See :class:`Solver`.
    """

    def __init__(self, learning_rate, batching, max_iter, stopping=None, rules=()):
        super().__init__(batching, max_iter, stopping, rules=rules)
        self.learning_rate = float(learning_rate)

    def step(self, problem, theta, batch, current):
        direction = problem.risk_gradient(theta, batch, current)
        return _Step(theta - self.learning_rate * direction, current, None,
                     self.learning_rate)


def _settings(damping):
    """A damping strategy's configuration (its adapted state excluded): an
    adapted damping carries over to the next solve only under the same
    rules."""
    names = ("unit", "increase", "decay", "reject_ratio", "stall", "patience",
             "stall_increase", "stall_first", "reference_rows", "work_steps",
             "scale", "decrease", "tau", "screen")
    return tuple(getattr(damping, name, None) for name in names)
