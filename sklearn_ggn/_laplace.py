"""The linearized Laplace approximation at the fitted parameters.

At the fitted θ* the network is linear in θ, ``Φ(x; θ) ≈ Φ(x; θ*) +
J(x)(θ − θ*)``, and the objective's Gauss-Newton curvature is the posterior
precision of a Laplace ("GLM") approximation. With ``N = Σ_k w_k`` the
training rows counted by their sample weights and ``s_k = w_k / N``:

* squared error, Gaussian noise of variance σ² on each of K outputs: the
  objective ``R + τ Σ ḡ(θ)`` with ``R = ½ Σ s_k (1/K) ‖Φ_k − y_k‖²`` is, up
  to the factor ``σ² / (N K)``, the negative log posterior of the likelihood
  ``Π_k N(y_k; Φ_k, σ² I)^{w_k}`` and a prior ``∝ exp(−α Σ ḡ(θ_i))`` with
  ``α = N K τ / σ²``, so the posterior precision at θ* is

      ``P = (N K / σ²) B``,   ``B = J̃ᵀ J̃ + τ diag ḡ''(θ*)``,

  ``J̃_k = sqrt(s_k / K) J_k`` (the step's factor of the exact curvature);
* log loss: ``P = N B`` with ``J̃_k = A_kᵀ J_k``, ``A_k A_kᵀ = s_k (diag π_k −
  π_k π_kᵀ)``.

``B`` is the matrix of a Gauss-Newton step with the paper's ``H = ∇²g``
(the step's scale and factor), taken over all training rows. The
predictive covariance of the outputs at x is ``J(x) P⁻¹ J(x)ᵀ``, i.e. a
constant (``σ²/(NK)`` or ``1/N``) times

    ``J(x) B⁻¹ J(x)ᵀ = k(x, x) − k(x)ᵀ (I + G)⁻¹ k(x)``        (dual)

with ``D = (τ ḡ''(θ*))⁻¹``, ``G = J̃ D J̃ᵀ`` (the step's Gram over the m
training rows), ``k(x) = J̃ D J(x)ᵀ`` and ``k(x, x) = J(x) D J(x)ᵀ``.

Three structures of B (all plain arrays, kept on the estimator):

* ``"dual"``: exact; the Cholesky factor of ``I + G`` (order m·K), the
  training inputs and the rows' curvature factors are kept, and k(x) is
  formed from them at prediction (in blocks of rows).
* ``"primal"``: exact; the inverse of B's Cholesky factor (order p) is
  kept, and nothing of the training data. ``J̃ᵀ J̃`` over all rows is built,
  for one output, from the explicit Jacobian by a symmetric rank-k update
  (:func:`gauss_newton_rows`), for K outputs by the step's structured
  product.
* ``"last_layer"``: B restricted to the output weights and bias, the hidden
  layer held at θ* (its uncertainty is ignored): order ``(n + 1) K``,
  nothing of the training data.

The log-determinant of the evidence follows from the same factor by the
determinant lemma, ``log det(B D) = log det(I + G)``.
"""

import numpy as np
import scipy.sparse as sp
from scipy.linalg import solve_triangular
from scipy.linalg.blas import dtrmm
from scipy.linalg.lapack import dtrtri, strtri

from ._network import _BLOCK_BYTES, _dense
from .engine import StepFailure, cholesky

_TRTRI = {"d": dtrtri, "f": strtri}

STRUCTURES = ("dual", "primal", "last_layer")
# The exact forms are offered while their stored factor stays small: the
# dual one up to this order (m·K; 32 MiB in float64) ...
MAX_DUAL_ROWS = 2048
# ... the primal one up to this many parameters (p; 72 MiB).
MAX_PRIMAL_PARAMS = 3000


def _as64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def jacobian_rows(network, theta, Xa, units=None):
    """The explicit Jacobian ``J(x)`` of the outputs on the rows ``Xa``.

    Parameters
    ----------
    network : TwoLayerNetwork
    theta : ndarray of shape (p,)
    Xa : ndarray or sparse matrix of shape (b, d̂)
        Augmented inputs (dense but for ``units="last_layer"``, which needs
        only the hidden activations).
    units : bool, default=None
        ``"last_layer"``: only the columns of the output weights and bias.

    Returns
    -------
    J : ndarray of shape (b, K, p) (or (b, K, n K + K))
        In the layout of θ: ``∂Φ_c/∂U_aug[i, j] = κ V_ic ρ'_i x̂_j``,
        ``∂Φ_c/∂V[i, c'] = κ ρ_i δ_cc'``, ``∂Φ_c/∂b_o[c'] = δ_cc'``.
    """
    cache = network.forward(theta, Xa)
    _, V, _ = network.unpack(theta)
    b, n, K, d_aug = Xa.shape[0], network.n_hidden, network.n_outputs, \
        network.d_aug
    n_rest = n * K + K * network.fit_intercept
    last = units == "last_layer"
    p = n_rest if last else network.n_params
    J = np.empty((b, K, p), dtype=np.float64)
    offset = 0 if last else network.n_hidden_params
    J[:, :, offset:] = 0.0
    if not last:
        # κ V_ic ρ'_ki x̂_kj, written in place (a view of J's first columns)
        W = network.kappa * cache.rho_d[:, None, :] * V.T[None, :, :]  # (b, K, n)
        np.multiply(W[:, :, :, None], Xa[:, None, None, :],
                    out=J[:, :, :offset].reshape(b, K, n, d_aug))
    scaled = network.kappa * cache.rho
    for c in range(K):
        J[:, c, offset + c:offset + n * K:K] = scaled
        if network.fit_intercept:
            J[:, c, offset + n * K + c] = 1.0
    return J


def _row_blocks(b, per_row_bytes):
    rows = max(1, int(_BLOCK_BYTES // max(1, per_row_bytes)))
    for k0 in range(0, b, rows):
        yield slice(k0, min(b, k0 + rows))


def _last_layer_gram(network, rho, A):
    """``Σ_k J̃_kᵀ J̃_k`` over the output layer's parameters (p × p, p =
    (n + 1) K with the output bias, n K without), ``J̃_k = A_kᵀ J_k``, from
    the rows' hidden activations ``rho`` (N × n).

    The output layer's Jacobian of a row is ``J_k = φ_kᵀ ⊗ I_K`` with
    ``φ_k = (κ ρ_k, 1)`` (the bias as one more unit, θ's layout: unit-major,
    class-minor), so ``J̃_kᵀ J̃_k = (φ_k φ_kᵀ) ⊗ Q_k`` with ``Q_k = A_k A_kᵀ``:
    one weighted ``Φᵀ diag(Q[:, c, c']) Φ`` per pair of classes, K²/2 ·
    N (n+1)² flops instead of the N K (n+1)² K² of the explicit rows (a
    26-class fit on 15 000 rows: seconds, not a minute)."""
    K = network.n_outputs
    units = network.n_hidden + network.fit_intercept
    phi = np.empty((rho.shape[0], units))
    phi[:, :network.n_hidden] = network.kappa * rho
    if network.fit_intercept:
        phi[:, -1] = 1.0
    Q = np.einsum("kcr,kdr->kcd", A, A)
    data = np.zeros((units, K, units, K))
    for c in range(K):
        for d in range(c, K):
            M = (phi * Q[:, c, d][:, None]).T @ phi
            data[:, c, :, d] = M
            if d != c:
                data[:, d, :, c] = M.T
    return data.reshape(units * K, units * K)


def gauss_newton_rows(network, theta, Xa, A):
    """``J̃ᵀ J̃ = Σ_k J_kᵀ A_k A_kᵀ J_k`` (p × p) over the rows ``Xa`` from
    their explicit Jacobian, in blocks of rows, by a symmetric rank-k update
    (BLAS syrk: b p² flops, one triangle), then mirrored.

    The step's :meth:`TwoLayerNetwork.gauss_newton_matrix` forms the
    hidden-hidden block as ``Σ_k C_k ⊗ x̂_k x̂_kᵀ``, one GEMM of 2 b n² d̂²
    flops that computes both triangles; for one output the syrk of the
    explicit rows does half those flops (with K outputs it does K/2 times
    them: the posterior then takes the structured product).

    Parameters
    ----------
    network : TwoLayerNetwork
    theta : ndarray of shape (p,)
    Xa : ndarray or sparse matrix of shape (b, d̂)
        Augmented inputs (a sparse block of rows is densified at a time).
    A : ndarray of shape (b, K, K)
        The rows' curvature factors, ``J̃_k = A_kᵀ J_k``.

    Returns
    -------
    gn : ndarray of shape (p, p), float64
    """
    from scipy.linalg.blas import dsyrk

    theta = _as64(theta)
    K, p = network.n_outputs, network.n_params
    gn = np.zeros((p, p), order="F")
    for rows in _row_blocks(Xa.shape[0], 8 * K * p * 3):
        Xc = Xa[rows]
        if sp.issparse(Xc):
            Xc = Xc.toarray()
        J = jacobian_rows(network, theta, _as64(Xc))  # (bc, K, p)
        Jt = np.einsum("kcr,kcp->krp", A[rows], J).reshape(-1, p)
        # (Jt is C-ordered: its transpose is the Fortran-ordered p × bK
        # operand of syrk's C += a aᵀ, without a copy)
        gn = dsyrk(1.0, Jt.T, beta=1.0, c=gn, trans=0, lower=1,
                   overwrite_c=1)
    upper = np.triu_indices(p, 1)
    gn[upper] = gn.T[upper]
    return np.ascontiguousarray(gn)


def _parameter_gram(network, theta, batch, evaluation, lin, A, last):
    """``J̃ᵀ J̃`` of the primal form (of the last layer's parameters when
    ``last``) over the rows of ``batch``."""
    if last:
        # (the last layer needs only ρ, from the evaluation: sparse rows
        # stay sparse)
        return _last_layer_gram(network, evaluation.cache.rho, A)
    if network.n_outputs == 1:
        # one row per sample: the syrk of the explicit rows does half the
        # flops of the structured product
        return gauss_newton_rows(network, theta, batch.Xa, A)
    # K outputs: explicit rows would repeat the hidden block K times; the
    # structured product forms it once
    return lin.gauss_newton_matrix()


def fit_posterior(problem, theta, structure, prior_scale="fitted", keep_rows=True):
    """The factored ``B`` of the module docstring at θ on all training rows.

    Parameters
    ----------
    problem : Problem
        The training problem (its τ, loss, regularizer and data); τ > 0.
    theta : ndarray of shape (p,)
        The fitted parameters.
    structure : {"dual", "primal", "last_layer"}
    prior_scale : {"fitted", "evidence"}, default="fitted"
        ``"fitted"``: the prior is the fit's, precision ``α ḡ''(θ*)``.
        ``"evidence"``: its precision is multiplied by the ``c`` that
        maximizes the evidence at θ* (θ* held fixed),

            ``log Z(c) = const − c α Σ ḡ(θ*) − ½ Σ_i log(1 + λ_i / c)``,

        λ the eigenvalues of ``G = J̃ D J̃ᵀ`` (of ``D^{1/2} J̃ᵀ J̃ D^{1/2}``
        for the primal and last-layer forms), by MacKay's fixed point
        ``c = γ(c) / (2 α Σ ḡ(θ*))``, ``γ(c) = Σ λ_i / (λ_i + c)``. For the
        log loss only (``α = N τ``); the last layer scales its own prior.
    keep_rows : bool, default=True
        Keep the dual form's training inputs and factors, which predictions
        need (the evidence alone does not: without them a sparse X is never
        densified).

    Returns
    -------
    posterior : dict
        Plain arrays and numbers: ``"structure"``, ``"factor"`` (the lower
        Cholesky factor of ``I + G``, dual form) or ``"inverse"`` (the
        inverse of B's lower Cholesky factor, primal and last-layer forms),
        ``"logdet"`` (``log det(B D)`` at the fit's
        prior), ``"dof"`` (the effective number of parameters
        ``tr(J̃ B⁻¹ J̃ᵀ)``), ``"prior_scale"`` (c), ``"D"`` (``B``'s prior
        variances, divided by c) and, for ``"dual"`` with ``keep_rows``, the
        training inputs ``"Xa"`` and factors ``"A"``.

    Raises
    ------
    StepFailure
        When the system is not numerically positive definite.
    """
    network = problem.network
    theta = _as64(theta)
    rows = np.flatnonzero(problem.sample_weight > 0)
    batch = problem.batch(rows if rows.size < problem.n_samples else None)
    evaluation = problem.evaluate(theta, batch)
    lin, _ = problem.linearize(theta, batch, evaluation, problem.tau, np.float64,
                               curvature="exact", hessian="diagonal")
    D = np.array(lin.D, dtype=np.float64)
    A = _dense(lin.factor)  # (b, K, K): J̃_k = A_kᵀ J_k
    last = structure == "last_layer"
    first = network.n_hidden_params if last else 0
    if structure == "dual":
        data = lin.gram()  # G
        spectrum = data
    else:
        Dpart = D[first:]
        data = _parameter_gram(network, theta, batch, evaluation, lin, A, last)
        root = np.sqrt(Dpart)
        spectrum = root[:, None] * data * root[None, :]
    scale, logdet_fitted = 1.0, None
    if prior_scale == "evidence":
        lam = np.clip(np.linalg.eigvalsh(spectrum), 0.0, None)
        logdet_fitted = float(np.sum(np.log1p(lam)))
        energy = (float(np.sum(problem.sample_weight)) * problem.tau
                  * float(problem.regularizer.value_sum(theta[first:])))
        scale = _evidence_scale(lam, energy)
        D[first:] /= scale
    del spectrum
    posterior = {"structure": structure, "D": D, "prior_scale": scale,
                 **_factored(structure, data, D[first:], scale,
                             (batch.Xa, A) if keep_rows else None)}
    if logdet_fitted is not None:
        posterior["logdet"] = logdet_fitted
    return posterior


def _factored(structure, data, Dpart, scale, rows):
    """The factor of ``B`` from ``data`` (the dual form's ``G``, else
    ``J̃ᵀ J̃`` of the parameters ``Dpart`` weighs): ``"factor"`` (dual) or
    ``"inverse"``, ``"logdet"``, ``"dof"`` and the dual form's ``rows``
    ``(Xa, A)`` (None: not kept)."""
    if structure == "dual":
        m = data.shape[0]
        data /= scale
        data.flat[:: m + 1] += 1.0
        L = cholesky(data)
        inverse = _triangular_inverse(L)
        # (L⁻¹ is not kept: squared in place)
        dof = float(m - np.sum(np.square(inverse, out=inverse)))
        kept = {}
        if rows is not None:
            Xa, A = rows
            kept = dict(Xa=_as64(Xa.toarray() if sp.issparse(Xa) else Xa),
                        A=_as64(A))
        return dict(factor=L, logdet=2.0 * float(np.sum(np.log(np.diag(L)))),
                    dof=dof, **kept)
    p = Dpart.shape[0]
    data.flat[:: p + 1] += 1.0 / Dpart
    L = cholesky(data)
    inverse = _triangular_inverse(L)
    # tr(J̃ B⁻¹ J̃ᵀ) = p − tr(B⁻¹ D⁻¹), diag(B⁻¹) = column sums of (L⁻¹)²;
    # L⁻¹ is kept instead of L: a prediction's ‖L⁻¹ J(x)ᵀ‖² is then a
    # triangular product (trmm), 1.7x faster than the solve with L
    return dict(inverse=inverse,
                logdet=2.0 * float(np.sum(np.log(np.diag(L))))
                + float(np.sum(np.log(Dpart))),
                dof=float(p - np.sum(_column_squares(inverse) / Dpart)))


def _column_squares(a):
    """``np.sum(a * a, axis=0)`` of a square array, the squares formed for
    blocks of columns of :data:`_BLOCK_BYTES` (not a second p × p array)."""
    out = np.empty(a.shape[1])
    width = max(1, int(_BLOCK_BYTES // max(1, 8 * a.shape[0])))
    for j0 in range(0, a.shape[1], width):
        block = a[:, j0:j0 + width]
        np.sum(block * block, axis=0, out=out[j0:j0 + width])
    return out


def _triangular_inverse(L):
    """``L⁻¹`` of a lower-triangular factor by LAPACK's trtri (m³/3 flops;
    a triangular solve against the identity takes m³)."""
    inverse, info = _TRTRI[L.dtype.char](L, lower=1)
    if info != 0:
        raise StepFailure(f"the posterior's factor is singular (trtri info={info})")
    return inverse


def _evidence_scale(lam, energy, iterations=200):
    """MacKay's fixed point ``c = γ(c) / (2 E)``, ``γ(c) = Σ λ / (λ + c)``,
    of ``max_c −c E − ½ Σ log(1 + λ / c)`` (1 when E or λ vanish)."""
    if not (energy > 0 and np.any(lam > 0)):
        return 1.0
    c = 1.0
    for _ in range(iterations):
        updated = float(np.sum(lam / (lam + c))) / (2.0 * energy)
        updated = min(max(updated, 1e-8), 1e8)
        if abs(updated - c) <= 1e-10 * c:
            return updated
        c = updated
    return c


def output_variance(network, theta, posterior, Xa):
    """``diag J(x) B⁻¹ J(x)ᵀ`` per row and output, shape (b, K).

    ``Xa`` are augmented inputs (dense or sparse); rows are processed in
    blocks so that the explicit Jacobian of a block stays within 64 MiB.
    """
    theta = _as64(theta)
    structure = posterior["structure"]
    L = posterior.get("factor")  # (the dual form; the others keep L⁻¹)
    inverse = posterior.get("inverse")
    D = posterior["D"]
    K = network.n_outputs
    b = Xa.shape[0]
    out = np.empty((b, K))
    last = structure == "last_layer"
    p = (network.n_params - network.n_hidden_params) if last else network.n_params
    for rows in _row_blocks(b, 8 * K * p * 3):
        Xc = Xa[rows]
        if sp.issparse(Xc) and not last:  # a block of rows, as the primal step
            Xc = Xc.toarray()
        J = jacobian_rows(network, theta, Xc, structure).reshape(-1, p)
        if structure != "dual":
            # J B⁻¹ Jᵀ = ‖L⁻¹ Jᵀ‖² column by column
            if inverse is not None:  # (J is a temporary: overwritten)
                solved = dtrmm(1.0, inverse, J.T, lower=1, overwrite_b=1)
            else:  # (a posterior stored with its factor L)
                solved = solve_triangular(L, J.T, lower=True, check_finite=False)
            out[rows] = np.einsum("pr,pr->r", solved, solved).reshape(-1, K)
            continue
        # k(x, x) − k(x)ᵀ (I + G)⁻¹ k(x), k(x) = J̃ D J(x)ᵀ
        JD = J * D
        prior = np.einsum("rp,rp->r", JD, J)
        Xtr, A = posterior["Xa"], posterior["A"]
        m = Xtr.shape[0] * K
        cross = np.empty((m, J.shape[0]))
        for tr in _row_blocks(Xtr.shape[0], 8 * K * p * 2):
            Jtr = jacobian_rows(network, theta, Xtr[tr])  # (bt, K, p)
            Jt = np.einsum("kcr,kcp->krp", A[tr], Jtr).reshape(-1, p)
            cross[tr.start * K:tr.stop * K] = Jt @ JD.T
        solved = solve_triangular(L, cross, lower=True, check_finite=False)
        out[rows] = (prior - np.sum(solved * solved, axis=0)).reshape(-1, K)
    return np.maximum(out, 0.0)


def leverages(network, theta, posterior, Xa, sample_weight):
    """The leverage of one unit of weight of each training row in the
    linearized fit, per row and output (b, K): ``[J_k B⁻¹ J_kᵀ]_cc / (N K)``
    with ``N = Σ w``. Times ``w_k`` it is the diagonal of the hat matrix
    ``S = J̃ B⁻¹ J̃ᵀ`` (the squared error's ``J̃_k = sqrt(s_k / K) J_k``,
    ``s_k = w_k / N``), the derivative of the row's fitted value in its own
    target; per unit of weight it is each copy's share when an integer
    weight stands for repeated rows.

    Parameters
    ----------
    network : TwoLayerNetwork
    theta : ndarray of shape (p,)
    posterior : dict
        :func:`fit_posterior`'s factor over all training rows.
    Xa : ndarray or sparse matrix of shape (b, d̂)
        Augmented training inputs.
    sample_weight : ndarray of shape (b,)
        Their weights (all of them: ``N`` is their sum).
    """
    N = float(np.sum(sample_weight, dtype=np.float64))
    return output_variance(network, theta, posterior, Xa) / (N * network.n_outputs)


def choose_structure(requested, network, n_rows, sparse_input=False,
                     available_bytes=None):
    """The structure of ``uncertainty="auto"``, or the requested one.

    ``"auto"`` takes the exact form the step's cost model
    (:meth:`TwoLayerNetwork.step_costs` for a batch of all ``n_rows``
    rows, :func:`~sklearn_ggn._memory.choose_linear_solver` for memory)
    prefers among those whose stored factor is small (order m·K at most
    :data:`MAX_DUAL_ROWS`, p at most :data:`MAX_PRIMAL_PARAMS`), and
    ``"last_layer"`` when neither is, and for sparse inputs (the dual form
    would keep them densified and the primal one densifies blocks of rows;
    the last layer needs only the hidden activations).

    Raises
    ------
    MemoryError
        When an explicitly requested ``"dual"`` or ``"primal"`` form does not
        fit in the available memory.
    """
    from . import _memory

    K = network.n_outputs
    if requested == "last_layer" or (requested == "auto" and sparse_input):
        return "last_layer"
    if requested != "auto":
        # an explicit exact form passes the step's memory check too
        _memory.choose_linear_solver(requested, n_rows, network.n_features,
                                     network.n_hidden, K, network.fit_intercept,
                                     available_bytes=available_bytes)
        return requested
    allowed = []
    if n_rows * K <= MAX_DUAL_ROWS and not sparse_input:
        allowed.append("dual")
    if network.n_params <= MAX_PRIMAL_PARAMS:
        allowed.append("primal")
    if not allowed:
        return "last_layer"
    costs = network.step_costs(n_rows)
    form = min(allowed, key=costs.__getitem__)
    try:
        return _memory.choose_linear_solver(form, n_rows, network.n_features,
                                            network.n_hidden, K,
                                            network.fit_intercept,
                                            available_bytes=available_bytes)
    except MemoryError:
        return "last_layer"


def log_evidence(problem, theta, posterior, noise="dof"):
    """The Laplace evidence ``log Z`` at θ* and, for the squared error, σ̂².

    With the prior the Gaussian of precision ``α ḡ''(θ*)`` whose energy at
    θ* is ``α Σ ḡ(θ*)`` (the same value and curvature as the penalty there),

        ``log Z = log p(y | θ*) − α Σ ḡ(θ*) − ½ log det(B D)``,

    ``α = N K τ / σ²`` for the squared error (``log p(y | θ*) =
    −(N K / 2) log(2π σ²) − Σ_k w_k ‖Φ_k − y_k‖² / (2σ²)``) and ``α = N τ``
    for the log loss (``log p(y | θ*) = −N R(θ*)``).

    The noise of the squared error is the residual variance corrected by the
    effective number of parameters γ of the linearized model,

        ``σ̂² = Σ_k w_k ‖Φ_k − y_k‖² / (N K − γ)``,

    (``noise="dof"``; MacKay's fixed point of the evidence in σ², which a
    plain mean of the squared training residuals underestimates by the γ
    degrees of freedom the fit spent on them), or the maximizer of ``log Z``
    over σ² at the fitted τ, ``σ̂² = 2 (R + τ Σ ḡ)(θ*)`` (``noise="evidence"``;
    the two agree when τ maximizes the evidence of a Gaussian prior).

    Returns
    -------
    log_evidence : float
        In the units the network was trained in.
    noise_variance : float or None
        σ̂² (None for the log loss).
    """
    batch = problem.batch()
    evaluation = problem.evaluate(_as64(theta), batch, with_deriv=False)
    N = float(np.sum(problem.sample_weight))
    penalty = float(problem.regularizer.value_sum(_as64(theta)))
    tau = problem.tau
    half_logdet = 0.5 * posterior["logdet"]
    if not hasattr(problem.loss, "constant_risk") or type(
            problem.loss).__name__ != "SquaredError":
        return -N * evaluation.risk - N * tau * penalty - half_logdet, None
    K = problem.network.n_outputs
    entries = N * K
    rss = 2.0 * entries * evaluation.risk  # Σ w ‖r‖²
    if noise == "dof":
        sigma2 = rss / max(entries - posterior["dof"], 1.0)
    else:
        sigma2 = 2.0 * (evaluation.risk + tau * penalty)
    sigma2 = max(sigma2, np.finfo(float).tiny)
    log_z = (-0.5 * entries * np.log(2.0 * np.pi * sigma2) - rss / (2.0 * sigma2)
             - entries * tau * penalty / sigma2 - half_logdet)
    return float(log_z), float(sigma2)


__all__ = ["STRUCTURES", "choose_structure", "fit_posterior", "jacobian_rows",
           "log_evidence", "output_variance"]
