"""The interchangeable rules of the solver: damping, step size, line search,
batching and stopping. Each is configured once and asked during the loop.

The rules' formulas are the small functions below, which the strategy
classes call once per step on Python floats (plain Python: a compiled
function of a few scalars would cost more to load from the kernel cache, or
to compile, than all the calls of a fit)."""

import math

import numpy as np

# An objective this many times the initial one (or 1) counts as divergence.
DIVERGENCE_FACTOR = 1e4


def grew(objective, initial_objective):
    """Whether the objective grew past ``DIVERGENCE_FACTOR · max(1, L₀)``."""
    return objective > DIVERGENCE_FACTOR * max(1.0, initial_objective)


def step_size_rule(step_size, M_g, eta):
    """The paper's ``α = min(1, ᾱ / (1 + M_g η))``."""
    return min(1.0, step_size / (1.0 + M_g * eta))


def damping_rule(new_objective, old_objective, lam, floor, increase, decay,
                 reject_ratio):
    """``(accepted, λ)`` of the adaptive damping's test of the last step on
    the next batch: undone when it made that batch's objective more than
    ``reject_ratio`` times worse (``λ ← increase·λ``), else
    ``λ ← max(floor, decay·λ)``."""
    if new_objective > reject_ratio * old_objective:
        return False, lam * increase
    return True, max(floor, lam * decay)


def armijo_holds(trial, objective, c, alpha, slope):
    """Armijo's sufficient decrease ``L(θ − α d) ≤ L(θ) − c α rᵀd`` (and a
    finite trial)."""
    return math.isfinite(trial) and trial <= objective - c * alpha * slope


class FixedDamping:
    """A constant damping: ``H = λ_H ḡ''(θ)``.

    ``λ_H = τ`` is the paper's ``H = ∇²g`` ("exact"), ``λ_H = 1`` the
    authors' code.

    Parameters
    ----------
    lam : float
        ``λ_H > 0``.
    """

    adaptive = False

    def __init__(self, lam):
        self.lam = float(lam)

    def value(self):
        """The ``λ_H`` of the next step."""
        return self.lam

    def update(self, alpha, proposed):
        """Nothing to adapt after a step."""

    def judge(self, new_objective, old_objective):
        """Nothing to adapt after a step without a line search."""

    def end_epoch(self, objective, n_steps=None):
        """Nothing to adapt."""

    def converged(self):
        """A fixed damping never ends a fit."""
        return False


class TrustDamping:
    """Full-batch damping adapted like Levenberg-Marquardt's, down to τ.

    ``H = λ ḡ''(θ)`` with λ starting at ``initial`` (≥ τ). After each step
    the solver reports the step size the line search accepted and the one
    the step-size rule proposed: a step the line search had to shorten
    (the quadratic model overshot) raises λ by ``increase``; a step taken
    as proposed lowers it by ``decrease``, but never below τ, where the step
    is the paper's exact one (``H = ∇²g``). Without a line search the
    objective after the step judges it (:meth:`judge`): one that rose
    raises λ. The stationary points do not
    depend on λ; a tiny λ far from them makes the model overshoot and the
    line search halve (and the step-size rule's dual norm η grow as
    ``1/sqrt(λ)``).

    Parameters
    ----------
    tau : float
        τ > 0, λ's lower bound.
    initial : float
        λ of the first step (≥ τ).
    decrease, increase : float, default=1/3, 2.0
        The factors of a step taken as proposed and of a shortened one
        (Nielsen's rule, as in Madsen, Nielsen and Tingleff, "Methods for
        non-linear least squares problems", 2004).
    """

    adaptive = False

    def __init__(self, tau, initial, decrease=1 / 3, increase=2.0):
        self.tau = float(tau)
        self.lam = max(float(initial), self.tau)
        self.decrease = decrease
        self.increase = increase

    def value(self):
        """The ``λ_H`` of the next step."""
        return self.lam

    def update(self, alpha, proposed):
        """Adapt λ to the step just taken: ``alpha`` accepted by the line
        search of the ``proposed`` step size."""
        self._adapt(alpha < proposed)

    def judge(self, new_objective, old_objective):
        """Adapt λ to a step taken without a line search, from the
        objective it left: one that rose raises λ as a shortened step does,
        else λ falls (without this feedback every step lowered λ, and a fit
        whose objective rose from its first step diverged down to τ)."""
        self._adapt(new_objective > old_objective)

    def _adapt(self, overshot):
        """Nielsen's rule: ``increase`` after a step that overshot, else
        ``decrease`` down to τ."""
        if overshot:
            self.lam *= self.increase
        else:
            self.lam = max(self.tau, self.lam * self.decrease)

    def end_epoch(self, objective, n_steps=None):
        """Nothing to adapt per pass."""

    def converged(self):
        """Never ends a fit."""
        return False


class AdaptiveDamping:
    """Damping adapted on data the step did not see (mini-batch training).

    ``H = λ u ḡ''(θ)`` with ``u = 1/ḡ''(0)`` (μ for both ℓ1 smoothers, 1 for
    ℓ2): tied to μ so that ``H ≈ λ`` near θ = 0 whatever μ is. After each step the solver
    evaluates the *next* batch at the new θ (which it needs anyway) and,
    unless that objective passes the screen (:meth:`screened`: within
    ``screen`` times the typical batch objective), at the previous one:

    * when the new θ leaves that batch's objective more than ``screen``
      times the typical batch's and more than ``reject_ratio`` times its
      objective at the previous θ, the step is undone and
      ``λ ← increase·λ`` (a step that overfitted its own batch; a batch
      that is high at both θ does not undo it);
    * otherwise ``λ ← max(λ_floor, decay·λ)``.

    At the end of an epoch whose mean objective improved by less than
    ``stall`` relative to the previous epoch (slow), or by less than
    ``stall_first`` times the first epoch's objective (small: polishing far
    below where the fit started), the floor itself is raised by
    ``stall_increase``: when progress stalls the damping rises rather than
    the fit stopping (a gentle schedule: the noise of the steps falls while
    they keep moving). After ``patience`` epochs in a row of small progress
    the fit has converged. Slow progress alone does not count: on noisy
    data (a low R², label noise) the objective sits near its noise floor, so
    every epoch is slow relative to it while the rising damping still
    anneals the iterate towards a better fit (a tall regression of R² 0.35
    stopped after 7-11 epochs, 0.02 below the MLP, and gains 0.01-0.04 when
    run on to 18-21).
    The state (λ, floor, the last epoch's objective) is carried across
    epochs, warm starts and ``partial_fit`` calls.

    Parameters
    ----------
    unit : float
        ``1/ḡ''(0)``, the curvature scale at which λ = 1.
    initial : float, default=0.1
        λ and its floor at the start.
    increase : float, default=3.0
        Factor on λ after a rejected step.
    decay : float, default=0.995
        Factor on λ after an accepted step (down to the floor).
    reject_ratio : float, default=1.2
    stall : float, default=0.01
        Relative improvement below which an epoch stalls.
    patience : int, default=3
        Small-progress epochs in a row that end the fit.
    stall_increase : float, default=1.5
        Factor on the floor after a stalled epoch.
    stall_first : float, default=0.003
        Improvement, as a fraction of the first epoch's objective, below
        which an epoch stalls.
    screen : float or None, default=SCREEN
        The test needs the next batch's objective at the previous θ, a
        forward pass of its own, only when the batch's objective at the new
        θ stands more than ``screen`` times above the last batch's
        objective or the running mean of the batch objectives (weight
        :data:`SCREEN_WEIGHT`, each objective capped at ``screen`` times the
        mean); below both the step is accepted as it is. None tests every
        step.
    """

    adaptive = True
    # (a state pickled without the screen tests every step, one without its
    # initial λ keeps λ for another objective)
    screen = None
    running_objective = last_objective = None
    initial = None

    def __init__(self, unit, initial=0.1, increase=3.0, decay=0.995,
                 reject_ratio=1.2, stall=0.01, patience=3, stall_increase=1.5,
                 stall_first=0.003, reference_rows=None, work_steps=None,
                 screen=None):
        self.unit = float(unit)
        self.initial = float(initial)
        self.lam = self.floor = self.initial
        self.increase = increase
        self.stall_increase = stall_increase
        self.decay = decay
        self.reject_ratio = reject_ratio
        self.stall = stall
        self.last_epoch_objective = None
        self.first_epoch_objective = None
        self.stall_first = stall_first
        self.n_rejected = 0
        self.patience = patience
        self.stalls = 0
        self.reference_rows = reference_rows
        self.work_steps = work_steps
        self.rows = None  # rows per step, set by the solver
        self.screen = SCREEN if screen is None else screen
        self.running_objective = self.last_objective = None

    @property
    def step_decay(self):
        """The factor on λ after an accepted step: ``decay`` per
        ``reference_rows`` rows seen (per step when None)."""
        if self.reference_rows is None or self.rows is None:
            return self.decay
        return self.decay ** (self.rows / self.reference_rows)

    def value(self):
        """The ``λ_H = λ u`` of the next step."""
        return self.lam * self.unit

    def screened(self, new_objective):
        """Whether the last step passes without the previous θ's objective
        on the next batch: that batch's objective at the new θ
        (``new_objective``) is within ``screen`` times the running mean and
        the last batch's objective (which follow a falling objective
        without lag)."""
        mean = self.running_objective
        return (self.screen is not None and mean is not None
                and new_objective <= self.screen * min(mean, self.last_objective))

    def observe(self, objective):
        """Add a batch's objective at the θ of its step to the running mean,
        capped at ``screen`` times the mean: an outlying batch (or a bad
        step) raises the mean by a few per cent at most, and the batches
        after it are tested."""
        mean = self.running_objective
        self.last_objective = objective
        if mean is None:
            self.running_objective = objective
            return
        if self.screen is not None:
            objective = min(objective, self.screen * mean)
        self.running_objective = mean + SCREEN_WEIGHT * (objective - mean)

    def accept(self, new_objective, old_objective):
        """Judge the last step on the next batch: True keeps it.
        ``old_objective`` None: the step passed the screen
        (:meth:`screened`): the rule's test then holds, as against an
        infinite objective at the previous θ, and λ decays."""
        old = np.inf if old_objective is None else float(old_objective)
        accepted, self.lam = damping_rule(
            float(new_objective), old, float(self.lam),
            float(self.floor), float(self.increase), float(self.step_decay),
            float(self.reject_ratio))
        self.n_rejected += not accepted
        return accepted

    def update(self, alpha, proposed):
        """Nothing to adapt after a step: the next batch judges it
        (:meth:`accept`)."""

    def judge(self, new_objective, old_objective):
        """Nothing to adapt: the next batch judges a step (:meth:`accept`)."""

    def end_epoch(self, objective, n_steps=None):
        """Raise the floor after an epoch without progress.

        With ``work_steps``, an epoch of ``n_steps`` steps is held to
        ``n_steps / work_steps`` of the improvement thresholds: every epoch
        is judged on the progress per step that a ``work_steps``-step epoch
        would need, a short one (large batches, small data) and a long one
        (full MNIST, 469 steps an epoch)."""
        last = self.last_epoch_objective
        if self.first_epoch_objective is None:
            self.first_epoch_objective = objective
        scale = 1.0
        if self.work_steps is not None and n_steps is not None:
            scale = n_steps / self.work_steps
        if last is None:
            self.last_epoch_objective = objective
            return
        gain = last - objective
        slow = gain < scale * self.stall * last
        small = gain < scale * self.stall_first * self.first_epoch_objective
        if slow or small:
            self.floor *= self.stall_increase
            self.lam = max(self.lam, self.floor)
        # only small progress counts towards the end: on noisy data the
        # objective stays near its noise floor, so every epoch is slow
        # relative to it while the raised damping still anneals the fit
        if small:
            self.stalls += 1
        else:
            self.stalls = 0
        self.last_epoch_objective = objective

    def converged(self):
        """True after ``patience`` stalled epochs in a row."""
        return self.stalls >= self.patience

    def new_objective(self, restart=False):
        """Forget the last epoch's objective, the stalled epochs and the
        batches' running objective: the next epochs minimize another
        objective. The first epoch's objective, the thresholds' scale, is
        kept.

        Parameters
        ----------
        restart : bool, default=False
            Another τ: λ and its floor start again from ``initial``, as in
            a fresh fit (the λ of the earlier objective's last steps is no
            guide to the new one's). False (more rows, the same τ): they
            are kept.
        """
        self.last_epoch_objective = None
        self.stalls = 0
        self.running_objective = self.last_objective = None
        if restart and self.initial is not None:
            self.lam = self.floor = self.initial


# The adaptive damping's screen (AdaptiveDamping.screened; docs/defaults.rst)
SCREEN = 1.2
SCREEN_WEIGHT = 0.1
# The adaptive damping of the structured step (see resolve_damping and
# docs/defaults.rst for the measurements behind each value).
STRUCTURED_INITIAL = 0.03
REFERENCE_ROWS = 8
WORK_STEPS = 250
STRUCTURED_STALL_INCREASE = 1.3


def resolve_damping(damping, tau, full_batch, unit=1.0, structured=False,
                    start=0.0):
    """The damping strategy of an estimator's ``damping`` parameter.

    * ``"adaptive"``: :class:`AdaptiveDamping` for mini-batches and
      ``partial_fit``; in full batch :class:`TrustDamping` from
      ``max(τ, start)`` down to the exact curvature ``"tau"`` (with τ = 0
      the constant ``start``, or the initial ``λ u`` when ``start`` is 0;
      ``u = 1/ḡ''(0)``). For
      the structured step (``structured=True``: per-unit H, batches of a
      hundred rows and more) it starts from :data:`STRUCTURED_INITIAL` and
      counts its rules in work: the decay per :data:`REFERENCE_ROWS` rows
      seen, the stall thresholds per :data:`WORK_STEPS` steps.
    * ``"auto"``: ``"tau"`` in full batch with ``τ > 0``,
      else 1.0 — with the exact, tiny curvature every mini-batch step nearly
      interpolates its batch.
    * ``"tau"``: the paper's ``H = ∇²g``; a float ``c``: ``H = c ḡ''``
      (1.0 is the authors' code).

    Raises
    ------
    ValueError
        For ``damping="tau"`` with ``tau=0`` (H would be zero).
    """
    if damping == "adaptive":
        if not full_batch:
            if structured:
                return AdaptiveDamping(unit, initial=STRUCTURED_INITIAL,
                                       reference_rows=REFERENCE_ROWS,
                                       work_steps=WORK_STEPS,
                                       stall_increase=STRUCTURED_STALL_INCREASE)
            return AdaptiveDamping(unit)
        if tau > 0:
            return TrustDamping(tau, max(tau, start))
        damping = start if start > 0 else AdaptiveDamping(unit).value()
    if damping == "auto":
        damping = "tau" if full_batch and tau > 0 else 1.0
    if damping == "tau":
        if tau == 0:
            raise ValueError(
                "damping='tau' uses H = tau * g''(theta) here, which is zero for "
                "tau=0; set tau > 0 or a positive float damping.")
        return FixedDamping(tau)
    return FixedDamping(damping)


class AdaptiveStepSize:
    """The paper's rule ``α = min(1, ᾱ / (1 + M_g η))``.

    Parameters
    ----------
    step_size : float
        ``ᾱ`` in (0, 1].
    """

    def __init__(self, step_size):
        self.step_size = float(step_size)

    def __call__(self, M_g, eta):
        """α for the self-concordance constant ``M_g`` and ``η = ‖∇g‖*_θ``."""
        return step_size_rule(self.step_size, float(M_g), float(eta))


class ArmijoLineSearch:
    """Halve α until ``L(θ − α d) ≤ L(θ) − c α rᵀ d`` (the reference's
    ``ss_type=3``); each trial is one forward pass.

    Parameters
    ----------
    c : float, default=1e-4
        Sufficient-decrease constant.
    shrink : float, default=0.5
        Factor applied to α after a rejected trial.
    max_trials : int, default=30
        Trials before giving up (then α = 0: θ stays).
    """

    def __init__(self, c=1e-4, shrink=0.5, max_trials=30):
        self.c = c
        self.shrink = shrink
        self.max_trials = max_trials

    def __call__(self, objective, theta, direction, grad, alpha, current,
                 slope=None):
        """Return ``(α, L_new, θ_new)``, or ``(0.0, current, θ)`` when no
        trial is accepted. ``objective(θ')`` evaluates a trial point; the
        slope ``rᵀd`` is ``grad @ direction`` unless given (then ``grad`` may
        be None)."""
        if slope is None:
            slope = float(np.dot(grad, direction))
        for _ in range(self.max_trials):
            candidate = theta - alpha * direction
            trial = objective(candidate)
            if armijo_holds(float(trial), float(current), float(self.c), alpha,
                            float(slope)):
                return alpha, trial, candidate
            alpha *= self.shrink
        return 0.0, current, theta


class Batching:
    """Which rows each step sees.

    Parameters
    ----------
    batch_size : int
        Rows per step; at least the number of samples means full batch.
    shuffle : bool
        Draw a new permutation every epoch.
    merge_short : bool, default=True
        Merge a last batch of fewer than half ``batch_size`` rows into the
        one before it: a step fitted to a handful of rows nearly
        interpolates them (letter, batch 64: a 4-row last batch cost 10
        points of test accuracy).
    """

    def __init__(self, batch_size, shuffle, merge_short=True):
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.merge_short = merge_short

    def full_batch(self, n_samples):
        """Whether one step sees every row."""
        return self.batch_size >= n_samples

    def epoch(self, n_samples, rng):
        """Index arrays of one epoch's batches."""
        order = rng.permutation(n_samples) if self.shuffle else np.arange(n_samples)
        starts = list(range(0, n_samples, self.batch_size))
        if (self.merge_short and len(starts) > 1
                and n_samples - starts[-1] < self.batch_size / 2):
            starts.pop()
        return [order[a:b] for a, b in zip(starts, starts[1:] + [n_samples])]


class NoImprovement:
    """Stop after ``n_iter_no_change`` consecutive iterations whose objective
    is not below the best so far by ``tol`` (scikit-learn's MLP rule).

    Parameters
    ----------
    tol : float
        Minimum improvement.
    n_iter_no_change : int
        Patience.
    """

    def __init__(self, tol, n_iter_no_change):
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.count = 0

    def __call__(self, objective, previous_best):
        """Record one iteration; True when the fit should stop."""
        if objective > previous_best - self.tol:
            self.count += 1
        else:
            self.count = 0
        return self.count > self.n_iter_no_change
