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
from ._network import ForwardCache

ARMIJO_C = 1e-4
ARMIJO_SHRINK = 0.5
MAX_BACKTRACKS = 30
# Refine the dual solution when ‖D r‖ / ‖d‖ exceeds this (digits lost to
# cancellation in D r − D J̃ᵀ y).
REFINE_CANCELLATION = 1e3
# float32 dual steps (see ggn_direction): refine when the estimated relative
# error ε₃₂·max(λ_max(G̃), ‖D r‖/‖d‖) exceeds MIXED_TOLERANCE; refinement
# needs the contraction ε₃₂·λ_max below MAX_CONTRACTION and stops when a
# correction is below MIXED_CONVERGED relative (invisible once d is rounded
# to float32).
MIXED_TOLERANCE = 1e-4
MAX_CONTRACTION = 0.25
MAX_MIXED_REFINEMENTS = 6
MIXED_CONVERGED = float(np.finfo(np.float32).eps)


# Order from which the Cholesky factorization runs on one BLAS thread (see
# _cholesky).
LARGE_CHOLESKY = 12_000


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
        if system.shape[0] < LARGE_CHOLESKY:
            return np.linalg.cholesky(system)
        # OpenBLAS's multithreaded potrf (0.3.30 in NumPy's wheels, 0.3.31 in
        # SciPy's) crashed the process with a segmentation fault for order
        # 16 128 on a 2-core machine (15 000 passed); one thread passed. Large
        # systems (in practice only a forced linear_solver="primal") are
        # therefore factorized with one BLAS thread.
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return np.linalg.cholesky(system)
    except np.linalg.LinAlgError as exc:
        raise StepFailure(
            "the Gauss-Newton system is not numerically positive definite"
        ) from exc


def _float64_view(theta, cache, factor, D, residual):
    """float64 copies of a float32 step's inputs."""

    def f64(a):
        return None if a is None else np.asarray(a, dtype=np.float64)

    cache64 = ForwardCache(f64(cache.Xa), f64(cache.rho), f64(cache.rho_deriv),
                           f64(cache.outputs))
    return f64(theta), cache64, f64(factor), f64(D), f64(residual)


def ggn_direction(network, theta, cache, residual, factor, reg_grad, D, form):
    """Return ``(d, r)``: the GGN-SCORE direction and the objective gradient.

    All arrays share θ's dtype. float64 is solved as is. For float32 (dual
    form; the caller promotes primal float32 steps to float64) the Gram —
    the dominant cost — is formed and factorized in float32; the solution's
    error is estimated from the Gram's norm (a Gershgorin bound on λ_max,
    the condition number of ``I + G̃`` since λ_min ≥ 1) and the cancellation
    ratio ``‖D r‖ / ‖d‖``, and when the estimate exceeds
    :data:`MIXED_TOLERANCE` the direction is refined by iterative refinement
    with float64 residuals (mixed-precision refinement; converges at the rate
    ``ε₃₂ λ_max``), or recomputed entirely in float64 when that contraction
    is too weak (≥ :data:`MAX_CONTRACTION`), the float32 factorization fails
    or the refinement stalls.

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
    if form != "dual":
        system = network.gauss_newton_matrix(theta, cache, W, factor)
        system.flat[:: system.shape[0] + 1] += 1.0 / D
        direction = cholesky_solve_kernel(_cholesky(system), r)
        if not np.all(np.isfinite(direction)):
            raise StepFailure("the Gauss-Newton direction is not finite")
        return direction, r

    b, K = W.shape[0], W.shape[1]
    system = network.gram(theta, cache, W, factor, D)
    contraction = 0.0
    if system.dtype != np.float64:
        # ε₃₂ λ_max(G̃), with λ_max bounded by Gershgorin: the relative error
        # of the float32 solve and the contraction factor of its refinement
        contraction = float(np.finfo(theta.dtype).eps) * float(
            np.abs(system).sum(axis=1, dtype=np.float64).max())
    system.flat[:: system.shape[0] + 1] += 1.0
    if contraction >= MAX_CONTRACTION:
        return _float64_direction(network, _float64_view(
            theta, cache, factor, D, residual), reg_grad, theta.dtype), r
    try:
        L = _cholesky(system)
    except StepFailure:
        if theta.dtype == np.float64:
            raise
        return _float64_direction(network, _float64_view(
            theta, cache, factor, D, residual), reg_grad, theta.dtype), r

    def solve(v, theta, cache, W, factor, D):
        # (J̃ᵀJ̃ + H)⁻¹ v = D v − D J̃ᵀ (I + J̃ D J̃ᵀ)⁻¹ J̃ D v: products in v's
        # dtype, triangular solves in the factor's.
        Dv = D * v
        rhs = network.jvp(theta, cache, W, factor, Dv).ravel()
        y = cholesky_solve_kernel(L, rhs.astype(L.dtype, copy=False))
        back = network.vjp(theta, cache, W, factor,
                           y.reshape(b, K).astype(v.dtype, copy=False))
        back *= D
        return np.subtract(Dv, back, out=back), Dv

    def primal_residual(d, r, theta, cache, W, factor, D):
        # r − (J̃ᵀJ̃ + H) d
        Jd = network.jvp(theta, cache, W, factor, d)
        res = r - network.vjp(theta, cache, W, factor, Jd)
        res -= d / D
        return res

    direction, Dr = solve(r, theta, cache, W, factor, D)
    ratio = np.linalg.norm(Dr) / max(np.linalg.norm(direction), np.finfo(float).tiny)
    if theta.dtype == np.float64:
        # The dual formula subtracts two nearly equal vectors when D is large
        # (small τ): log10(‖D r‖ / ‖d‖) digits are lost (measured: 1e-8 → 1e-5
        # relative error from τ = 1e-6 to 1e-8). Then one step of iterative
        # refinement on the primal equation restores them, at the cost of two
        # more Jacobian products and solves; well-conditioned steps (e.g.
        # damping=1 on mini-batches) skip it.
        if ratio > REFINE_CANCELLATION:
            args = (theta, cache, W, factor, D)
            direction += solve(primal_residual(direction, r, *args), *args)[0]
    else:
        eps = float(np.finfo(theta.dtype).eps)
        if max(contraction, eps * ratio) > MIXED_TOLERANCE:
            direction = _refine_mixed(network, theta, cache, residual, factor,
                                      reg_grad, D, direction, contraction,
                                      solve, primal_residual)
    if not np.all(np.isfinite(direction)):
        raise StepFailure("the Gauss-Newton direction is not finite")
    return direction, r


def _refine_mixed(network, theta, cache, residual, factor, reg_grad, D,
                  direction, contraction, solve, primal_residual):
    """Mixed-precision iterative refinement of a float32 dual direction.

    Residuals of the primal equation in float64, corrections from the
    float32 Cholesky factor (contraction ≈ ``ε₃₂ λ_max``); falls back to a
    float64 step when it has not converged after
    :data:`MAX_MIXED_REFINEMENTS` rounds.
    """
    views = _float64_view(theta, cache, factor, D, residual)
    theta64, cache64, factor64, D64, residual64 = views
    # The sensitivities and the right-hand side in float64 too: the
    # ill-conditioned system amplifies their float32 rounding as much as
    # that of the solve.
    W64 = network.sensitivities(theta64, cache64, factor64)
    args = (theta64, cache64, W64, factor64, D64)
    r64 = network.gradient(theta64, cache64, residual64)
    r64 += reg_grad
    d64 = direction.astype(np.float64)
    previous = None
    for _ in range(MAX_MIXED_REFINEMENTS):
        correction = solve(primal_residual(d64, r64, *args), *args)[0]
        d64 += correction
        size = np.linalg.norm(correction) / np.linalg.norm(d64)
        # Stop when this correction, or the next one predicted from the
        # observed contraction (size / previous < 1/2), is below float32
        # precision.
        predicted = (size * size / previous if previous and size < 0.5 * previous
                     else size)
        if min(size, predicted) <= MIXED_CONVERGED:
            return d64.astype(theta.dtype)
        previous = size
    return _float64_direction(network, views, reg_grad, theta.dtype)


def _float64_direction(network, views, reg_grad, dtype):
    """The dual direction of a float32 step computed entirely in float64 from
    the copies ``views`` of :func:`_float64_view`, returned in ``dtype``."""
    theta64, cache64, factor64, D64, residual64 = views
    direction, _ = ggn_direction(network, theta64, cache64, residual64, factor64,
                                 np.asarray(reg_grad, dtype=np.float64), D64, "dual")
    return direction.astype(dtype)


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
