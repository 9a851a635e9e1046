"""One mini-batch epoch of GGN-SCORE as a single compiled function.

The solver's Python loop (``Solver._epoch``) spends most of a small step in
the interpreter: at the batch sizes mini-batch GGN can afford (b·K ≈ 250),
the Gram, the Cholesky factorization and the triangular solves take well
under a millisecond, the glue between them as long again. This module runs
the same epoch — the same batches, adaptive damping test, step, step size,
line search and divergence checks, in the same order — inside one numba
function, calling the very kernels of the Python path (activations,
regularizer passes, structured Gram, sensitivities, Jacobian contractions,
triangular solves). It differs from the Python path only in round-off, and
``tests/test_compiled.py`` holds the two to each other.

It covers the estimators' mini-batch configurations with several outputs
in float64 with dense inputs and the dual form; anything else runs in
Python (:func:`compiled_epoch_arguments` returns None for it): float32,
sparse inputs, the primal form, custom losses, regularizers, networks or
strategies, and one output, whose batches of 256 rows amortize the loop and
whose Gram is one BLAS syrk in the Python path (the pairwise Gram compiled
here was 3-7x slower there).
"""

import math

import numpy as np
from numba import njit

from .._activations import ACTIVATIONS, _activate_kernel
from .._config import NUMBA_OPTIONS
from .._kernels import (
    cholesky_solve_kernel,
    contract_hidden_kernel,
    contract_outputs_kernel,
    outer_products_kernel,
    pair_products_kernel,
    structured_gram_block_kernel,
    structured_sensitivities_kernel,
)
from .._losses import LogLoss, PoissonLoss, SquaredError
from .._network import _BLOCK_BYTES, TwoLayerNetwork
from .._regularizers import REGULARIZERS, _step_quantities_kernel, _value_sum_kernel
from ._linearization import LARGE_CHOLESKY, REFINE_CANCELLATION
from ._problem import Problem
from ._strategies import (
    DIVERGENCE_FACTOR,
    AdaptiveDamping,
    AdaptiveStepSize,
    ArmijoLineSearch,
    Batching,
    FixedDamping,
)

_LOSS_CODES = {SquaredError: 0, LogLoss: 1, PoissonLoss: 2}

# Status codes of an epoch (0: completed)
OK, NON_FINITE, GREW, NOT_PD, DIRECTION, PARAMETERS, SYSTEM = 0, 1, 2, 3, 4, 5, 6
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
    """ρ, ρ' (or ρ again without derivatives) and the outputs Φ on a batch."""
    b, d_aug = Xb.shape
    p_u = n * d_aug
    U = theta[:p_u].reshape((n, d_aug))
    V = theta[p_u:p_u + n * K].reshape((n, K))
    pre = Xb @ U.T
    rho = np.empty((b, n))
    rho_d = np.empty((b, n)) if with_deriv else rho
    _activate_kernel(pre.reshape(b * n), act, rho.reshape(b * n),
                     rho_d.reshape(b * n), with_deriv)
    F = rho @ V
    for k in range(b):
        for c in range(K):
            F[k, c] *= kappa
            if fit_intercept:
                F[k, c] += theta[p_u + n * K + c]
    return rho, rho_d, F


@njit(**NUMBA_OPTIONS)
def _log_expit(x):
    if x >= 0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@njit(**NUMBA_OPTIONS)
def _risk(F, Y, s, loss):
    """``Σ_k s_k ℓ(F_k, Y_k)`` (the formulas of ``_losses``)."""
    b, K = F.shape
    total = 0.0
    for k in range(b):
        acc = 0.0
        if loss == 0:
            for c in range(K):
                diff = F[k, c] - Y[k, c]
                acc += diff * diff
            acc *= 0.5 / K
        elif loss == 1:
            if K == 1:
                acc = -(Y[k, 0] * _log_expit(F[k, 0])
                        + (1.0 - Y[k, 0]) * _log_expit(-F[k, 0]))
            else:
                top = F[k, 0]
                for c in range(1, K):
                    top = max(top, F[k, c])
                total_exp = 0.0
                dot = 0.0
                for c in range(K):
                    total_exp += math.exp(F[k, c] - top)
                    dot += F[k, c] * Y[k, c]
                acc = math.log(total_exp) + top - dot
        else:
            for c in range(K):
                y = Y[k, c]
                ylogy = y * math.log(y) if y > 0 else 0.0
                f = F[k, c]
                mean = math.exp(f)  # inf on overflow, as np.exp
                acc += mean - y * f + (ylogy - y)
            acc /= K
        total += s[k] * acc
    return total


@njit(**NUMBA_OPTIONS)
def _residual_and_parts(F, Y, s, loss):
    """``e = ∂R/∂Φ`` and the factor parts ``A_k = diag(a_k) − u_k w_kᵀ``."""
    b, K = F.shape
    e = np.empty((b, K))
    a = np.empty((b, K))
    u = np.zeros((b, K))
    w = np.zeros((b, K))
    for k in range(b):
        if loss == 0:
            for c in range(K):
                e[k, c] = (F[k, c] - Y[k, c]) * (s[k] / K)
                a[k, c] = math.sqrt(s[k] / K)
        elif loss == 1:
            if K == 1:
                f = F[k, 0]
                prob = 1.0 / (1.0 + math.exp(-f)) if f >= 0 else \
                    math.exp(f) / (1.0 + math.exp(f))
                e[k, 0] = (prob - Y[k, 0]) * s[k]
                a[k, 0] = math.sqrt(s[k] * prob * (1.0 - prob))
            else:
                top = F[k, 0]
                for c in range(1, K):
                    top = max(top, F[k, c])
                total_exp = 0.0
                for c in range(K):
                    e[k, c] = math.exp(F[k, c] - top)
                    total_exp += e[k, c]
                root_s = math.sqrt(s[k])
                for c in range(K):
                    prob = e[k, c] / total_exp
                    e[k, c] = (prob - Y[k, c]) * s[k]
                    root = math.sqrt(prob)
                    a[k, c] = root * root_s
                    u[k, c] = prob * root_s
                    w[k, c] = root
        else:
            for c in range(K):
                mean = math.exp(F[k, c])  # inf on overflow, as np.exp
                e[k, c] = (mean - Y[k, c]) * (s[k] / K)
                a[k, c] = math.sqrt(mean * (s[k] / K))
    return e, a, u, w


@njit(**NUMBA_OPTIONS)
def _objective(theta, reg, Xb, Yb, s, net, loss, with_deriv):
    """``(L, R, ρ, ρ', Φ)`` of θ on a batch, given ``reg = g(θ)``."""
    n, K, kappa, act, fit_intercept = net
    rho, rho_d, F = _forward(theta, Xb, n, K, kappa, act, fit_intercept,
                             with_deriv)
    risk = _risk(F, Yb, s, loss)
    return risk + reg, risk, rho, rho_d, F


@njit(**NUMBA_OPTIONS)
def _apply_parts(a, u, w, z, transpose):
    """``A_kᵀ z_k`` (``transpose``) or ``A_k z_k`` per row."""
    b, K = z.shape
    out = np.empty((b, K))
    for k in range(b):
        dot = 0.0
        for c in range(K):
            dot += (u[k, c] if transpose else w[k, c]) * z[k, c]
        for c in range(K):
            out[k, c] = a[k, c] * z[k, c] - (w[k, c] if transpose else u[k, c]) * dot
    return out


@njit(**NUMBA_OPTIONS)
def _jvp(v, Xb, rho, W, a, u, w, n, K, kappa, fit_intercept):
    """``J̃ v`` (b × K)."""
    b, d_aug = Xb.shape
    p_u = n * d_aug
    dpre = Xb @ v[:p_u].reshape((n, d_aug)).T
    out = np.empty((b, K))
    contract_hidden_kernel(W, dpre, kappa, out)
    raw = rho @ v[p_u:p_u + n * K].reshape((n, K))
    for k in range(b):
        for c in range(K):
            raw[k, c] *= kappa
            if fit_intercept:
                raw[k, c] += v[p_u + n * K + c]
    out += _apply_parts(a, u, w, raw, True)
    return out


@njit(**NUMBA_OPTIONS)
def _backpropagate(hidden, z, Xb, rho, n, K, kappa, fit_intercept, out):
    """``out = [hiddenᵀ X̂, κ ρᵀ z, Σ_k z_k]`` (flat; written in place: the
    p-sized vectors of a step live in a workspace allocated once per call of
    the epoch, since a fresh allocation of that size is a fresh mapping whose
    pages fault on first touch — measured 70 µs for p = 79 510)."""
    d_aug = Xb.shape[1]
    p_u = n * d_aug
    np.dot(hidden.T, Xb, out[:p_u].reshape((n, d_aug)))
    np.dot(rho.T, z, out[p_u:p_u + n * K].reshape((n, K)))
    for m in range(p_u, p_u + n * K):
        out[m] *= kappa
    if fit_intercept:
        for c in range(K):
            acc = 0.0
            for k in range(z.shape[0]):
                acc += z[k, c]
            out[p_u + n * K + c] = acc


@njit(**NUMBA_OPTIONS)
def _vjp(y, Xb, rho, W, a, u, w, n, K, kappa, fit_intercept, out):
    """``out = J̃ᵀ y`` (flat) for y of shape (b, K)."""
    hidden = np.empty((W.shape[0], W.shape[2]))
    contract_outputs_kernel(W, y, kappa, hidden)
    z = _apply_parts(a, u, w, y, False)
    _backpropagate(hidden, z, Xb, rho, n, K, kappa, fit_intercept, out)


@njit(**NUMBA_OPTIONS)
def _dual_solve(L, vec, D, Xb, rho, W, a, u, w, n, K, kappa, fit_intercept,
                Dv, back, out):
    """``out = (J̃ᵀJ̃ + H)⁻¹ vec`` by the Woodbury identity, with ``Dv = D vec``
    and ``back`` as workspace (Dv keeps ``D vec``)."""
    b = Xb.shape[0]
    for m in range(vec.size):
        Dv[m] = D[m] * vec[m]
    rhs = _jvp(Dv, Xb, rho, W, a, u, w, n, K, kappa, fit_intercept)
    y = cholesky_solve_kernel(L, rhs.reshape(b * K))
    _vjp(y.reshape((b, K)), Xb, rho, W, a, u, w, n, K, kappa, fit_intercept,
         back)
    for m in range(vec.size):
        out[m] = Dv[m] - D[m] * back[m]


@njit(**NUMBA_OPTIONS)
def _gram(Xb, rho, rho_d, a, u, w, D, V, n, K, kappa, fit_intercept):
    """``I + J̃ D J̃ᵀ`` (bK × bK): the Python path's structured Gram in one
    block of rows (``TwoLayerNetwork.gram``, the same kernels)."""
    b, d_aug = Xb.shape
    p_u = n * d_aug
    M = pair_products_kernel(Xb, 0, b) @ D[:p_u].reshape((n, d_aug)).T
    D_bo = D[p_u + n * K:] if fit_intercept else D[:0]
    gram = np.empty((b * K, b * K))
    structured_gram_block_kernel(M, rho, rho_d, a, u, w,
                                 D[p_u:p_u + n * K].reshape((n, K)), D_bo,
                                 outer_products_kernel(V), kappa * kappa, 0, b,
                                 gram)
    for m in range(b * K):
        gram[m, m] += 1.0
    return gram


@njit(**NUMBA_OPTIONS)
def _all_finite(x):
    """Whether every entry of a vector is finite (no temporary array)."""
    for m in range(x.size):
        if not np.isfinite(x[m]):
            return False
    return True


@njit(**NUMBA_OPTIONS)
def _axpy(theta, alpha, d):
    """``θ − α d`` as a new vector (one pass)."""
    out = np.empty(theta.size)
    for m in range(theta.size):
        out[m] = theta[m] - alpha * d[m]
    return out


# rows of the per-call workspace
_REG_GRAD, _D, _R, _DV, _BACK, _DIR, _RES, _DV2, _CORR = range(9)


@njit(**NUMBA_OPTIONS)
def _direction(theta, Xb, Yb, s, rho, rho_d, F, net, loss, reg_code, mu, tau,
               scale, ws):
    """``(status, d, r, η)``: the GGN-SCORE direction with ``H = scale ḡ''``;
    ``d`` and ``r`` are rows of the workspace ``ws``."""
    n, K, kappa, act, fit_intercept = net
    b, d_aug = Xb.shape
    p = theta.size
    p_u = n * d_aug
    V = theta[p_u:p_u + n * K].reshape((n, K))
    e, a, u, w = _residual_and_parts(F, Yb, s, loss)
    reg_grad, D, r, d = ws[_REG_GRAD], ws[_D], ws[_R], ws[_DIR]
    eta = math.sqrt(_step_quantities_kernel(theta, reg_code, mu, tau, scale,
                                            reg_grad, D))
    # r = Jᵀ e + ∇g: the hidden error κ ρ' ∘ (e Vᵀ)
    hidden = e @ V.T
    for k in range(b):
        for i in range(n):
            hidden[k, i] *= rho_d[k, i] * kappa
    _backpropagate(hidden, e, Xb, rho, n, K, kappa, fit_intercept, r)
    for m in range(p):
        r[m] += reg_grad[m]
    gram = _gram(Xb, rho, rho_d, a, u, w, D, V, n, K, kappa, fit_intercept)
    if not _all_finite(gram.reshape(gram.size)):
        return SYSTEM, d, r, eta
    try:
        L = np.linalg.cholesky(gram)
    except Exception:  # noqa: BLE001 (numba: LinAlgError, not PD)
        return NOT_PD, d, r, eta
    W = np.empty((b, K, n))
    structured_sensitivities_kernel(np.ascontiguousarray(V.T), a, u, w, rho_d, W)
    Dr, back = ws[_DV], ws[_BACK]
    _dual_solve(L, r, D, Xb, rho, W, a, u, w, n, K, kappa, fit_intercept, Dr,
                back, d)
    norm_d = math.sqrt(np.dot(d, d))
    ratio = math.sqrt(np.dot(Dr, Dr)) / max(norm_d, 2.2250738585072014e-308)
    if ratio > REFINE_CANCELLATION:
        # one step of iterative refinement on the primal equation
        res, corr = ws[_RES], ws[_CORR]
        Jd = _jvp(d, Xb, rho, W, a, u, w, n, K, kappa, fit_intercept)
        _vjp(Jd, Xb, rho, W, a, u, w, n, K, kappa, fit_intercept, back)
        for m in range(p):
            res[m] = r[m] - back[m] - d[m] / D[m]
        _dual_solve(L, res, D, Xb, rho, W, a, u, w, n, K, kappa, fit_intercept,
                    ws[_DV2], back, corr)
        for m in range(p):
            d[m] += corr[m]
    if not _all_finite(d):
        return DIRECTION, d, r, eta
    return OK, d, r, eta


@njit(**NUMBA_OPTIONS)
def minibatch_epoch(carry, Xa, Y, sample_weight, order, bounds, j_start, j_end,
                    net, loss, reg_code, mu, tau, M_g, step_size, line_search,
                    armijo, adaptive, damping, initial_objective):
    """Batches ``j_start ≤ j < j_end`` of an epoch (a segment; the Python
    side calls it segment by segment so that an interrupt is seen between
    them). ``carry = (θ, previous θ, has_previous, g(θ), g(previous))``
    continues from the last segment (g(θ) NaN at the start of an epoch).

    Returns ``(status, carry, sums[objective, risk, step size, damping],
    weight_total, n_steps, (λ, n_rejected), initial_objective, value,
    (last_start, last_end))`` where ``value`` is the objective that grew
    (status GREW) and the last pair bounds the last batch stepped on.
    """
    lam, floor, unit, increase, decay, reject_ratio, n_rejected, scale = damping
    c_armijo, shrink, max_trials = armijo
    theta, previous, has_previous, reg, reg_previous = carry
    # g(θ) of the current and the previous θ, each computed once (a pass
    # over all p parameters): the accepted trial's value is the next θ's
    if np.isnan(reg):
        reg = tau * _value_sum_kernel(theta, reg_code, mu)
    sums = np.zeros(4)
    weight_total = 0.0
    n_steps = 0
    last_start, last_end = -1, -1
    status, value = OK, 0.0
    ws = np.empty((9, theta.size))
    for j in range(j_start, j_end):
        idx = order[bounds[j]:bounds[j + 1]]
        wb = sample_weight[idx]
        w_sum = 0.0
        for v in wb:
            w_sum += v
        if w_sum <= 0:
            continue
        s = wb / w_sum
        Xb = Xa[idx]
        Yb = Y[idx]
        obj, risk, rho, rho_d, F = _objective(theta, reg, Xb, Yb, s, net, loss,
                                              True)
        if adaptive and has_previous:
            old = _objective(previous, reg_previous, Xb, Yb, s, net, loss,
                             False)[0]
            if obj > reject_ratio * old:
                lam *= increase
                n_rejected += 1
                theta = previous
                reg = reg_previous
                obj, risk, rho, rho_d, F = _objective(theta, reg, Xb, Yb, s, net,
                                                      loss, True)
            else:
                lam = max(floor, lam * decay)
        if not np.isfinite(obj) or not _all_finite(theta):
            status = NON_FINITE
            break
        if np.isnan(initial_objective):
            initial_objective = obj
        elif obj > DIVERGENCE_FACTOR * max(1.0, initial_objective):
            status, value = GREW, obj
            break
        curvature = lam * unit if adaptive else scale
        status, d, r, eta = _direction(theta, Xb, Yb, s, rho, rho_d, F, net, loss,
                                       reg_code, mu, tau, curvature, ws)
        if status != OK:
            break
        alpha = min(1.0, step_size / (1.0 + M_g * eta))
        if line_search:
            slope = np.dot(r, d)
            accepted = False
            for _ in range(max_trials):
                candidate = _axpy(theta, alpha, d)
                reg_new = tau * _value_sum_kernel(candidate, reg_code, mu)
                trial = _objective(candidate, reg_new, Xb, Yb, s, net, loss,
                                   False)[0]
                if np.isfinite(trial) and trial <= obj - c_armijo * alpha * slope:
                    accepted = True
                    break
                alpha *= shrink
            if accepted:
                new = candidate
            else:
                alpha = 0.0
                new = theta
                reg_new = reg
        else:
            new = _axpy(theta, alpha, d)
            reg_new = tau * _value_sum_kernel(new, reg_code, mu)
        if not _all_finite(new):
            status = PARAMETERS
            break
        previous = theta
        reg_previous = reg
        has_previous = True
        theta = new
        reg = reg_new
        last_start, last_end = bounds[j], bounds[j + 1]
        sums[0] += obj * w_sum
        sums[1] += risk * w_sum
        sums[2] += alpha * w_sum
        sums[3] += curvature * w_sum
        weight_total += w_sum
        n_steps += 1
    carry = (theta, previous, has_previous, reg, reg_previous)
    return (status, carry, sums, weight_total, n_steps, (lam, n_rejected),
            initial_objective, value, (last_start, last_end))


@njit(**NUMBA_OPTIONS)
def check_last_batch(theta, reg, Xa, Y, sample_weight, idx, net, loss,
                     initial_objective):
    """The end-of-epoch check of the last step on its own batch: a status."""
    wb = sample_weight[idx]
    s = wb / wb.sum()
    obj = _objective(theta, reg, Xa[idx], Y[idx], s, net, loss, False)[0]
    if not np.isfinite(obj) or not _all_finite(theta):
        return NON_FINITE, obj
    if obj > DIVERGENCE_FACTOR * max(1.0, initial_objective):
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


def compiled_epoch_arguments(solver, problem):
    """The constant arguments of :func:`minibatch_epoch` for this solver and
    problem (with the data in the layout the compiled function takes), or
    None when the epoch must run in Python."""
    net = problem.network
    if not (getattr(solver, "compiled", False) and solver.form == "dual"
            and type(problem) is Problem
            and problem.regularized and problem.dtype == np.float64
            and type(net) is TwoLayerNetwork and net.n_outputs >= 2
            and isinstance(problem.Xa, np.ndarray)
            and type(problem.loss) in _LOSS_CODES
            and type(problem.regularizer) in REGULARIZERS.values()
            and _fits_one_block(solver.batching.batch_size, problem.n_samples,
                                net)
            and type(solver.damping) in (AdaptiveDamping, FixedDamping)
            and type(solver.step_size) is AdaptiveStepSize
            and (solver.line_search is None
                 or type(solver.line_search) is ArmijoLineSearch)
            and type(solver.batching) is Batching):
        return None
    search = solver.line_search

    def writable(a):
        # one compiled signature: C-contiguous, writable float64 (a read-only
        # array, e.g. a memory map, would compile another specialization)
        a = np.ascontiguousarray(a, dtype=np.float64)
        return a if a.flags.writeable else a.copy()

    return dict(
        data=(writable(problem.Xa), writable(problem.Y),
              writable(problem.sample_weight)),
        net=(int(net.n_hidden), int(net.n_outputs), float(net.kappa),
             int(ACTIVATIONS[net.activation]), bool(net.fit_intercept)),
        loss=_LOSS_CODES[type(problem.loss)],
        reg_code=int(problem.regularizer._code), mu=float(problem.regularizer.mu),
        tau=float(problem.tau), M_g=float(problem.M_g),
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
    weight_total)`` and updates ``damping`` and ``state`` as the Python
    epoch does."""
    arguments = dict(arguments)
    Xa, Y, sample_weight = arguments.pop("data")
    n, K, _, _, fit_intercept = arguments["net"]
    p = n * Xa.shape[1] + n * K + K * int(fit_intercept)
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
    initial = (np.nan if state.initial_objective is None
               else float(state.initial_objective))
    theta = np.array(theta, dtype=np.float64)  # a copy: θ₀ stays the caller's
    carry = (theta, theta, False, np.nan, np.nan)
    sums = np.zeros(4)
    weight_total = 0.0
    last = (-1, -1)
    status, value = OK, 0.0
    for j_start in range(0, len(batches), SEGMENT_BATCHES):
        if adaptive:
            params = (float(damping.lam), float(damping.floor),
                      float(damping.unit), float(damping.increase),
                      float(damping.step_decay), float(damping.reject_ratio),
                      int(damping.n_rejected), 0.0)
        else:
            params = (0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0,
                      float(damping.curvature_scale()))
        j_end = min(len(batches), j_start + SEGMENT_BATCHES)
        (status, carry, part, part_weight, n_steps, (lam, n_rejected), initial,
         value, segment_last) = minibatch_epoch(
            carry, Xa, Y, sample_weight, order, bounds, j_start, j_end,
            adaptive=adaptive, damping=params, initial_objective=initial,
            **arguments)
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
                                         order[last[0]:last[1]], arguments["net"],
                                         arguments["loss"], initial)
    message = (f"objective grew to {value:.3g}" if status == GREW
               else MESSAGES.get(status))
    return status, message, theta, sums, weight_total
