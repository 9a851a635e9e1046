"""The interchangeable rules of the solver: damping, step size, line search,
batching and stopping. Each is configured once and asked during the loop."""

import numpy as np


class FixedDamping:
    """A constant curvature scale: ``H = c · ḡ''(θ)``.

    ``c = τ`` is the paper's ``H = ∇²g`` ("exact"), ``c = 1`` the authors'
    code (SPEC section 4).

    Parameters
    ----------
    scale : float
        ``c > 0``.
    """

    def __init__(self, scale):
        self.scale = float(scale)

    def curvature_scale(self):
        """The ``λ_H`` of the next step."""
        return self.scale


def resolve_damping(damping, tau, full_batch):
    """The damping strategy of an estimator's ``damping`` parameter.

    ``"auto"`` is ``"tau"`` (the exact curvature) in full batch with ``τ > 0``
    and 1.0 otherwise: with the exact, tiny curvature every mini-batch step
    nearly interpolates its batch.

    Raises
    ------
    ValueError
        For ``damping="tau"`` with ``tau=0`` (H would be zero).
    """
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
        return min(1.0, self.step_size / (1.0 + M_g * eta))


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

    def __call__(self, objective, theta, direction, grad, alpha, current):
        """Return ``(α, L_new, θ_new)``, or ``(0.0, current, θ)`` when no
        trial is accepted. ``objective(θ')`` evaluates a trial point."""
        slope = float(np.dot(grad, direction))
        for _ in range(self.max_trials):
            candidate = theta - alpha * direction
            trial = objective(candidate)
            if np.isfinite(trial) and trial <= current - self.c * alpha * slope:
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
    """

    def __init__(self, batch_size, shuffle):
        self.batch_size = int(batch_size)
        self.shuffle = shuffle

    def full_batch(self, n_samples):
        """Whether one step sees every row."""
        return self.batch_size >= n_samples

    def epoch(self, n_samples, rng):
        """Index arrays of one epoch's batches."""
        order = rng.permutation(n_samples) if self.shuffle else np.arange(n_samples)
        return [order[start:start + self.batch_size]
                for start in range(0, n_samples, self.batch_size)]


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
