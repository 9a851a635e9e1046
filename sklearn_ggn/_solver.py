"""The GGN-SCORE step (SPEC section 4).

Given the batch residual ``e = ∂R/∂Φ``, the curvature factor ``A`` with
``Q = A Aᵀ``, the regularizer gradient ``∇g = τ ḡ'(θ)`` and the diagonal
curvature ``H = λ_H ḡ''(θ)`` (``D = H⁻¹``), the search direction solves the
Gauss-Newton system

    (Jᵀ Q J + H) d = r,      r = Jᵀ e + ∇g                    (primal, p × p)

or, by the Woodbury identity with ``J̃ = Aᵀ J``,

    d = D r − D J̃ᵀ (I + J̃ D J̃ᵀ)⁻¹ J̃ D r                     (dual, bK × bK)

and the iterate moves by ``θ ← θ − α d`` with

    η = sqrt(∇gᵀ D ∇g),      α = min(1, ᾱ / (1 + M_g η)),

optionally followed by Armijo backtracking on the batch objective.
"""

import numpy as np

from ._kernels import cholesky_solve_kernel

ARMIJO_C = 1e-4
ARMIJO_SHRINK = 0.5
MAX_BACKTRACKS = 30
# Refine the dual solution when ‖D r‖ / ‖d‖ exceeds this (digits lost to
# cancellation in D r − D J̃ᵀ y).
REFINE_CANCELLATION = 1e3


class StepFailure(Exception):
    """The linear system of a step could not be solved (non-finite or not PD)."""


def choose_linear_solver(network, batch_size, linear_solver):
    """Resolve ``"auto"`` by the cost model of :meth:`TwoLayerNetwork.step_costs`.

    The primal form is taken only when it needs fewer flops *and* its p × p
    matrices fit in 2 GiB; otherwise the dual.
    """
    if linear_solver != "auto":
        return linear_solver
    costs = network.step_costs(batch_size)
    primal_flops, primal_bytes = costs["primal"]
    dual_flops, _ = costs["dual"]
    if primal_flops < dual_flops and primal_bytes <= 2 * 2**30:
        return "primal"
    return "dual"


def _cholesky(system):
    """Cholesky factor of the (float64) Gauss-Newton system.

    The factorization uses NumPy's LAPACK, the same OpenBLAS thread pool as
    the Gram's syrk and every other product; numba's ``np.linalg.cholesky``
    goes through SciPy's separate OpenBLAS, whose threads were starved by
    NumPy's still-spinning ones right after the syrk (measured: 9 ms alone,
    94 ms after the syrk, for m = 1000). The triangular solves are numba loops.
    """
    if not np.all(np.isfinite(system)):
        raise StepFailure("the Gauss-Newton system has non-finite entries")
    try:
        return np.linalg.cholesky(system)
    except np.linalg.LinAlgError as exc:
        raise StepFailure(
            "the Gauss-Newton system is not numerically positive definite"
        ) from exc


def ggn_direction(network, theta, cache, residual, factor, reg_grad, D, form):
    """Return ``(d, r)``: the GGN-SCORE direction and the objective gradient.

    All arrays are float64 (the caller promotes float32 fits: at the paper's
    τ the system's condition number, 1e5-1e9, is beyond float32 precision).

    Parameters
    ----------
    network : TwoLayerNetwork
    theta : ndarray of shape (p,)
    cache : ForwardCache
        Forward pass at θ with derivatives.
    residual : ndarray of shape (b, K)
        ``e``.
    factor : ndarray of shape (b, K, K)
        ``A`` with ``Q_k = A_k A_kᵀ``.
    reg_grad : ndarray of shape (p,)
        ``∇g(θ)``.
    D : ndarray of shape (p,)
        Inverse of the diagonal regularizer curvature ``H``.
    form : {"dual", "primal"}
    """
    r = network.gradient(theta, cache, residual)
    r += reg_grad
    W = network.sensitivities(theta, cache, factor)
    if form == "dual":
        b, K = W.shape[0], W.shape[1]
        system = network.gram(theta, cache, W, factor, D)
        system.flat[:: system.shape[0] + 1] += 1.0
        L = _cholesky(system)

        def solve(v):
            # (J̃ᵀJ̃ + H)⁻¹ v = D v − D J̃ᵀ (I + J̃ D J̃ᵀ)⁻¹ J̃ D v
            Dv = D * v
            rhs = network.jvp(theta, cache, W, factor, Dv).ravel()
            y = cholesky_solve_kernel(L, rhs).reshape(b, K)
            back = network.vjp(theta, cache, W, factor, y)
            back *= D
            return np.subtract(Dv, back, out=back), Dv

        direction, Dr = solve(r)
        # The dual formula subtracts two nearly equal vectors when D is large
        # (small τ): ‖D r‖ / ‖d‖ digits are lost (measured: 1e-8 → 1e-5
        # relative error from τ = 1e-6 to 1e-8). Then one step of iterative
        # refinement on the primal equation restores them, at the cost of two
        # more Jacobian products and solves; well-conditioned steps (e.g.
        # damping=1 on mini-batches) skip it.
        if np.linalg.norm(Dr) > REFINE_CANCELLATION * np.linalg.norm(direction):
            Jd = network.jvp(theta, cache, W, factor, direction)
            residual_eq = r - network.vjp(theta, cache, W, factor, Jd)
            residual_eq -= direction / D
            direction += solve(residual_eq)[0]
    else:
        system = network.gauss_newton_matrix(theta, cache, W, factor)
        system.flat[:: system.shape[0] + 1] += 1.0 / D
        direction = cholesky_solve_kernel(_cholesky(system), r)
    if not np.all(np.isfinite(direction)):
        raise StepFailure("the Gauss-Newton direction is not finite")
    return direction, r


def step_size_rule(step_size, M_g, eta):
    """``α = min(1, ᾱ / (1 + M_g η))``; ``η = sqrt(∇gᵀ D ∇g)`` comes from the
    regularizer's fused :meth:`step_quantities` pass."""
    return min(1.0, step_size / (1.0 + M_g * eta))


def armijo_backtracking(objective, theta, direction, grad, alpha, current):
    """Halve α until ``L(θ − α d) ≤ L(θ) − c α rᵀ d`` (the reference's
    ``ss_type=3``). Each trial is one forward pass; returns
    ``(α, L_new, θ_new)``, or ``(0.0, current, θ)`` when no trial is
    accepted."""
    slope = float(np.dot(grad, direction))
    for _ in range(MAX_BACKTRACKS):
        candidate = theta - alpha * direction
        trial = objective(candidate)
        if np.isfinite(trial) and trial <= current - ARMIJO_C * alpha * slope:
            return alpha, trial, candidate
        alpha *= ARMIJO_SHRINK
    return 0.0, current, theta
