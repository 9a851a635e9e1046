"""τ from the data: generalized cross-validation of the linearized problem.

At θ the network is linear in a step δ, ``Φ(θ + δ) ≈ Φ(θ) + J δ``, and the
quadratic model of the penalty has the curvature ``τ H̄`` with
``H̄ = diag ḡ''(θ)``. Around θ, the regularized least-squares problem

    min_δ  ½ ‖J̃ δ − z‖² + ½ τ δᵀ H̄ δ,      J̃ = Aᵀ J,  z = A⁻¹ (−e)

(``e`` the residual ``∂R/∂Φ`` and ``A`` the curvature factor: for the squared
error ``A = sqrt(s/K)``, so ``z = sqrt(s/K) (y − Φ)``, the weighted
residual) is a kernel ridge regression of the working response ``z`` with
the Gram ``G = J̃ H̄⁻¹ J̃ᵀ``. With ``response="parameters"`` (what
``tau="auto"`` uses) the ridge is on θ itself,
``min_θ ½ ‖J̃ θ − z'‖² + ½ τ θᵀ H̄ θ`` with ``z' = z + J̃ θ``: the
Gauss-Newton step's own quadratic model where ``ḡ'(θ) ≈ ḡ''(θ) θ`` (near
θ = 0, the initial weights). Either way the fitted values are ``S(τ) z``
(``z'``) with the hat matrix

    S(τ) = J̃ (J̃ᵀJ̃ + τ H̄)⁻¹ J̃ᵀ = G (G + τ I)⁻¹,

and one eigendecomposition ``G = Q diag(λ) Qᵀ`` gives, for every τ of a
grid at once, ``S = Q diag(λ / (λ + τ)) Qᵀ``, its trace, its diagonal and the
residual ``(I − S) z``:

* generalized cross-validation ``GCV(τ) = m ‖(I − S) z‖² / (m − tr S)²``
  (``m`` the number of entries, with sample weights counted as frequencies:
  their sum times the outputs);
* leave-one-out ``LOO(τ) = Σ_i (((I − S) z)_i / (1 − S_ii))²`` (exact for a
  linear smoother: the i-th residual of the fit without row i).

The Gram is the engine's dual Gram at ``damping = 1``
(``D = 1/ḡ''(θ)``), with the sample weights normalized over the rows used.

The criterion sees the network linearized at its initial weights only. The
fit then climbs the Laplace evidence of the *fitted* network
(:func:`evidence_path`): from the criterion's τ it refits at τ·√10 (or
τ/√10), each fit warm-started from the best so far, while the evidence at
the fitted weights rises.
"""

import copy

import numpy as np

from ._plan import AUTO_TAU_MIN

# The τ grid of the criterion: log-spaced, both ends included.
TAU_GRID = np.logspace(-6, 0, 25)
# Rows × outputs of the Gram: a subsample of at most this many (its
# eigendecomposition costs m³: ~0.3 s for m = 1024 on one core).
MAX_GRAM_ROWS = 1024
# The evidence path's step, in decades
PATH_STEP_DECADES = 0.5


def smoother_criteria(G, z, taus, n_entries=None):
    """GCV and leave-one-out of the smoother ``S(τ) = G (G + τ I)⁻¹``.

    Parameters
    ----------
    G : ndarray of shape (m, m)
        Symmetric positive semi-definite Gram.
    z : ndarray of shape (m,)
        Working response.
    taus : ndarray of shape (T,)
        Positive regularization strengths.
    n_entries : float, default=None
        The m of GCV; None is ``len(z)``. With sample weights counted as
        frequencies it is their sum (times the outputs), so that integer
        weights give the GCV of the repeated rows.

    Returns
    -------
    criteria : dict
        ``"gcv"``, ``"loo"`` (arrays of shape (T,)), ``"dof"`` (tr S) and
        ``"evidence"``: the negative log marginal likelihood per entry of the
        Bayesian reading of the same ridge, ``z ~ N(0, c (I + G/τ))`` (a
        Gaussian prior of precision ``τ H̄ / c`` on the parameters, noise of
        variance c per entry, c profiled out), up to constants (minimized).
    """
    G = np.asarray(G, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64).ravel()
    taus = np.asarray(taus, dtype=np.float64)
    m = z.shape[0] if n_entries is None else float(n_entries)
    if not (np.all(np.isfinite(G)) and np.all(np.isfinite(z))):
        # (inputs so large that the linearization overflows): no curve; the
        # caller keeps its rule and the fit reports the real cause
        nan = np.full(taus.shape, np.nan)
        return {"gcv": nan, "loo": nan.copy(), "dof": nan.copy(),
                "evidence": nan.copy()}
    lam, Q = np.linalg.eigh(0.5 * (G + G.T))
    lam = np.clip(lam, 0.0, None)
    qz = Q.T @ z
    shrink = lam[:, None] / (lam[:, None] + taus[None, :])  # (m, T)
    fitted = Q @ (shrink * qz[:, None])  # S z, (m, T)
    residual = z[:, None] - fitted
    dof = shrink.sum(axis=0)
    rss = np.einsum("it,it->t", residual, residual)
    with np.errstate(divide="ignore", invalid="ignore"):
        gcv = m * rss / (m - dof) ** 2
        leverage = (Q * Q) @ shrink  # S_ii, (m, T)
        loo = np.sum((residual / (1.0 - leverage)) ** 2, axis=0)
    # the negative log evidence per entry of the Bayesian ridge
    # z ~ N(0, c (I + G/τ)) with its scale c profiled out (ĉ = zᵀ(I + G/τ)⁻¹z
    # / m), up to constants: ½ log ĉ + (1/2m) Σ log(1 + λ_i/τ)
    ratio = lam[:, None] / taus[None, :]
    scale = np.einsum("i,it->t", qz * qz, 1.0 / (1.0 + ratio)) / m
    with np.errstate(divide="ignore"):
        evidence = 0.5 * np.log(scale) + 0.5 * np.log1p(ratio).sum(axis=0) / m
    evidence = np.where(np.isfinite(evidence), evidence, np.inf)
    # (GCV is meaningless once the smoother spends all m degrees of freedom)
    gcv = np.where(np.isfinite(gcv) & (dof < m), gcv, np.inf)
    loo = np.where(np.isfinite(loo), loo, np.inf)
    return {"gcv": gcv, "loo": loo, "dof": dof, "evidence": evidence}


def linearized_gram(problem, theta, rows, response="step"):
    """The Gram ``J̃ H̄⁻¹ J̃ᵀ`` and working response ``z`` at θ on ``rows``.

    Only for losses with a diagonal curvature factor (squared error,
    Poisson, one sigmoid logit): ``z = −e / a``.

    Returns
    -------
    G : ndarray of shape (bK, bK)
    z : ndarray of shape (bK,)
    """
    batch = problem.batch(rows)
    evaluation = problem.evaluate(theta, batch)
    lin, _ = problem.linearize(theta, batch, evaluation, 1.0, np.float64)
    a = lin.factor.a
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(a > 0, -lin.residual / a, 0.0)
    if response == "parameters":  # the ridge on θ itself: z + J̃θ
        z = z + lin.jvp(lin.theta)
    return lin.gram(), z.ravel()


def select_tau(problem, theta, rng, criterion="gcv", taus=TAU_GRID,
               max_rows=MAX_GRAM_ROWS, response="step", tau_min=0.0):
    """The τ of the grid, at least ``tau_min``, that minimizes the criterion
    at θ.

    Parameters
    ----------
    problem : Problem
        The training problem (its τ is not used).
    theta : ndarray of shape (p,)
    rng : RandomState
        Draws the subsample when there are more than ``max_rows`` rows ×
        outputs with positive weight.
    criterion : {"gcv", "loo", "evidence"}, default="gcv"
    taus : ndarray, default=TAU_GRID
    max_rows : int, default=MAX_GRAM_ROWS
    response : {"step", "parameters"}, default="step"
        The ridge on the step δ or on θ (see the module's docstring).
    tau_min : float, default=0.0
        Smallest τ that may be chosen (the curve covers the whole grid).

    Returns
    -------
    tau : float or None
        None when the criterion cannot choose (a flat or non-finite curve).
    path : dict
        ``"tau"``, ``"gcv"``, ``"loo"``, ``"dof"`` arrays over the grid and
        ``"n_rows"``, the rows used.
    """
    K = problem.Y.shape[1]
    rows = np.flatnonzero(problem.sample_weight > 0)
    limit = max(2, max_rows // K)
    if rows.size > limit:
        rows = np.sort(rng.choice(rows, limit, replace=False))
    G, z = linearized_gram(problem, theta, rows, response)
    # sample weights count as frequencies (a row of weight 2 is the row twice)
    curves = smoother_criteria(G, z, taus,
                               K * float(problem.sample_weight[rows].sum()))
    path = {"tau": np.asarray(taus, dtype=float), **curves, "n_rows": int(rows.size)}
    allowed = np.asarray(taus) >= tau_min
    values = np.where(allowed, curves[criterion], np.inf)
    finite = np.isfinite(values)
    if not np.any(finite) or np.ptp(values[finite]) <= (
            1e-12 * np.abs(values[finite]).max()):
        return None, path
    return float(taus[int(np.argmin(values))]), path


def criterion_tau(probe, theta0, rng, criterion, fallback):
    """``(τ, tau_path_)`` of ``tau="auto"`` in full batch: the τ ≥
    ``AUTO_TAU_MIN`` of :data:`TAU_GRID` minimizing ``criterion`` on
    ``probe`` (the training problem) linearized at θ0, the ridge on θ
    itself; ``fallback`` when the criterion cannot choose."""
    # a copy: the subsample (more than MAX_GRAM_ROWS rows) does not move
    # the estimator's random stream
    tau, path = select_tau(probe, theta0, copy.deepcopy(rng), criterion=criterion,
                           response="parameters", tau_min=AUTO_TAU_MIN)
    path.update(criterion=criterion, tau_min=AUTO_TAU_MIN)
    return (fallback if tau is None else tau), path


def evidence_path(solve, log_evidence, start, verbose=False,
                  lowest=TAU_GRID[0], highest=TAU_GRID[-1],
                  decades=PATH_STEP_DECADES):
    """Climb the evidence of the fitted network from the solve ``start``.

    From ``start``'s τ the path moves τ up by ``decades`` while the log
    evidence at the fitted weights rises, each solve warm-started from the
    best one so far; when the first step up does not raise it, the path
    moves down instead. It stops at the first solve that does not
    raise the evidence, or at ``lowest``/``highest``.

    Parameters
    ----------
    solve : callable
        ``solve(tau, theta_start)``, a solve with ``.problem.tau`` and
        ``.result`` (``.theta``, ``.history``).
    log_evidence : callable
        ``log_evidence(solved)``: a float, ``-inf`` where there is none.
    start : object
        The solve at the criterion's τ (from the initial weights).
    verbose : bool, default=False
        Print a line per solve.
    lowest, highest : float
        The range of τ the path may visit.
    decades : float, default=PATH_STEP_DECADES
        The step in decades: the path's τ are ``τ0 · 10^(±k·decades)``.

    Returns
    -------
    best : object
        The solve of highest evidence (``start`` when no other is higher).
    path : dict
        ``"tau"``, ``"log_evidence"`` and ``"n_iter"`` of every solve, in
        the order solved, and ``"chosen"``, the index of ``best``.
    """
    best, best_value = start, log_evidence(start)
    taus, values, iters = [start.problem.tau], [best_value], [len(start.result.history)]
    if verbose:
        print(f"tau={taus[0]:.3g}: log evidence {best_value:.6g} "
              f"({iters[0]} iterations)")
    chosen = 0
    if np.isfinite(best_value):
        log_tau0 = np.log10(start.problem.tau)
        for sign in (1.0, -1.0):
            k, moved = 1, False
            # (10^(log τ0 ± k·decades), not repeated products: the path's τ
            # stay on the criterion's grid)
            tau = 10.0 ** (log_tau0 + sign * k * decades)
            while lowest * (1 - 1e-9) <= tau <= highest * (1 + 1e-9):
                trial = solve(tau, best.result.theta)
                value = log_evidence(trial)
                taus.append(tau)
                values.append(value)
                iters.append(len(trial.result.history))
                if verbose:
                    print(f"tau={tau:.3g}: log evidence {value:.6g} "
                          f"({iters[-1]} iterations)")
                if not value > best_value:
                    break
                best, best_value, moved = trial, value, True
                chosen = len(taus) - 1
                k += 1
                tau = 10.0 ** (log_tau0 + sign * k * decades)
            if moved:
                break
    return best, {"tau": np.array(taus), "log_evidence": np.array(values),
                  "n_iter": np.array(iters), "chosen": chosen}
