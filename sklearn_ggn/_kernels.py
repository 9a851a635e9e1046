"""numba kernels for the structured Gauss-Newton algebra.

Notation (one batch of b samples, K outputs, n hidden units):

* ``Xa`` (b × d̂): inputs, with a trailing column of ones when the hidden
  layer has an intercept (the hidden bias is the weight of that column).
* ``W`` (b × K × n): ``W[k, c, i] = ρ'(a_ki) (V A_k)[i, c]`` — the hidden-layer
  sensitivities of the curvature-factored outputs ``J̃ = Aᵀ J``.
* ``D_U`` (n × d̂): the inverse regularizer curvature on the hidden weights.

The hidden-weight part of the Gram ``G̃ = J̃ D J̃ᵀ`` is

    G̃_U[(k,c),(l,c')] = κ² Σ_i W[k,c,i] W[l,c',i] M_i[k,l],
    M_i[k,l] = Σ_j Xa[k,j] D_U[i,j] Xa[l,j],

and ``M`` does not depend on the output index, so it is built once (one
GEMM per row block) instead of K² times as an explicit Jacobian would.
"""

import math

import numpy as np

from ._config import NUMBA_OPTIONS, NUMBA_OPTIONS_REDUCTION, njit


def all_finite(x):
    """Whether every entry of an array is finite: ``x·x`` (one BLAS pass) is
    finite exactly when no entry is inf or NaN, unless it overflows, when
    the entries are checked one by one. (The scalar is tested by
    ``math.isfinite``: NumPy's ufunc on a scalar cost more than the dot
    itself on a step's θ.)"""
    flat = x.reshape(-1)
    return math.isfinite(flat @ flat) or bool(np.isfinite(flat).all())


def normalized_weights(w):
    """``(s, Σ w)``: a batch's weights normalized to ``s = w / Σ w`` (in w's
    dtype; a copy of ``w`` when the total is not positive) and their total,
    summed in order in float64 (the last of the running sums, which NumPy
    accumulates one after the other)."""
    w = np.ascontiguousarray(w)
    total = float(np.add.accumulate(w, dtype=np.float64)[-1]) if w.size else 0.0
    if not total > 0:
        return w.copy(), total
    return np.divide(w, w.dtype.type(total)), total


@njit(**{**NUMBA_OPTIONS, "inline": "always"})
def _n_pairs(b, k0, k1):
    """Number of pairs (k, l ≥ k) of b rows with k0 ≤ k < k1."""
    return (k1 - k0) * b - ((k0 + k1 - 1) * (k1 - k0)) // 2


@njit(**NUMBA_OPTIONS)
def pair_products_kernel(Xa, k0, k1):
    """Rows ``Xa[k] ∘ Xa[l]`` for ``k0 ≤ k < k1`` and ``l ≥ k``, stacked.

    Multiplied by ``D_Uᵀ`` (one GEMM, done by the caller with NumPy so that
    every BLAS call of a step runs on the same OpenBLAS thread pool) they
    give ``M_i[k, l]`` for all hidden units at once.
    """
    b, d_aug = Xa.shape
    pair_products = np.empty((_n_pairs(b, k0, k1), d_aug), dtype=Xa.dtype)
    row = 0
    for k in range(k0, k1):
        for l in range(k, b):
            for j in range(d_aug):
                pair_products[row, j] = Xa[k, j] * Xa[l, j]
            row += 1
    return pair_products


@njit(**NUMBA_OPTIONS)
def sparse_pair_products_kernel(indptr, indices, data, D_U, k0, k1, b):
    """``M_i[k, l] = Σ_j x_kj D_U[i, j] x_lj`` for CSR rows ``k0 ≤ k < k1``,
    ``l ≥ k``, straight from the CSR arrays (sparse input).

    The rows' column indices must be sorted without duplicates (canonical
    CSR): each pair walks the two index lists once and, for every shared
    column j, adds ``x_kj x_lj D_U[:, j]`` (read in place: a transposed copy
    of D_U would cost more than all the pairs of a sparse batch). The cost is the pairs' shared non-zeros times n
    (plus the list walks), instead of d̂ · n per pair for dense rows; the
    pairs are stacked in the order of :func:`pair_products_kernel`, so the
    result is what ``pair_products_kernel(Xa, k0, k1) @ D_U.T`` gives for the
    densified rows.
    """
    n = D_U.shape[0]
    M = np.zeros((_n_pairs(b, k0, k1), n), dtype=D_U.dtype)
    row = 0
    for k in range(k0, k1):
        for l in range(k, b):
            p, p_end = indptr[k], indptr[k + 1]
            q, q_end = indptr[l], indptr[l + 1]
            while p < p_end and q < q_end:
                jp = indices[p]
                jq = indices[q]
                if jp == jq:
                    w = data[p] * data[q]
                    for i in range(n):
                        M[row, i] += w * D_U[i, jp]
                    p += 1
                    q += 1
                elif jp < jq:
                    p += 1
                else:
                    q += 1
            row += 1
    return M


@njit(**NUMBA_OPTIONS)
def sparse_inner_products_lower_kernel(indptr, indices, data, work, out):
    """The lower triangle of ``X̂ X̂ᵀ`` (b × b, into ``out``) for CSR rows with
    no duplicate column in a row: row k is scattered into the dense
    ``work`` (d̂ zeros, zeros again on return) and every row l ≤ k gathers
    from it, the stored entries of the pairs once each (b² / 2 · nnz per
    row), where a sparse product would build the b × b result as a sparse
    matrix first. The upper triangle is not written."""
    b = out.shape[0]
    for k in range(b):
        for p in range(indptr[k], indptr[k + 1]):
            work[indices[p]] = data[p]
        for l in range(k + 1):
            total = 0.0
            for q in range(indptr[l], indptr[l + 1]):
                total += data[q] * work[indices[q]]
            out[k, l] = total
        for p in range(indptr[k], indptr[k + 1]):
            work[indices[p]] = 0.0


@njit(**NUMBA_OPTIONS)
def sparse_rows_times_kernel(indptr, indices, data, WT, out):
    """``out[k, :] = Σ_j x_kj WT[j, :]`` (``X̂ W``, b × n) for CSR rows and a
    dense ``WT`` (d̂ × n): the first layer's pre-activations and ``X̂ δUᵀ``
    with ``WT = Uᵀ``. Reads only the stored columns of each row, where SciPy
    would first copy the operand into the layout its product needs. For a
    C-order ``WT`` (a transposed copy, worth its n·d̂ when the batch stores
    at least d̂ entries) each entry reads a contiguous row, vectorized over
    n; for the view ``Wᵀ`` of a C-order W it reads a column of W at a
    stride of d̂ (numba compiles the two layouts separately)."""
    b = out.shape[0]
    n = WT.shape[1]
    for k in range(b):
        for i in range(n):
            out[k, i] = 0.0
        for p in range(indptr[k], indptr[k + 1]):
            j = indices[p]
            x = data[p]
            for i in range(n):
                out[k, i] += x * WT[j, i]


@njit(**NUMBA_OPTIONS)
def sparse_transposed_rows_times_kernel(indptr, indices, data, H, out):
    """``out[i, j] = Σ_k H[k, i] x_kj`` (``(X̂ᵀ H)ᵀ``, n × d̂) for CSR rows: the
    hidden-weight block of ``J̃ᵀ y``. ``out`` is overwritten; only the
    columns stored in some row get non-zero values."""
    b, n = H.shape
    out[:, :] = 0.0
    for k in range(b):
        for p in range(indptr[k], indptr[k + 1]):
            j = indices[p]
            x = data[p]
            for i in range(n):
                out[i, j] += H[k, i] * x


@njit(**NUMBA_OPTIONS_REDUCTION)
def hidden_gram_combine_kernel(W, M, k0, k1, kappa2, gram):
    """Add ``κ² Σ_i W[k,c,i] W[l,c',i] M[(k,l), i]`` for rows ``k0 ≤ k < k1``.

    Parameters
    ----------
    W : ndarray of shape (b, K, n)
    M : ndarray of shape (n_pairs, n)
        ``M_i[k, l]`` for the pairs of :func:`pair_products_kernel`.
    k0, k1 : int
        The block of rows.
    kappa2 : float
        κ².
    gram : ndarray of shape (b*K, b*K)
        Accumulated in place; both triangles are written.
    """
    b, K, n = W.shape
    weighted = np.empty((K, n), dtype=W.dtype)
    zero = W.dtype.type(0)
    row = 0
    for k in range(k0, k1):
        for l in range(k, b):
            for c in range(K):
                for i in range(n):
                    weighted[c, i] = W[k, c, i] * M[row, i]
            for c in range(K):
                for c2 in range(K):
                    acc = zero  # in W's dtype: float32 Grams run 2× wider SIMD
                    for i in range(n):
                        acc += weighted[c, i] * W[l, c2, i]
                    acc *= kappa2
                    gram[k * K + c, l * K + c2] += acc
                    if l != k:
                        gram[l * K + c2, k * K + c] += acc
            row += 1


@njit(**NUMBA_OPTIONS)
def scaled_hidden_jacobian_kernel(Xa, W, i0, i1, sqrt_D_U, kappa, out):
    """Columns of ``Z = J̃ D^{1/2}`` (b rows) for the hidden units
    ``i0 ≤ i < i1``, K = 1: ``out[k, (i − i0)·d̂ + j] = κ W[k,0,i] x̂_kj
    sqrt(D_U[i, j])``.

    For a single output the Jacobian has no repeated blocks, and the Gram
    ``G̃ = Z Zᵀ`` is a BLAS rank-b update (the floor for this Gram); the caller
    appends the output-weight columns.
    """
    b, d_aug = Xa.shape
    kappa_ = Xa.dtype.type(kappa)  # float32 data stay float32 (2× SIMD width)
    for k in range(b):
        for i in range(i0, i1):
            w = kappa_ * W[k, 0, i]
            base = (i - i0) * d_aug
            for j in range(d_aug):
                out[k, base + j] = w * Xa[k, j] * sqrt_D_U[i, j]


@njit(**NUMBA_OPTIONS_REDUCTION)
def output_gram_kernel(factor, S, gram):
    """Add ``Σ_c'' A_k[c'',c] A_l[c'',c'] S[c'',k,l]`` to ``gram`` for a factor
    of shape (b, K, R) (R columns per row: K for the exact factor).

    ``S[c'', k, l] = κ² Σ_i ρ_ki ρ_li D_V[i,c''] + D_bo[c'']`` collects the
    output-weight and output-bias parts of the Gram.
    """
    b, K, R = factor.shape
    for k in range(b):
        for l in range(k, b):
            for c in range(R):
                for c2 in range(R):
                    acc = 0.0
                    for c3 in range(K):
                        acc += factor[k, c3, c] * factor[l, c3, c2] * S[c3, k, l]
                    gram[k * R + c, l * R + c2] += acc
                    if l != k:
                        gram[l * R + c2, k * R + c] += acc


@njit(**NUMBA_OPTIONS)
def cholesky_solve_kernel(L, rhs, x):
    """Solve ``L Lᵀ x = rhs`` by forward and back substitution, into ``x``
    (of L's dtype).

    Both sweeps read L row by row (the back substitution in its
    column-oriented form: an axpy with row i of L), so no transposed copy of
    L is made.
    """
    m = L.shape[0]
    for i in range(m):
        acc = rhs[i]
        for j in range(i):
            acc -= L[i, j] * x[j]
        x[i] = acc / L[i, i]
    for i in range(m - 1, -1, -1):
        x[i] /= L[i, i]
        xi = x[i]
        for j in range(i):
            x[j] -= L[i, j] * xi


# ---------------------------------------------------------------- J̃ products
# J̃ v and J̃ᵀ y reduce to two BLAS products with X (done by the caller) and
# these O(b·K·n) contractions with the sensitivities W.


@njit(**{**NUMBA_OPTIONS, "inline": "always"})
def _dot(a, b):
    """``Σ_i a[i] b[i]`` accumulated in float64, in index order."""
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    return acc


@njit(**NUMBA_OPTIONS)
def contract_kernel(W, x, scale, transpose, out):
    """The contractions of the sensitivities ``W`` (b × K × n) in J̃ products:
    ``out[k, i] = scale · Σ_c W[k, c, i] x[k, c]`` (``transpose``: the
    hidden part of J̃ᵀ y, x of shape (b, K)), else ``out[k, c] = scale ·
    Σ_i W[k, c, i] x[k, i]`` summed in float64 (the hidden part of J̃ v, x
    the hidden pre-activations' change, (b, n))."""
    b, K, n = W.shape
    if transpose:
        for k in range(b):
            for i in range(n):
                out[k, i] = 0.0
            for c in range(K):
                w = scale * x[k, c]
                for i in range(n):
                    out[k, i] += w * W[k, c, i]
        return
    for k in range(b):
        for c in range(K):
            out[k, c] = scale * _dot(W[k, c], x[k])


# ------------------------------------------------ structured curvature factor
# Every loss's factor is A_k = diag(a_k) − u_k w_kᵀ (see _losses.FactorParts).


@njit(**NUMBA_OPTIONS)
def structured_sensitivities_kernel(VT, a, u, w, rho_d, out):
    """``out[k, c, i] = ρ'(a_ki) (V A_k)[i, c]`` for ``A_k = diag(a_k) − u_k w_kᵀ``:
    ``(V A_k)[i, c] = V[i, c] a_kc − (V u_k)_i w_kc``, O(K n) per row instead
    of the dense factor's O(K² n)."""
    b, K = a.shape
    n = VT.shape[1]
    z = np.empty(n, dtype=out.dtype)
    for k in range(b):
        for i in range(n):
            z[i] = 0.0
        for e in range(K):
            ue = u[k, e]
            if ue != 0.0:
                for i in range(n):
                    z[i] += VT[e, i] * ue
        for c in range(K):
            ac = a[k, c]
            wc = w[k, c]
            for i in range(n):
                out[k, c, i] = rho_d[k, i] * (VT[c, i] * ac - z[i] * wc)


@njit(**NUMBA_OPTIONS)
def pair_hidden_weights_kernel(rho_d, k0, k1, kappa2, M):
    """``M[(k, l), i] *= κ² ρ'_ki ρ'_li`` in place, for the pairs of
    :func:`pair_products_kernel` (``M_i[k, l]`` becomes the weight of
    ``V[i, c] V[i, c']`` in the plain hidden-weight Gram block of (k, l))."""
    b, n = rho_d.shape
    row = 0
    for k in range(k0, k1):
        for l in range(k, b):
            for i in range(n):
                M[row, i] *= kappa2 * rho_d[k, i] * rho_d[l, i]
            row += 1


@njit(**NUMBA_OPTIONS_REDUCTION)
def factor_transform_kernel(plain, S, a, u, w, k0, k1, gram):
    """Write the blocks ``G̃_kl = A_kᵀ (P_kl + diag S[:, k, l]) A_l`` of the
    Gram for rows ``k0 ≤ k < k1``, ``l ≥ k`` (both triangles).

    ``plain[(k, l)]`` (K·K, row-major) is the hidden-weight block of the Gram
    without the factor, ``P_kl = Vᵀ diag(t_kl) V`` (symmetric); ``S[(k, l)]``
    (K) the output weights' and bias's part, diagonal in the outputs. With
    ``A = diag(a) − u wᵀ``:

        ``G̃[c, c'] = a_kc X[c, c'] a_lc' − a_kc (X u_l)_c w_lc'
        − w_kc (Xᵀ u_k)_c' a_lc' + w_kc (u_kᵀ X u_l) w_lc'``,

    O(K²) per pair.
    """
    b, K = a.shape
    X = np.empty((K, K), dtype=gram.dtype)
    x1 = np.empty(K, dtype=gram.dtype)
    x2 = np.empty(K, dtype=gram.dtype)
    zero = gram.dtype.type(0)
    row = 0
    for k in range(k0, k1):
        for l in range(k, b):
            for c in range(K):
                for c2 in range(K):
                    X[c, c2] = plain[row, c * K + c2]
                X[c, c] += S[row, c]
            gamma = zero
            for c in range(K):
                acc1 = zero
                acc2 = zero
                for c2 in range(K):
                    acc1 += X[c, c2] * u[l, c2]
                    acc2 += X[c2, c] * u[k, c2]
                x1[c] = acc1
                x2[c] = acc2
                gamma += u[k, c] * acc1
            for c in range(K):
                akc = a[k, c]
                wkc = w[k, c]
                t1 = akc * x1[c]
                t2 = wkc * gamma
                for c2 in range(K):
                    val = (akc * X[c, c2] - wkc * x2[c2]) * a[l, c2] \
                        + (t2 - t1) * w[l, c2]
                    gram[k * K + c, l * K + c2] = val
                    if l != k:
                        gram[l * K + c2, k * K + c] = val
            row += 1


@njit(**NUMBA_OPTIONS)
def outer_products_kernel(V):
    """``VV[i, c·K + c'] = V[i, c] V[i, c']`` (n × K²): the weights of the
    hidden-weight Gram block ``Vᵀ diag(t) V`` as one GEMM ``t · VV``."""
    n, K = V.shape
    VV = np.empty((n, K * K), dtype=V.dtype)
    for i in range(n):
        for c in range(K):
            for c2 in range(K):
                VV[i, c * K + c2] = V[i, c] * V[i, c2]
    return VV


# ------------------------------------------------ per-unit H (hessian="per_unit")


@njit(**NUMBA_OPTIONS_REDUCTION)
def per_unit_kernel(D, n, d_aug, K, unit_D, g):
    """Give every parameter of hidden unit i (its d̂ input weights and K
    output weights; ``D`` laid out as θ) the unit's mean curvature: in place,
    ``D ← 1/h_i`` with ``h_i`` the mean of ``1/D`` over them, and
    ``unit_D[i] = 1/h_i``. The output biases keep theirs. Returns ``gᵀ D g``
    under the new D, summed in float64 (the square of the step size's
    η = ‖∇g‖*_θ under the per-unit H; 0 for an empty ``g``)."""
    p_u = n * d_aug
    for i in range(n):
        h = 0.0
        for j in range(d_aug):
            h += 1.0 / D[i * d_aug + j]
        for c in range(K):
            h += 1.0 / D[p_u + i * K + c]
        value = D.dtype.type(1.0 / (h / (d_aug + K)))
        unit_D[i] = value
        for j in range(d_aug):
            D[i * d_aug + j] = value
        for c in range(K):
            D[p_u + i * K + c] = value
    acc = 0.0
    for m in range(g.size):
        acc += np.float64(g[m]) * g[m] * D[m]
    return acc


@njit(**NUMBA_OPTIONS)
def gershgorin_kernel(gram, sums):
    """Gershgorin's bound on λ_max of a symmetric matrix: its largest
    absolute column sum, accumulated a row at a time (a SIMD pass per row)
    in ``sums`` (float64, one per column: the caller's work array)."""
    m = gram.shape[1]
    for col in range(m):
        sums[col] = 0.0
    for row in range(gram.shape[0]):
        for col in range(m):
            sums[col] += abs(np.float64(gram[row, col]))
    largest = 0.0
    for col in range(m):
        # (max(largest, sums[col]) as numba computes it, without compiling
        # the builtin's overload)
        if sums[col] > largest:
            largest = sums[col]
    return largest


@njit(**NUMBA_OPTIONS)
def unit_gram_combine_kernel(WW, XX, FF, S, FDF, kappa2, R, gram):
    """The dual Gram under a per-unit H from its products, into ``gram``:

        ``G = κ² (W diag(uD) Wᵀ) ∘ (X̂X̂ᵀ ⊗ 1) + κ² (FᵀF) ∘ (ρ diag(uD) ρᵀ ⊗ 1)
        + Fᵀ diag(D_bo) F``

    from the lower triangles of ``WW = W diag(uD) Wᵀ`` and ``FF = FᵀF``
    (bR × bR), ``XX = X̂X̂ᵀ`` and ``S = ρ diag(uD) ρᵀ`` (b × b) and
    ``FDF = Fᵀ diag(D_bo) F`` (bR × bR, empty without output bias); R rows
    per sample. Both triangles of ``gram`` are written."""
    m = gram.shape[0]
    bias = FDF.shape[0] > 0
    for row in range(m):
        k = row // R
        if R == 1:
            # a row per sample (l = col): the loop without an integer
            # division per entry runs on SIMD (128 rows: 14 -> 11 us in
            # float64; 183 rows in float32: 28 -> 14 us)
            for col in range(row + 1):
                value = kappa2 * (WW[row, col] * XX[k, col]
                                  + FF[row, col] * S[k, col])
                if bias:
                    value += FDF[row, col]
                gram[row, col] = value
                gram[col, row] = value
            continue
        for col in range(row + 1):
            l = col // R
            value = kappa2 * (WW[row, col] * XX[k, l] + FF[row, col] * S[k, l])
            if bias:
                value += FDF[row, col]
            gram[row, col] = value
            gram[col, row] = value


@njit(**NUMBA_OPTIONS)
def apply_rank_factor_kernel(F, z, transpose, out):
    """A rank-R factor F (b × K × R) applied row by row: ``out[k] += F_kᵀ
    z_k`` (z of shape (b, K), out (b, R)) when ``transpose``, else
    ``out[k] = F_k z_k`` (z (b, R), out (b, K))."""
    b, K, R = F.shape
    for k in range(b):
        if transpose:
            for r in range(R):
                acc = 0.0
                for c in range(K):
                    acc += F[k, c, r] * z[k, c]
                out[k, r] += acc
        else:
            for c in range(K):
                acc = 0.0
                for r in range(R):
                    acc += F[k, c, r] * z[k, r]
                out[k, c] = acc


@njit(**NUMBA_OPTIONS)
def apply_parts_kernel(a, u, w, z, transpose):
    """``A_kᵀ z_k`` (``transpose``) or ``A_k z_k`` for every row of z, with
    ``A_k = diag(a_k) − u_k w_kᵀ``: O(K) per row."""
    b, K = z.shape
    out = np.empty((b, K), dtype=z.dtype)
    for k in range(b):
        dot = z.dtype.type(0)
        for c in range(K):
            dot += (u[k, c] if transpose else w[k, c]) * z[k, c]
        for c in range(K):
            out[k, c] = a[k, c] * z[k, c] - (w[k, c] if transpose else u[k, c]) * dot
    return out
