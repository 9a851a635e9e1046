"""The GGN-SCORE mini-batch step as compiled code, and the epoch that loops
over it.

:func:`step` is one step on one batch — the adaptive damping's test of the
last step on this batch, the divergence check, the direction, the step size
and the line search — for both structures of the step: the exact one
(``curvature="exact", hessian="diagonal"``, the paper's) and the default
structured one (per-unit H and one row of the kernel system per sample).
:func:`minibatch_epoch` runs it over a range of batches. The Python driver
(``Solver._epoch``) calls :func:`minibatch_epoch` for segments of
:data:`SEGMENT_BATCHES` batches, down to one batch at a time: the drivers
differ only in who runs the loop over the batches.

The formulas come from the kernels below them: the losses'
(``_losses.risk_kernel``, ``residual_parts_kernel`` over the loss's
function, ``true_vs_rest_kernel``),
the regularizers' (``_regularizers``), the activations' and the Gram's
(``_kernels``). The NumPy route (``Problem.linearize`` /
``Linearization.direction``) calls the same kernels; it serves what
:func:`supports` declines (sparse inputs, the primal form, full batches,
custom regularizers, networks or strategies) and is the reference
the tests hold this module to.
"""

import math

import numpy as np
from numba import njit

from .._activations import ACTIVATIONS
from .._config import NUMBA_OPTIONS, NUMBA_OPTIONS_REDUCTION
from .._kernels import (
    backpropagate_kernel,
    cholesky_solve_kernel,
    contract_hidden_kernel,
    contract_outputs_kernel,
    dense_factor_kernel,
    dual_norm_kernel,
    hidden_error_kernel,
    normalized_weights_kernel,
    outer_products_kernel,
    output_part_kernel,
    outputs_kernel,
    pair_products_kernel,
    per_unit_kernel,
    rank_sensitivities_kernel,
    structured_gram_block_kernel,
    structured_sensitivities_kernel,
    unit_gram_kernel,
)
from .._losses import (
    LOSSES,
    coefficients_kernel,
    residual_parts_kernel,
    risk_kernel,
    true_vs_rest_kernel,
)
from .._network import _BLOCK_BYTES, TwoLayerNetwork
from .._regularizers import REGULARIZERS, _step_quantities_kernel, _value_sum_kernel
from ._linearization import (
    LARGE_CHOLESKY,
    MAX_CONTRACTION,
    MIXED_TOLERANCE,
    REFINE_CANCELLATION,
)
from ._problem import Problem
from ._strategies import (
    AdaptiveDamping,
    AdaptiveStepSize,
    ArmijoLineSearch,
    Batching,
    FixedDamping,
    armijo_holds,
    damping_rule,
    grew,
    step_size_rule,
)

# The step's structure: the exact step, or per-unit H with one kernel row
# per sample (the default).
EXACT, UNIT = 0, 1

# Status codes of a step (0: completed). FLOAT64: a float32 direction whose
# estimated error is too large, to be computed again in float64.
OK, NON_FINITE, GREW, NOT_PD, DIRECTION, PARAMETERS, SYSTEM, FLOAT64 = range(8)
MESSAGES = {
    NON_FINITE: "non-finite objective or parameters",
    SYSTEM: "the Gauss-Newton system has non-finite entries",
    NOT_PD: "the Gauss-Newton system is not numerically positive definite",
    DIRECTION: "the Gauss-Newton direction is not finite",
    PARAMETERS: "non-finite parameters",
}


# ------------------------------------------------------------ network
@njit(**NUMBA_OPTIONS)
def _forward(theta, Xb, n, K, kappa, act, fit_intercept, with_deriv):
    """ρ, ρ' (or ρ again without derivatives) and the outputs Φ on a batch,
    in θ's dtype."""
    p_u = n * Xb.shape[1]
    U = theta[:p_u].reshape((n, Xb.shape[1]))
    return outputs_kernel(Xb @ U.T, theta[p_u:p_u + n * K].reshape((n, K)),
                          theta[p_u + n * K:], kappa, act, with_deriv)


@njit(**NUMBA_OPTIONS)
def _objective(theta, reg, Xb, Yb, s, net, fn, with_deriv):
    """``(L, R, ρ, ρ', Φ)`` of θ on a batch, given ``reg = g(θ)``."""
    n, K, kappa, act, fit_intercept = net
    rho, rho_d, F = _forward(theta, Xb, n, K, kappa, act, fit_intercept,
                             with_deriv)
    risk = risk_kernel(F, Yb, s, fn)
    return risk + reg, risk, rho, rho_d, F


@njit(**NUMBA_OPTIONS)
def _backpropagate(hidden, z, Xb, rho, kappa, fit_intercept, out):
    """``out = [hiddenᵀ X̂, κ ρᵀ z, Σ_k z_k]`` (flat, written in place: a row
    of the step's workspace)."""
    backpropagate_kernel(hidden, z, Xb, rho, Xb.shape[1], kappa, fit_intercept,
                         out)


@njit(**NUMBA_OPTIONS)
def _gradient(e, V, Xb, rho, rho_d, kappa, fit_intercept, out):
    """``out = Jᵀ e``."""
    _backpropagate(hidden_error_kernel(e, V, rho_d, kappa), e, Xb, rho, kappa,
                   fit_intercept, out)


@njit(**NUMBA_OPTIONS)
def _output_part(v, rho, n, d_aug, K, kappa, fit_intercept):
    """``κ ρ δV + δb_o`` (b × K) of a direction ``v``."""
    p_u = n * d_aug
    return output_part_kernel(rho, v[p_u:p_u + n * K].reshape((n, K)),
                              v[p_u + n * K:], kappa)


# The passes over p below are re-associated sums (SIMD partial sums): a
# serial float64 sum costs an add's latency per entry, ~0.1 ms per pass at
# MNIST's p = 79 510, several passes per step.
@njit(**NUMBA_OPTIONS_REDUCTION)
def _all_finite(x):
    """Whether every entry of a vector is finite: ``Σ 0·x`` is NaN exactly
    when an entry is inf or NaN."""
    acc = x.dtype.type(0)
    for m in range(x.size):
        acc += x[m] * x.dtype.type(0)
    return acc == 0


@njit(**NUMBA_OPTIONS)
def _axpy(theta, alpha, d):
    """``θ − α d`` as a new vector (one pass)."""
    out = np.empty(theta.size, dtype=theta.dtype)
    for m in range(theta.size):
        out[m] = theta[m] - alpha * d[m]
    return out


@njit(**NUMBA_OPTIONS_REDUCTION)
def _norm(x):
    acc = 0.0
    for m in range(x.size):
        acc += np.float64(x[m]) * x[m]
    return math.sqrt(acc)


@njit(**NUMBA_OPTIONS_REDUCTION)
def _dot(x, y):
    acc = 0.0
    for m in range(x.size):
        acc += np.float64(x[m]) * y[m]
    return acc


@njit(**NUMBA_OPTIONS)
def _gershgorin(gram):
    """Gershgorin's bound on λ_max of a symmetric matrix: its largest
    absolute column sum, accumulated a row at a time (a SIMD pass per row;
    a row-sum loop would be a serial reduction)."""
    sums = np.zeros(gram.shape[1])
    for row in range(gram.shape[0]):
        for col in range(gram.shape[1]):
            sums[col] += abs(np.float64(gram[row, col]))
    return sums.max()


@njit(**NUMBA_OPTIONS)
def _factorize(gram):
    """``(status, L)``: the Cholesky factor of ``I + G`` (G in place)."""
    if not _all_finite(gram.reshape(gram.size)):
        return SYSTEM, gram
    for m in range(gram.shape[0]):
        gram[m, m] += 1.0
    try:
        return OK, np.linalg.cholesky(gram)
    except Exception:  # noqa: BLE001 (numba: LinAlgError, not PD)
        return NOT_PD, gram


# rows of the per-call workspace
_REG_GRAD, _D, _R, _DV, _BACK, _DIR, _RES, _DV2, _CORR = range(9)


# ------------------------------------------------------------ J̃ products
# J̃ = Fᵀ J with a factor F_k of R columns per row (Q_k = F_k F_kᵀ): the exact
# step's A_k (R = K, made dense from its parts) or the structured step's
# one column f_k (R = 1); W[k, r, i] = ρ'_ki (V F_k)[i, r] (b × R × n).
@njit(**NUMBA_OPTIONS)
def _jvp(v, Xb, rho, W, F, net):
    """``J̃ v`` (flat, b·R)."""
    n, K, kappa, _, fit_intercept = net
    b, d_aug = Xb.shape
    R = W.shape[1]
    dpre = Xb @ v[:n * d_aug].reshape((n, d_aug)).T
    raw = _output_part(v, rho, n, d_aug, K, kappa, fit_intercept)
    out = np.empty((b, R), dtype=v.dtype)
    contract_hidden_kernel(W, dpre, kappa, out)
    for k in range(b):
        for r in range(R):
            acc = 0.0
            for c in range(K):
                acc += F[k, c, r] * raw[k, c]
            out[k, r] += acc
    return out.reshape(b * R)


@njit(**NUMBA_OPTIONS)
def _vjp(y, Xb, rho, W, F, net, out):
    """``out = J̃ᵀ y`` (flat) for a flat y of b·R values."""
    n, K, kappa, _, fit_intercept = net
    b, R, _ = W.shape
    y2 = y.reshape((b, R))
    hidden = np.empty((b, n), dtype=y.dtype)
    contract_outputs_kernel(W, y2, kappa, hidden)
    z = np.empty((b, K), dtype=y.dtype)
    for k in range(b):
        for c in range(K):
            acc = 0.0
            for r in range(R):
                acc += F[k, c, r] * y2[k, r]
            z[k, c] = acc
    _backpropagate(hidden, z, Xb, rho, kappa, fit_intercept, out)


@njit(**NUMBA_OPTIONS)
def _dual_solve(L, vec, D, Xb, rho, W, F, net, Dv, back, out):
    """``out = (J̃ᵀJ̃ + H)⁻¹ vec`` by the Woodbury identity, with ``Dv = D vec``
    and ``back`` as workspace (Dv keeps ``D vec``)."""
    for m in range(vec.size):
        Dv[m] = D[m] * vec[m]
    rhs = _jvp(Dv, Xb, rho, W, F, net)
    y = cholesky_solve_kernel(L, rhs.astype(L.dtype))
    _vjp(y.astype(vec.dtype), Xb, rho, W, F, net, back)
    for m in range(vec.size):
        out[m] = Dv[m] - D[m] * back[m]


@njit(**NUMBA_OPTIONS)
def _refine(L, r, d, D, Xb, rho, W, F, net, ws):
    """One step of iterative refinement of d on the primal equation
    ``(J̃ᵀJ̃ + H) d = r``: the dual formula subtracts two nearly equal vectors
    when D is large, and this restores the digits it lost."""
    res, back, corr = ws[_RES], ws[_BACK], ws[_CORR]
    _vjp(_jvp(d, Xb, rho, W, F, net), Xb, rho, W, F, net, back)
    for m in range(d.size):
        res[m] = r[m] - back[m] - d[m] / D[m]
    _dual_solve(L, res, D, Xb, rho, W, F, net, ws[_DV2], back, corr)
    for m in range(d.size):
        d[m] += corr[m]


# ------------------------------------------------------------ exact step
@njit(**NUMBA_OPTIONS)
def _gram(Xb, rho, rho_d, a, u, w, D, V, n, K, kappa, fit_intercept):
    """``J̃ D J̃ᵀ`` (bK × bK): the structured Gram of the NumPy route
    (``TwoLayerNetwork.gram``, the same kernels) in one block of rows."""
    b, d_aug = Xb.shape
    p_u = n * d_aug
    M = pair_products_kernel(Xb, 0, b) @ D[:p_u].reshape((n, d_aug)).T
    D_bo = D[p_u + n * K:] if fit_intercept else D[:0]
    gram = np.empty((b * K, b * K), dtype=Xb.dtype)
    structured_gram_block_kernel(M, rho, rho_d, a, u, w,
                                 D[p_u:p_u + n * K].reshape((n, K)), D_bo,
                                 outer_products_kernel(V), kappa * kappa, 0, b,
                                 gram)
    return gram


@njit(**NUMBA_OPTIONS)
def _exact_direction(theta, Xb, Yb, s, rho, rho_d, F, net, fn, reg_code, mu,
                     tau, damping, ws):
    """``(status, d, η, rᵀd)``: the exact GGN-SCORE direction with
    ``H = damping ḡ''`` (float64); ``d`` is a row of the workspace ``ws``."""
    n, K, kappa, act, fit_intercept = net
    d_aug = Xb.shape[1]
    p = theta.size
    p_u = n * d_aug
    V = theta[p_u:p_u + n * K].reshape((n, K))
    e, a, u, w = residual_parts_kernel(F, Yb, s, fn)
    reg_grad, D, r, d = ws[_REG_GRAD], ws[_D], ws[_R], ws[_DIR]
    eta = math.sqrt(_step_quantities_kernel(theta, reg_code, mu, tau, damping,
                                            reg_grad, D))
    _gradient(e, V, Xb, rho, rho_d, kappa, fit_intercept, r)
    for m in range(p):
        r[m] += reg_grad[m]
    status, L = _factorize(_gram(Xb, rho, rho_d, a, u, w, D, V, n, K, kappa,
                                 fit_intercept))
    if status != OK:
        return status, d, eta, 0.0
    W = np.empty((Xb.shape[0], K, n), dtype=theta.dtype)
    structured_sensitivities_kernel(np.ascontiguousarray(V.T), a, u, w, rho_d, W)
    Dr, A = ws[_DV], dense_factor_kernel(a, u, w)
    _dual_solve(L, r, D, Xb, rho, W, A, net, Dr, ws[_BACK], d)
    if _norm(Dr) / max(_norm(d), 2.2250738585072014e-308) > REFINE_CANCELLATION:
        _refine(L, r, d, D, Xb, rho, W, A, net, ws)
    if not _all_finite(d):
        return DIRECTION, d, eta, 0.0
    return OK, d, eta, _dot(r, d)


# ------------------------------------------------------------ structured step
# Per-unit H (D = unit_D[i] on hidden unit i's parameters) and a factor of
# one column f_k per row: the true-vs-rest column of the softmax, or the
# exact factor of a one-output loss. J̃ has b rows, the Gram is b × b.
@njit(**NUMBA_OPTIONS)
def _unit_direction(theta, Xb, Yb, s, rho, rho_d, F, net, fn, reduced,
                    reg_code, mu, tau, damping, ws):
    """``(status, d, η, rᵀd)``: the structured direction (per-unit H, one
    kernel row per sample); ``d`` is a row of the workspace ``ws``.

    float64: when ``e = F c`` (every row's residual in the span of its
    column) and the system is well conditioned, ``d = D ∇g + D J̃ᵀ (c − y)``
    with ``y = (I + G)⁻¹ (J̃ D ∇g + G c)``, one product each way, and
    ``rᵀd = cᵀ J̃ d + ∇gᵀ d`` for free; otherwise the dual solve of the
    explicit gradient with one refinement step against cancellation.
    float32: the explicit gradient's dual solve, whose relative error is
    estimated as ``ε₃₂ max(λ_max(G), ‖D r‖ / ‖d‖)``; above
    ``MIXED_TOLERANCE`` the status FLOAT64 asks for the step in float64.
    """
    n, K, kappa, act, fit_intercept = net
    b, d_aug = Xb.shape
    p = theta.size
    p_u = n * d_aug
    single = theta.itemsize == 4
    V = theta[p_u:p_u + n * K].reshape((n, K))
    if reduced:
        e, f = true_vs_rest_kernel(F, Yb, s)
    else:
        e, f, _, _ = residual_parts_kernel(F, Yb, s, fn)  # K = 1: A_k = a_k
    reg_grad, D, d = ws[_REG_GRAD], ws[_D], ws[_DIR]
    _step_quantities_kernel(theta, reg_code, mu, tau, damping, reg_grad, D)
    unit_D = np.empty(n, dtype=theta.dtype)
    per_unit_kernel(D, n, d_aug, K, unit_D)
    eta = dual_norm_kernel(reg_grad, D)
    F3 = f.reshape((b, K, 1))
    W3 = rank_sensitivities_kernel(F3, V, rho_d)
    D_bo = D[p_u + n * K:] if fit_intercept else D[:0]
    gram = unit_gram_kernel(W3.reshape((b, n)), unit_D, Xb @ Xb.T, rho, f, D_bo,
                            kappa * kappa, 1)
    gershgorin = _gershgorin(gram)
    c = np.empty(b, dtype=theta.dtype)
    coefficients = False
    if not single:
        lo, hi = unit_D[0], unit_D[0]  # D: unit_D per unit, then D_bo
        for value in np.concatenate((unit_D, D_bo)):
            lo, hi = min(lo, value), max(hi, value)
        if (1.0 + gershgorin) * math.sqrt(hi / lo) <= REFINE_CANCELLATION:
            coefficients = coefficients_kernel(f, e, c)
    contraction = np.finfo(np.float32).eps * gershgorin if single else 0.0
    if contraction >= MAX_CONTRACTION:
        return FLOAT64, d, eta, 0.0
    system = gram.copy() if coefficients else gram
    status, L = _factorize(system)
    if status != OK:  # float32 overflow or loss of definiteness: try float64
        return FLOAT64 if single else status, d, eta, 0.0
    back = ws[_BACK]
    if coefficients:
        Dg = ws[_DV]
        for m in range(p):
            Dg[m] = D[m] * reg_grad[m]
        jdg = _jvp(Dg, Xb, rho, W3, F3, net)
        rhs = jdg + gram @ c  # (I + G) c − c
        y = c - cholesky_solve_kernel(L, rhs)
        _vjp(y, Xb, rho, W3, F3, net, back)
        for m in range(p):
            d[m] = D[m] * back[m] + Dg[m]
        Jd = jdg + gram @ y
        slope = _dot(c, Jd) + _dot(reg_grad, d)
        if not _all_finite(d):
            return DIRECTION, d, eta, 0.0
        return OK, d, eta, slope
    r, Dr = ws[_R], ws[_DV]
    _gradient(e, V, Xb, rho, rho_d, kappa, fit_intercept, r)
    for m in range(p):
        r[m] += reg_grad[m]
    _dual_solve(L, r, D, Xb, rho, W3, F3, net, Dr, back, d)
    ratio = _norm(Dr) / max(_norm(d), 2.2250738585072014e-308)
    if single:
        if max(contraction, np.finfo(np.float32).eps * ratio) > MIXED_TOLERANCE:
            return FLOAT64, d, eta, 0.0
    elif ratio > REFINE_CANCELLATION:
        _refine(L, r, d, D, Xb, rho, W3, F3, net, ws)
    if not _all_finite(d):
        return DIRECTION, d, eta, 0.0
    return OK, d, eta, _dot(r, d)


@njit(**NUMBA_OPTIONS)
def _direction(exact, theta, Xb, Yb, s, rho, rho_d, F, net, fn, fn64,
               reduced, reg_code, mu, tau, damping, ws):
    """``(status, d, η, rᵀd)`` of the step's structure. A float32 structured
    direction whose error estimate is too large is computed again in float64
    (with ``fn64``, the loss's float64 function; then rounded to
    float32)."""
    if exact is not None:
        return _exact_direction(theta, Xb, Yb, s, rho, rho_d, F, net, fn,
                                reg_code, mu, tau, damping, ws)
    status, d, eta, slope = _unit_direction(theta, Xb, Yb, s, rho, rho_d, F, net,
                                            fn, reduced, reg_code, mu, tau,
                                            damping, ws)
    if status == FLOAT64:
        ws64 = np.empty(ws.shape)
        status, d64, eta, slope = _unit_direction(
            theta.astype(np.float64), Xb.astype(np.float64),
            Yb.astype(np.float64), s.astype(np.float64), rho.astype(np.float64),
            rho_d.astype(np.float64), F.astype(np.float64), net, fn64, reduced,
            reg_code, mu, tau, damping, ws64)
        for m in range(d.size):
            d[m] = d64[m]
    return status, d, eta, slope


# ------------------------------------------------------------ the step
@njit(**NUMBA_OPTIONS)
def step(exact, theta, reg, previous, reg_previous, has_previous, Xb, Yb, s,
         model, fn, fn64, rules, lam, n_rejected, initial_objective, ws):
    """One GGN-SCORE step on one batch.

    ``exact`` is None for the structured step and :data:`EXACT` for the
    exact one: its type selects the direction when numba compiles (the
    other branch is pruned), so each structure compiles only its own.
    ``model = (net, reduced, reg_code, μ, τ, M_g)``; ``fn`` is the loss's
    function in θ's dtype, ``fn64`` in float64 (first-class functions:
    passed on their own, not in a tuple),
    ``rules = (step_size, line_search, (c, shrink, max_trials), adaptive,
    damping_rules)`` with ``damping_rules = (floor, unit, increase, decay,
    reject_ratio, fixed)`` (``fixed``: λ_H of a fixed damping). With the
    adaptive damping the last step (previous → θ) is judged on this batch
    first and undone when it made the batch's objective ``reject_ratio``
    times worse (λ ← increase·λ), else
    λ ← max(floor, decay·λ).

    Returns ``(status, θ_new, g(θ_new), θ, g(θ), L(θ), R(θ), α, λ_H, λ,
    n_rejected, initial_objective, value)``: θ is the point the step started
    from (the previous one after an undo), ``value`` the objective that grew
    (status GREW). ``ws`` (9 × p, θ's dtype) is the step's workspace,
    allocated once per epoch: a fresh allocation of that size is a fresh
    mapping whose pages fault on first touch.
    """
    net, reduced, reg_code, mu, tau, M_g = model
    step_size, line_search, armijo, adaptive, damping_rules = rules
    floor, unit, increase, decay, reject_ratio, fixed = damping_rules
    c_armijo, shrink, max_trials = armijo
    obj, risk, rho, rho_d, F = _objective(theta, reg, Xb, Yb, s, net, fn, True)
    if adaptive and has_previous:
        old = _objective(previous, reg_previous, Xb, Yb, s, net, fn, False)[0]
        accepted, lam = damping_rule(obj, old, lam, floor, increase, decay,
                                     reject_ratio)
        if not accepted:
            n_rejected += 1
            theta, reg = previous, reg_previous
            obj, risk, rho, rho_d, F = _objective(theta, reg, Xb, Yb, s, net,
                                                  fn, True)
    status, value, alpha = OK, 0.0, 0.0
    damping = lam * unit if adaptive else fixed
    new, reg_new = theta, reg
    if not np.isfinite(obj) or not _all_finite(theta):
        status = NON_FINITE
    elif np.isnan(initial_objective):
        initial_objective = obj
    elif grew(obj, initial_objective):
        status, value = GREW, obj
    if status == OK:
        status, d, eta, slope = _direction(exact, theta, Xb, Yb, s, rho, rho_d,
                                           F, net, fn, fn64, reduced,
                                           reg_code, mu,
                                           tau, damping, ws)
    if status == OK:
        alpha = step_size_rule(step_size, M_g, eta)
        if line_search:
            accepted = False
            for _ in range(max_trials):
                new = _axpy(theta, alpha, d)
                reg_new = tau * _value_sum_kernel(new, reg_code, mu)
                trial = _objective(new, reg_new, Xb, Yb, s, net, fn, False)[0]
                if armijo_holds(trial, obj, c_armijo, alpha, slope):
                    accepted = True
                    break
                alpha *= shrink
            if not accepted:
                alpha, new, reg_new = 0.0, theta, reg
        else:
            new = _axpy(theta, alpha, d)
            reg_new = tau * _value_sum_kernel(new, reg_code, mu)
        if not _all_finite(new):
            status = PARAMETERS
    return (status, new, reg_new, theta, reg, obj, risk, alpha, damping, lam,
            n_rejected, initial_objective, value)


@njit(**NUMBA_OPTIONS)
def minibatch_epoch(exact, carry, Xa, Y, sample_weight, order, bounds,
                    j_start, j_end, model, fn, fn64, rules, lam, n_rejected,
                    initial_objective):
    """:func:`step` over batches ``j_start ≤ j < j_end`` of an epoch (a
    segment; the Python driver calls it segment by segment, so that an
    interrupt is seen between them). ``carry = (θ, previous θ, has_previous,
    g(θ), g(previous))`` continues from the last segment (g(θ) NaN at the
    start of an epoch). Batches of zero total weight are skipped.

    Returns ``(status, carry, sums[objective, risk, step size, damping],
    weight_total, n_steps, λ, n_rejected, initial_objective, value,
    (last_start, last_end))`` where the last pair bounds the last batch
    stepped on.
    """
    theta, previous, has_previous, reg, reg_previous = carry
    _, _, reg_code, mu, tau, _ = model
    # g(θ) of the current and the previous θ, each computed once (a pass
    # over all p parameters): the accepted trial's value is the next θ's
    if np.isnan(reg):
        reg = tau * _value_sum_kernel(theta, reg_code, mu)
    sums = np.zeros(4)
    weight_total = 0.0
    n_steps = 0
    last_start, last_end = -1, -1
    status, value = OK, 0.0
    ws = np.empty((9, theta.size), dtype=theta.dtype)
    for j in range(j_start, j_end):
        idx = order[bounds[j]:bounds[j + 1]]
        s, w_sum = normalized_weights_kernel(sample_weight[idx])
        if w_sum <= 0:
            continue
        (status, new, reg_new, theta, reg, obj, risk, alpha, damping, lam,
         n_rejected, initial_objective, value) = step(
            exact, theta, reg, previous, reg_previous, has_previous, Xa[idx],
            Y[idx], s, model, fn, fn64, rules, lam, n_rejected,
            initial_objective, ws)
        if status != OK:
            break
        previous, reg_previous, has_previous = theta, reg, True
        theta, reg = new, reg_new
        last_start, last_end = bounds[j], bounds[j + 1]
        sums[0] += obj * w_sum
        sums[1] += risk * w_sum
        sums[2] += alpha * w_sum
        sums[3] += damping * w_sum
        weight_total += w_sum
        n_steps += 1
    carry = (theta, previous, has_previous, reg, reg_previous)
    return (status, carry, sums, weight_total, n_steps, lam, n_rejected,
            initial_objective, value, (last_start, last_end))


@njit(**NUMBA_OPTIONS)
def check_last_batch(theta, reg, Xa, Y, sample_weight, idx, net, fn,
                     initial_objective):
    """The end-of-epoch check of the last step on its own batch: a status."""
    s = normalized_weights_kernel(sample_weight[idx])[0]
    obj = _objective(theta, reg, Xa[idx], Y[idx], s, net, fn, False)[0]
    if not np.isfinite(obj) or not _all_finite(theta):
        return NON_FINITE, obj
    if grew(obj, initial_objective):
        return GREW, obj
    return OK, obj


# ------------------------------------------------------------ the seam
def _fits_one_block(batch_size, n_samples, net):
    """Whether the compiled Gram, formed for all row pairs at once, stays
    within the memory bound of the Python path's row blocks, and its
    Cholesky below the order the Python path factorizes on one thread
    (a merged last batch may have up to 1.5 batches of rows)."""
    b = min(n_samples, int(1.5 * batch_size) + 1)
    pairs = b * (b + 1) // 2
    n, K = net.n_hidden, net.n_outputs
    per_pair = (net.d_aug + n + K * K) * 8
    return pairs * per_pair <= _BLOCK_BYTES and b * K < LARGE_CHOLESKY


def supports(solver, problem):
    """The step structure (:data:`EXACT` or :data:`UNIT`) that the compiled
    step runs for this solver and problem, or None when the NumPy route must
    take the epoch.

    The compiled step covers the estimators' mini-batch configurations on
    dense inputs in the dual form with the built-in network, regularizers
    and strategies and any registered loss (``register_loss``): the
    structured step (per-unit H, one kernel row per sample) in float32 and
    float64, the exact step with several
    outputs in float64 (its Gram, formed for all row pairs at once, within
    the NumPy route's memory bound). Everything else — sparse inputs, the
    primal form, full batches, one output or float32 on the exact step,
    subclassed or custom objects — runs on the NumPy route.
    """
    net = problem.network
    if not (getattr(solver, "compiled", False) and solver.form == "dual"
            and not solver.batching.full_batch(problem.n_samples)
            and type(problem) is Problem and problem.regularized
            and problem.dtype in (np.float32, np.float64)
            and type(net) is TwoLayerNetwork and isinstance(problem.Xa, np.ndarray)
            and type(problem.loss) in LOSSES.values()
            and type(problem.regularizer) in REGULARIZERS.values()
            and type(solver.damping) in (AdaptiveDamping, FixedDamping)
            and type(solver.step_size) is AdaptiveStepSize
            and (solver.line_search is None
                 or type(solver.line_search) is ArmijoLineSearch)
            and type(solver.batching) is Batching):
        return None
    kind = compiled_structure(solver.structure(problem), net.n_outputs,
                              problem.dtype)
    if kind == EXACT and not _fits_one_block(solver.batching.batch_size,
                                             problem.n_samples, net):
        return None
    return kind


def compiled_structure(structure, n_outputs, dtype):
    """The compiled step (:data:`UNIT` or :data:`EXACT`) for a step of this
    ``structure`` (``step_structure``'s) on dense data of this dtype, or None.

    The part of :func:`supports` an estimator can ask before it has chosen
    its batch size (the exact step also needs its Gram within one block).
    """
    if structure.get("per_unit") and structure.get("rank") == 1:
        return UNIT if dtype in (np.float32, np.float64) else None
    if not structure and n_outputs >= 2 and dtype == np.float64:
        return EXACT
    return None


def compiled_epoch_arguments(solver, problem):
    """The constant arguments of :func:`minibatch_epoch` for this solver and
    problem (with the data in the layout the compiled function takes), or
    None when :func:`supports` declines them."""
    structure = supports(solver, problem)
    if structure is None:
        return None
    net = problem.network
    search = solver.line_search
    dtype = problem.dtype.type
    curvature = getattr(solver, "curvature", "exact")

    def writable(a):
        # one compiled signature per dtype: C-contiguous and writable (a
        # read-only array, e.g. a memory map, would compile another one)
        a = np.ascontiguousarray(a, dtype=dtype)
        return a if a.flags.writeable else a.copy()

    return dict(
        data=(writable(problem.Xa), writable(problem.Y),
              writable(problem.sample_weight)),
        n_params=int(net.n_params),
        loss_functions=(problem.loss.kernel(dtype),
                        problem.loss.kernel(np.float64)),
        structure=structure,
        model=((int(net.n_hidden), int(net.n_outputs), float(net.kappa),
                int(ACTIVATIONS[net.activation]), bool(net.fit_intercept)),
               bool(problem.loss.reduces(curvature, net.n_outputs)),
               int(problem.regularizer._code), float(problem.regularizer.mu),
               float(problem.tau), float(problem.M_g)),
        step_size=float(solver.step_size.step_size),
        line_search=search is not None,
        armijo=((float(search.c), float(search.shrink), int(search.max_trials))
                if search is not None else (1e-4, 0.5, 30)),
    )


# Batches per call of the compiled function: between two calls Python sees
# an interrupt (Ctrl-C), which a running numba function does not.
SEGMENT_BATCHES = 256


def run_compiled_epoch(arguments, damping, theta, batches, state):
    """Run one epoch compiled; returns ``(status, message, θ, sums,
    weight_total)`` and updates ``damping`` and ``state`` as the NumPy
    route does."""
    Xa, Y, sample_weight = arguments["data"]
    model = arguments["model"]
    K, p = model[0][1], arguments["n_params"]
    # numba checks no bounds: shapes are checked here
    if np.shape(theta) != (p,):
        raise ValueError(f"theta has shape {np.shape(theta)}; the network has "
                         f"{p} parameters")
    if Y.shape != (Xa.shape[0], K) or sample_weight.shape != (Xa.shape[0],):
        raise ValueError(f"Y {Y.shape} and sample_weight {sample_weight.shape} do "
                         f"not match {Xa.shape[0]} rows and {K} outputs")
    order = (np.concatenate(batches).astype(np.intp, copy=False) if batches
             else np.empty(0, np.intp))
    bounds = np.zeros(len(batches) + 1, dtype=np.intp)
    np.cumsum([len(b) for b in batches], out=bounds[1:])
    adaptive = bool(damping.adaptive)
    if adaptive:
        lam, n_rejected = float(damping.lam), int(damping.n_rejected)
        rules = (float(damping.floor), float(damping.unit), float(damping.increase),
                 float(damping.step_decay), float(damping.reject_ratio), 0.0)
    else:
        lam, n_rejected = 0.0, 0
        rules = (0.0, 1.0, 1.0, 1.0, 1.0, float(damping.value()))
    rules = (arguments["step_size"], arguments["line_search"], arguments["armijo"],
             adaptive, rules)
    initial = (np.nan if state.initial_objective is None
               else float(state.initial_objective))
    theta = np.array(theta, dtype=Xa.dtype)  # a copy: θ₀ stays the caller's
    carry = (theta, theta, False, np.nan, np.nan)
    sums = np.zeros(4)
    weight_total = 0.0
    last = (-1, -1)
    status, value = OK, 0.0
    for j_start in range(0, len(batches), SEGMENT_BATCHES):
        j_end = min(len(batches), j_start + SEGMENT_BATCHES)
        (status, carry, part, part_weight, n_steps, lam, n_rejected, initial,
         value, segment_last) = minibatch_epoch(
            None if arguments["structure"] == UNIT else EXACT, carry, Xa, Y,
            sample_weight, order, bounds,
            j_start, j_end, model, *arguments["loss_functions"], rules, lam,
            n_rejected, initial)
        sums += part
        weight_total += part_weight
        state.n_steps += int(n_steps)
        if adaptive:
            damping.lam, damping.n_rejected = lam, int(n_rejected)
        if not np.isnan(initial):
            state.initial_objective = initial
        if segment_last[0] >= 0:
            last = segment_last
        if status != OK:
            break
    theta, reg = carry[0], carry[3]
    if status == OK and last[0] >= 0:
        status, value = check_last_batch(theta, reg, Xa, Y, sample_weight,
                                         order[last[0]:last[1]], model[0],
                                         arguments["loss_functions"][0], initial)
    message = (f"objective grew to {value:.3g}" if status == GREW
               else MESSAGES.get(status))
    return status, message, theta, sums, weight_total
