"""The scaled two-layer network and its Jacobian structure.

    a(x) = U x + b_h,      Φ(x) = κ Vᵀ ρ(a(x)) + b_o

The parameter vector θ is laid out as ``[U_aug.ravel(), V.ravel(), b_o]``
where ``U_aug = [U | b_h]`` (n × d̂, d̂ = d + 1 with an intercept) and the
inputs are augmented with a column of ones to match. All Jacobian products
and Grams are computed from ``ρ(A)``, ``ρ'(A)``, ``X``, ``U`` and ``V``; the
explicit Jacobian is never formed when K > 1.

Sparse inputs (CSR or CSC; kept as canonical CSR with the ones column
appended as one more stored entry per row) enter only through ``X̂ Ûᵀ``,
``X̂ δUᵀ``, ``X̂ᵀ h`` (numba kernels over the CSR arrays: SciPy's products
would copy the n × d̂ dense operand into another layout first) and the Gram's
``M_i[k, l] = Σ_j x_kj D_U[i, j] x_lj``, computed from the CSR arrays by
:func:`~sklearn_ggn._kernels.sparse_pair_products_kernel`; X is never
densified except in the primal form's row chunks (that form is p × p with
p ≥ n·d̂, so only small inputs can afford it).
"""

import math
import threading
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk, ssyrk

from ._activations import ACTIVATIONS
from ._kernels import (
    apply_parts_kernel,
    apply_rank_factor_kernel,
    contract_kernel,
    factor_transform_kernel,
    hidden_gram_combine_kernel,
    outer_products_kernel,
    output_gram_kernel,
    pair_hidden_weights_kernel,
    pair_products_kernel,
    per_unit_kernel,
    scaled_hidden_jacobian_kernel,
    sparse_inner_products_lower_kernel,
    sparse_pair_products_kernel,
    sparse_rows_times_kernel,
    sparse_transposed_rows_times_kernel,
    structured_sensitivities_kernel,
    unit_gram_combine_kernel,
)
from ._losses import FactorParts, RankFactor

# Memory bound (bytes) for the temporaries of one Gram / GN-matrix block.
_BLOCK_BYTES = 64 * 2**20
# Largest work array (bytes) a network keeps from one step to the next (see
# TwoLayerNetwork.work_array).
_REUSED_BYTES = 2**20


def pair_block_rows(b, width, itemsize):
    """Rows k per block of a Gram formed over the row pairs (k, l ≥ k):
    each row holds up to b pairs of ``width`` values (M's n per unit and
    the pair products' d̂, plus the K × K plain blocks of the exact
    factor), within :data:`_BLOCK_BYTES`. The one block plan of the Gram
    and of its memory estimate (``_memory``)."""
    return max(1, int(_BLOCK_BYTES // max(1, b * width * itemsize)))


def pair_block_width(n, d_aug, K, sparse, exact_factor):
    """The values per pair of :func:`pair_block_rows`: M (n, from the CSR
    arrays when sparse), else the dense pair products and M (max(n, d̂)),
    plus K² for the exact factor's plain blocks."""
    return (n if sparse else max(n, d_aug)) + (K * K if exact_factor else 0)


def single_output_units(b, d_aug, itemsize):
    """Hidden units per block of ``Z = J̃ D^{1/2}`` for one output (b ×
    units·d̂ within half a block's bytes: at most 32 MB, which the
    allocator reuses from one Gram to the next instead of asking the system
    for fresh pages each time)."""
    return max(1, int(_BLOCK_BYTES // 2 // max(1, b * d_aug * itemsize)))


@dataclass
class ForwardCache:
    """What a forward pass leaves for the step: ρ(A), ρ'(A) and outputs."""

    Xa: np.ndarray  # (b, d_aug), or a canonical CSR matrix for sparse inputs
    rho: np.ndarray  # (b, n)
    rho_d: np.ndarray  # (b, n) or None
    outputs: np.ndarray  # (b, K)


class TwoLayerNetwork:
    """Shapes, scaling and activation of the network; θ is passed explicitly.

    Parameters
    ----------
    n_features : int
        Input dimension d (without the intercept column).
    n_hidden : int
        Number of hidden units n.
    n_outputs : int
        Number of outputs K.
    kappa : float
        Output scaling κ.
    activation : str
        Name of ρ.
    fit_intercept : bool
        Whether b_h and b_o exist.
    """

    def __init__(self, n_features, n_hidden, n_outputs, kappa, activation,
                 fit_intercept):
        self.n_features = n_features
        self.n_hidden = n_hidden
        self.n_outputs = n_outputs
        self.kappa = float(kappa)
        self.activation = activation
        self.fit_intercept = fit_intercept
        self.d_aug = n_features + int(fit_intercept)
        self.n_hidden_params = n_hidden * self.d_aug
        self.n_params = (
            self.n_hidden_params + n_hidden * n_outputs + n_outputs * fit_intercept
        )
        self._work = {}

    def work_array(self, name, m, dtype):
        """A square ``m × m`` work array of ``dtype`` kept for the next step,
        or None when it exceeds :data:`_REUSED_BYTES`.

        The products of the per-unit Gram are b × b temporaries of every
        step; allocated afresh, the C allocator handed their pages back to
        the system and faulted them in again at each step (28 page faults,
        30 us of a 128-row step). One array per name, thread and shape;
        its content is whatever the last user left."""
        dtype = np.dtype(dtype)
        if m * m * dtype.itemsize > _REUSED_BYTES:
            return None
        arrays = self.__dict__.setdefault("_work", {})
        key = (name, threading.get_ident())
        work = arrays.get(key)
        if work is None or work.shape[0] != m or work.dtype != dtype:
            work = arrays[key] = np.empty((m, m), dtype=dtype)
        return work

    def __getstate__(self):
        # (work arrays are a cache of the steps, not part of the network)
        return {**self.__dict__, "_work": {}}

    # ------------------------------------------------------------ layout
    def unpack(self, theta):
        """Views ``(U_aug, V, b_o)`` into θ (``b_o`` is None without intercept)."""
        n, d_aug, K = self.n_hidden, self.d_aug, self.n_outputs
        p_u = self.n_hidden_params
        U_aug = theta[:p_u].reshape(n, d_aug)
        V = theta[p_u:p_u + n * K].reshape(n, K)
        b_o = theta[p_u + n * K:] if self.fit_intercept else None
        return U_aug, V, b_o

    def pack(self, U, V, b_h=None, b_o=None, dtype=np.float64):
        """Build θ from the public weight arrays."""
        parts = [np.column_stack([U, b_h]) if self.fit_intercept else U, V]
        if self.fit_intercept:
            parts.append(b_o)
        return np.concatenate([np.asarray(p, dtype=dtype).ravel() for p in parts])

    def weight_shapes(self):
        """The public weights, layer by layer: their names (the fitted
        estimators' attributes without the trailing ``_``) and shapes.

        ``hidden_weights`` U (n × d), ``hidden_intercept`` b_h (n),
        ``output_weights`` V (n × K), ``output_intercept`` b_o (K); the
        intercepts only with ``fit_intercept``.
        """
        n, d, K = self.n_hidden, self.n_features, self.n_outputs
        if not self.fit_intercept:
            return {"hidden_weights": (n, d), "output_weights": (n, K)}
        return {"hidden_weights": (n, d), "hidden_intercept": (n,),
                "output_weights": (n, K), "output_intercept": (K,)}

    def weights(self, theta, dtype=None):
        """The public weights of θ (copies, by the names of
        :meth:`weight_shapes`), in ``dtype`` (θ's by default)."""
        U_aug, V, b_o = self.unpack(theta)
        weights = {"hidden_weights": U_aug[:, :self.n_features],
                   "output_weights": V}
        if self.fit_intercept:
            weights.update(hidden_intercept=U_aug[:, -1], output_intercept=b_o)
        dtype = theta.dtype if dtype is None else dtype
        return {name: np.array(weights[name], dtype=dtype)
                for name in self.weight_shapes()}

    def theta_of(self, weights, dtype=np.float64):
        """θ from the public weights (a mapping by the names of
        :meth:`weight_shapes`; intercepts are read only with
        ``fit_intercept``)."""
        return self.pack(weights["hidden_weights"], weights["output_weights"],
                         weights.get("hidden_intercept"),
                         weights.get("output_intercept"), dtype=dtype)

    def initial_theta(self, rng, dtype=np.float64):
        """θ0 drawn from ``rng``: ``U_ij ~ N(0, 1/d)`` (pre-activations of
        order one for standardized inputs), then ``V_ic ~ N(0, 1)``; zero
        intercepts."""
        n, d, K = self.n_hidden, self.n_features, self.n_outputs
        U = rng.standard_normal((n, d)) / np.sqrt(d)
        V = rng.standard_normal((n, K))
        return self.pack(U, V, np.zeros(n), np.zeros(K), dtype=dtype)

    def augment(self, X):
        """Append the intercept column of ones to X (C-contiguous, X's dtype).

        A sparse X gives a canonical CSR matrix (sorted indices, no
        duplicates; X itself is not modified) whose ones column is stored
        as the last entry of every row.
        """
        if sp.issparse(X):
            return _augment_sparse(X, self.fit_intercept)
        if not self.fit_intercept:
            return np.ascontiguousarray(X)
        Xa = np.empty((X.shape[0], self.d_aug), dtype=X.dtype)
        Xa[:, :-1] = X
        Xa[:, -1] = 1
        return Xa

    def augment_mapped(self, X, input_map):
        """``(Z, Ẑ)``: X through the fitted ``input_map`` (``Z``, of width
        ``n_features``) and its augmented copy ``Ẑ``, the map written
        straight into the augmented array's first columns (``Z`` is a view
        of them: one array of Z's size instead of two). ``Ẑ`` is None where
        there is nothing to fuse (the identity, sparse X, no intercept)."""
        if (not input_map._writes_out or sp.issparse(X)
                or not self.fit_intercept):
            return input_map._map(X), None
        Xa = np.empty((X.shape[0], self.d_aug), dtype=X.dtype)
        input_map._map(X, out=Xa[:, :-1])
        Xa[:, -1] = 1
        return Xa[:, :-1], Xa

    # ------------------------------------------------------------ forward
    def pre_activations(self, theta, Xa):
        """Hidden pre-activations ``A = X̂ Û ᵀ`` (b × n) on augmented inputs."""
        return _times_transposed(Xa, self.unpack(theta)[0])

    def forward(self, theta, Xa, with_deriv=True):
        """Forward pass on augmented inputs; returns a :class:`ForwardCache`."""
        U_aug, V, b_o = self.unpack(theta)
        pre = _times_transposed(Xa, U_aug)
        rho = np.empty_like(pre)
        rho_d = np.empty_like(pre) if with_deriv else np.empty(0, pre.dtype)
        ACTIVATIONS[self.activation](pre.reshape(-1), rho.reshape(-1),
                                     rho_d.reshape(-1), with_deriv)
        outputs = self._output_part(rho, V, b_o)
        return ForwardCache(Xa, rho, rho_d if with_deriv else None, outputs)

    # ------------------------------------------------------------ Jacobian
    def sensitivities(self, theta, cache, factor):
        """``W[k, c, i] = ρ'(a_ki) (V A_k)[i, c]`` of shape (b, K, n).

        ``factor`` is the :class:`FactorParts` of ``A`` (O(K n) per row), or
        a dense ``A`` (b, K, K), which is a factor of rank K
        (:meth:`rank_sensitivities`); so is the parts' one-output ``A``
        (:func:`_structured`).
        """
        if not _structured(factor):
            return self.rank_sensitivities(theta, cache, _dense(factor))
        _, V, _ = self.unpack(theta)
        b, K = factor.a.shape
        W = np.empty((b, K, self.n_hidden), dtype=cache.rho.dtype)
        structured_sensitivities_kernel(np.ascontiguousarray(V.T), factor.a,
                                        factor.u, factor.w, cache.rho_d, W)
        return W

    def jvp(self, theta, cache, W, factor, direction):
        """``J̃ v`` (b × R) for a parameter-space direction ``v``, from the
        sensitivities ``W`` (b × R × n): the hidden part
        ``κ Σ_i W[k, r, i] (X̂ δUᵀ)_ki`` and the output part
        ``F_kᵀ (κ ρ δV + δb_o)_k`` (``A_kᵀ`` from its parts for a
        :class:`FactorParts` of several outputs)."""
        dU, dV, db_o = self.unpack(direction)
        dpre = _times_transposed(cache.Xa, dU)  # (b, n)
        b, R = W.shape[0], W.shape[1]
        out = np.empty((b, R), dtype=dpre.dtype)
        contract_kernel(W, dpre, self.kappa, False, out)
        # κ ρ δV + δb_o lives in raw output space: map through the factor
        raw = self._output_part(cache.rho, dV, db_o)
        if _structured(factor):
            out += _apply_factor(factor, raw, True)
        else:
            apply_rank_factor_kernel(_dense(factor), raw, True, out)
        return out

    def _output_part(self, rho, V, b_o):
        """``κ ρ V + b_o`` (b × K): the outputs of the hidden activations
        ``ρ``, or their change from a direction's output weights and bias."""
        # (ndarray.dot of operands of one dtype: the same BLAS product as
        # ``@``, 0.3-0.4 us less of NumPy's dispatch on a step's operands)
        out = rho.dot(_as(V, rho.dtype))
        out *= self.kappa
        if b_o is not None:
            out += b_o
        return out

    def vjp(self, theta, cache, W, factor, y):
        """``J̃ᵀ y`` (flat, length p) for ``y`` of shape (b, R), from the
        sensitivities ``W``: the hidden layer's error
        ``κ Σ_r W[k, r, i] y_kr`` and the outputs' ``F_k y_k`` (``A_k y_k``
        from its parts for a :class:`FactorParts` of several outputs)."""
        dtype = cache.rho.dtype
        y = np.ascontiguousarray(y, dtype=dtype)
        hidden = np.empty((W.shape[0], W.shape[2]), dtype=dtype)
        contract_kernel(W, y, self.kappa, True, hidden)
        if _structured(factor):
            z = _apply_factor(factor, y, False)
        else:
            F = _dense(factor)
            z = np.empty((F.shape[0], F.shape[1]), dtype=dtype)
            apply_rank_factor_kernel(F, y, False, z)
        return self._backpropagate(cache, hidden, z)

    def gradient(self, theta, cache, residual):
        """Gradient of the risk, ``Jᵀ e`` (flat), from the residual ``e``:
        the hidden layer's error ``κ ρ' ∘ (e Vᵀ)`` is one GEMM."""
        _, V, _ = self.unpack(theta)
        dtype = cache.rho.dtype
        e = _as(residual, dtype)
        hidden = e.dot(_as(V, dtype).T)
        hidden *= cache.rho_d
        hidden *= self.kappa
        return self._backpropagate(cache, hidden, e)

    def _backpropagate(self, cache, hidden, z):
        """θ-space vector from the hidden layer's error ``hidden`` (b × n) and
        the output-space vector ``z`` (b × K): ``[hiddenᵀ X̂, κ ρᵀ z, Σ_k z_k]``."""
        dtype = cache.rho.dtype
        n, K, d_aug = self.n_hidden, self.n_outputs, self.d_aug
        p_u = self.n_hidden_params
        grad = np.empty(self.n_params, dtype=dtype)
        hidden, z = _as(hidden, dtype), _as(z, dtype)
        Xa = cache.Xa
        if _sparse(Xa):
            sparse_transposed_rows_times_kernel(Xa.indptr, Xa.indices, Xa.data,
                                                hidden,
                                                grad[:p_u].reshape(n, d_aug))
        else:
            np.dot(hidden.T, _as(Xa, dtype), out=grad[:p_u].reshape(n, d_aug))
        gV = grad[p_u:p_u + n * K].reshape(n, K)
        np.dot(cache.rho.T, z, out=gV)
        gV *= self.kappa
        if self.fit_intercept:
            # (the ufunc's reduction that np.sum calls, without its wrapper)
            np.add.reduce(z, axis=0, out=grad[p_u + n * K:])
        return grad

    # ------------------------------------------------------------ Gram
    def gram(self, theta, cache, W, factor, D):
        """The dual-form Gram ``J̃ D J̃ᵀ`` of shape (bK, bK), never via J̃.

        With the factor's :class:`FactorParts` (K > 1) the Gram is formed
        without it first, ``P_kl = κ² Vᵀ diag(ρ'_k ρ'_l M_kl) V`` for all pairs
        in one GEMM, and ``A`` is applied per pair in O(K²)
        (:func:`~sklearn_ggn._kernels.factor_transform_kernel`); a dense
        factor is one of rank K (:meth:`rank_gram`).
        """
        b, K, n = W.shape
        dtype = cache.rho.dtype
        D_U, D_V, D_bo = self.unpack(D)
        sparse = sp.issparse(cache.Xa)
        if K == 1 and not sparse:
            return self._gram_single_output(cache, W, _dense(factor), D_U, D_V,
                                            D_bo)
        if not isinstance(factor, FactorParts):
            return self.rank_gram(theta, cache, W, _dense(factor), D)
        kappa2 = self.kappa ** 2
        itemsize = np.dtype(dtype).itemsize
        gram = np.zeros((b * K, b * K), dtype=dtype)
        # rows k per block: M holds (k, l ≥ k) pairs × n, the dense pair
        # products (k, l) × d̂ and the pairs' plain K × K blocks
        block = pair_block_rows(
            b, pair_block_width(n, self.d_aug, K, sparse, True), itemsize)
        # (sparse K = 1 comes here too: Z = J̃ D^{1/2} would be b × n·d̂ dense)
        _, V, _ = self.unpack(theta)
        VV = outer_products_kernel(V)
        for k0, k1, M in self._pair_products(cache.Xa, D_U, block):
            # the pairs' hidden weights κ² ρ'_ki ρ'_li M_i[k, l], their plain
            # K × K blocks (one GEMM with VV), the output part
            # κ² Σ_i ρ_ki ρ_li D_V[i, c] + D_bo[c], then A per pair
            pair_hidden_weights_kernel(cache.rho_d, k0, k1, kappa2, M)
            S = pair_products_kernel(cache.rho, k0, k1) @ D_V
            S *= kappa2
            if D_bo is not None:
                S += D_bo
            factor_transform_kernel(M @ VV, S, factor.a, factor.u, factor.w, k0,
                                    k1, gram)
        return gram

    def _gram_single_output(self, cache, W, factor, D_U, D_V, D_bo):
        """K = 1: ``G̃ = Z Zᵀ`` with ``Z = J̃ D^{1/2}`` (b × p), one BLAS syrk.

        Z's columns are the hidden weights (numba kernel), then the output
        weights ``A_k κ ρ_ki sqrt(D_V[i])`` and the output bias
        ``A_k sqrt(D_bo)``; for large b·p they are formed and multiplied in
        blocks of hidden units so that Z stays within 256 MB.
        """
        b, _, n = W.shape
        dtype = cache.rho.dtype
        d_aug = self.d_aug
        itemsize = np.dtype(dtype).itemsize
        sqrt_D_U = np.sqrt(D_U)
        n_out = n + (1 if D_bo is not None else 0)
        units = single_output_units(b, d_aug, itemsize)
        gram = None
        for i0 in range(0, n, units):
            i1 = min(n, i0 + units)
            last = i1 == n
            Z = np.empty((b, (i1 - i0) * d_aug + (n_out if last else 0)), dtype=dtype)
            scaled_hidden_jacobian_kernel(cache.Xa, W, i0, i1, sqrt_D_U, self.kappa, Z)
            if last:
                a = factor[:, 0, :]  # (b, 1): A_k
                out = Z[:, (i1 - i0) * d_aug:]
                np.multiply(cache.rho, np.sqrt(D_V[:, 0]) * self.kappa, out=out[:, :n])
                out[:, :n] *= a
                if D_bo is not None:
                    out[:, n] = a[:, 0] * np.sqrt(D_bo[0])
            part = Z @ Z.T  # numpy dispatches a product with its own transpose to syrk
            if gram is None:
                gram = part
            else:
                gram += part
            # (a block's Z and partial Gram are freed before the next block's)
            Z = part = None
        return gram

    # ------------------------------------------------------------ rank-R factor
    # A factor F_k of shape (K, R) per row (RankFactor): J̃ = Fᵀ J has R rows
    # per sample. The reduced output curvatures (R = 1) and the per-unit H
    # take this route; the exact factor's own structure (FactorParts) keeps
    # the routes above.
    def rank_sensitivities(self, theta, cache, F):
        """``W[k, r, i] = ρ'(a_ki) (V F_k)[i, r]`` of shape (b, R, n)."""
        _, V, _ = self.unpack(theta)
        dtype = cache.rho_d.dtype
        b, K, R = F.shape
        Ft = np.ascontiguousarray(np.asarray(F, dtype).transpose(0, 2, 1))
        W = Ft.reshape(b * R, K).dot(_as(V, dtype).T).reshape(b, R, self.n_hidden)
        W *= cache.rho_d[:, None, :]
        return W

    def rank_gram(self, theta, cache, W, F, D, unit_D=None):
        """The dual Gram ``J̃ D J̃ᵀ`` (bR × bR) for a rank-R factor.

        With ``unit_D`` (H constant over each hidden unit's parameters,
        ``D_U[i, :] = D_V[i, :] = unit_D[i]``) the input block needs no
        per-unit weighting of the inputs, ``M_i = unit_D[i] X̂ X̂ᵀ``, and

            ``G = κ² (W diag(unit_D) Wᵀ) ∘ (X̂X̂ᵀ ⊗ 1)
                + κ² (FᵀF) ∘ (ρ diag(unit_D) ρᵀ ⊗ 1) + Fᵀ diag(D_bo) F``:

        four GEMMs, ``(bR)²(n + K) + b²(d̂ + n)`` flops instead of
        ``b²·n·d̂``. Otherwise the pairs' ``M_i[k, l] = Σ_j x_kj D_U[i, j] x_lj``
        are formed in blocks as for the exact factor.
        """
        b, R, n = W.shape
        K = F.shape[1]
        dtype = cache.rho.dtype
        kappa2 = self.kappa ** 2
        D_U, D_V, D_bo = self.unpack(D)
        Ft = np.ascontiguousarray(F.transpose(0, 2, 1)).reshape(b * R, K)
        Xa = cache.Xa
        if unit_D is not None:
            root = np.sqrt(unit_D)
            W2 = np.ascontiguousarray(W).reshape(b * R, n)
            # each product of a matrix with its own transpose is a syrk
            # (half a GEMM's flops); the combination reads their lower
            # triangles and writes both. W diag(uD) Wᵀ is written into the
            # Gram itself: the combination reads entry (row, col ≤ row) of
            # it before writing that entry, and writes (col, row) only in
            # the upper triangle, which it never reads.
            m = b * R
            gram = np.empty((m, m), dtype=dtype)
            WW = _gram_lower(W2 * root, gram)
            unit_gram_combine_kernel(
                WW,
                _inner_products_lower(Xa, self.work_array("XX", b, dtype)),
                _gram_lower(Ft, self.work_array("FF", m, dtype)),
                _gram_lower(cache.rho * root, self.work_array("S", b, dtype)),
                _gram_lower(Ft * np.sqrt(D_bo), self.work_array("FDF", m, dtype))
                if D_bo is not None else gram[:0],
                kappa2, R, gram)
            return gram
        sparse = sp.issparse(Xa)
        itemsize = np.dtype(dtype).itemsize
        block = pair_block_rows(
            b, pair_block_width(n, self.d_aug, K, sparse, False), itemsize)
        gram = np.zeros((b * R, b * R), dtype=dtype)
        for k0, k1, M in self._pair_products(Xa, D_U, block):
            hidden_gram_combine_kernel(W, M, k0, k1, kappa2, gram)
        output_gram_kernel(np.ascontiguousarray(F),
                           self._output_blocks(cache.rho, D_V, D_bo), gram)
        return gram

    def per_unit(self, D, copy=True, gradient=None):
        """The per-unit structure of a diagonal ``D = H⁻¹``.

        Each hidden unit's parameters (its input weights, bias and output
        weights) get the unit's mean curvature ``h_i`` (the mean of
        ``H = 1/D`` over them); the output biases keep theirs.

        Parameters
        ----------
        D : ndarray of shape (p,)
            The diagonal of ``H⁻¹``, laid out as θ.
        copy : bool, default=True
            False overwrites ``D`` (a step's own array) instead of copying.
        gradient : ndarray of shape (p,), default=None
            A gradient ``g`` (of D's dtype) whose dual norm under the per-unit
            H is wanted.

        Returns
        -------
        D_unit : ndarray of shape (p,)
            ``1/h_i`` on unit i's parameters.
        unit_D : ndarray of shape (n,)
            ``1/h_i``.
        norm : float
            ``sqrt(gᵀ D_unit g)``, summed in float64 (0 without ``gradient``).
        """
        D_unit = np.array(D) if copy else D
        unit_D = np.empty(self.n_hidden, dtype=D_unit.dtype)
        g = (np.empty(0, dtype=D_unit.dtype) if gradient is None
             else np.ascontiguousarray(gradient, dtype=D_unit.dtype))
        square = per_unit_kernel(D_unit, self.n_hidden, self.d_aug,
                                 self.n_outputs, unit_D, g)
        return D_unit, unit_D, math.sqrt(square)

    @staticmethod
    def _pair_products(Xa, D_U, block):
        """``(k0, k1, M)`` for blocks of rows: ``M[(k, l), i] = Σ_j x_kj
        D_U[i, j] x_lj`` over the pairs ``k0 ≤ k < k1, l ≥ k`` (dense: one GEMM
        of the pairwise products with ``D_Uᵀ``, a transposed view; sparse:
        from the CSR arrays)."""
        b = Xa.shape[0]
        for k0 in range(0, b, block):
            k1 = min(b, k0 + block)
            if sp.issparse(Xa):
                M = sparse_pair_products_kernel(Xa.indptr, Xa.indices, Xa.data,
                                                D_U, k0, k1, b)
            else:
                M = pair_products_kernel(Xa, k0, k1) @ D_U.T
            yield k0, k1, M

    def _output_blocks(self, rho, D_V, D_bo):
        """``S[c, k, l] = κ² Σ_i ρ_ki ρ_li D_V[i, c] (+ D_bo[c])``."""
        scaled = rho[None, :, :] * np.sqrt(D_V.T)[:, None, :]
        S = np.matmul(scaled, scaled.transpose(0, 2, 1))
        S *= self.kappa ** 2
        if D_bo is not None:
            S += D_bo[:, None, None]
        return S

    # ------------------------------------------------------------ primal
    def gauss_newton_matrix(self, theta, cache, W, factor):
        """The primal ``J̃ᵀ J̃`` (p × p).

        The hidden-hidden block is ``Σ_k C_k ⊗ x̂_k x̂_kᵀ`` with
        ``C_k = κ² W_kᵀ W_k`` (one GEMM, no K-fold repetition); the rows of
        J̃ for the output weights and bias are small (bK × (nK + K)) and
        are formed explicitly, as is their cross block with the hidden weights.
        """
        b, R, n = W.shape  # R rows of J̃ per sample (K for the exact factor)
        K = self.n_outputs
        Xa = cache.Xa
        d_aug = self.d_aug
        p_u = self.n_hidden_params
        p = self.n_params
        dtype = cache.rho.dtype
        kappa = self.kappa
        factor = _dense(factor)
        gn = np.empty((p, p), dtype=dtype)

        # Explicit J̃ for output weights / bias: J̃_R[(k,c), (i,c'')] =
        # κ ρ_ki A_k[c'', c];  J̃_R[(k,c), c''] = A_k[c'', c].
        n_rest = p - p_u
        J_rest = np.zeros((b, R, n_rest), dtype=dtype)
        At = factor.transpose(0, 2, 1)  # At[k, c, c''] = A_k[c'', c]
        J_rest[:, :, : n * K] = (
            kappa * cache.rho[:, None, :, None] * At[:, :, None, :]
        ).reshape(b, R, n * K)
        if self.fit_intercept:
            J_rest[:, :, n * K:] = At
        J_rest2 = J_rest.reshape(b * R, n_rest)
        gn[p_u:, p_u:] = J_rest2.T @ J_rest2

        itemsize = np.dtype(dtype).itemsize
        # samples per chunk: C is n², F is n·n_rest and the outer products d̂²
        per_sample = max(n * n, n * n_rest, d_aug * d_aug) * itemsize
        chunk = max(1, int(_BLOCK_BYTES // max(1, per_sample)))
        UU = np.zeros((n * n, d_aug * d_aug), dtype=dtype)
        UR = np.zeros((d_aug, n * n_rest), dtype=dtype)
        for k0 in range(0, b, chunk):
            sl = slice(k0, min(b, k0 + chunk))
            Wc, Xc = W[sl], Xa[sl]
            if sp.issparse(Xc):  # a chunk of rows; the p × p matrix dwarfs it
                Xc = Xc.toarray()
            bc = Wc.shape[0]
            # C_k[i, i'] = κ² Σ_c W[k,c,i] W[k,c,i']
            C = np.matmul(Wc.transpose(0, 2, 1), Wc).reshape(bc, n * n)
            outer = (Xc[:, :, None] * Xc[:, None, :]).reshape(bc, d_aug * d_aug)
            UU += C.T @ outer
            # F[k, i, s] = Σ_c W[k,c,i] J̃_R[(k,c), s]
            F = np.matmul(Wc.transpose(0, 2, 1), J_rest[sl]).reshape(bc, -1)
            UR += Xc.T @ F
        UU *= kappa * kappa
        gn[:p_u, :p_u] = (
            UU.reshape(n, n, d_aug, d_aug).transpose(0, 2, 1, 3).reshape(p_u, p_u)
        )
        UR *= kappa
        UR = UR.reshape(d_aug, n, n_rest).transpose(1, 0, 2).reshape(p_u, n_rest)
        gn[:p_u, p_u:] = UR
        gn[p_u:, :p_u] = UR.T
        return gn

    # ------------------------------------------------------------ costs
    def step_costs(self, batch_size, rank=None, per_unit=False):
        """Leading flop counts of one step, ``{"dual": flops, "primal": flops}``.

        The package's one cost model: ``batch_size="auto"`` of the exact step
        (with a cost per pass over the p parameters), ``linear_solver="auto"``,
        the BLAS thread policy and the width warning use it (memory is
        ``_memory.estimate_solver_bytes``). Dual, exact step: the Gram's row
        pairs, ``b²/2 · n (d̂ + K²)`` (K = 1: ``b²/2 · n d̂``, the syrk of
        ``Z = J̃ D^{1/2}``), and its Cholesky ``(bK)³/3``. With ``rank`` R rows
        per sample (m = bR) and a per-unit H (:meth:`rank_gram`):
        ``b²(d̂ + n) + m²(n + K) + m³/3``; with R rows and a diagonal H:
        ``b²·n·d̂ + m²·n + K·b²·n + m²K + m³/3``. Primal: the GN matrix
        ``b·n²·(d̂² + K·(nK+K))`` plus a Cholesky of ``p³/3``.
        """
        b, n, K, d_aug, p = (batch_size, self.n_hidden, self.n_outputs,
                             self.d_aug, self.n_params)
        m = b * (K if rank is None else rank)
        if rank is None and not per_unit:
            dual = b * b * n * (d_aug + (K * K if K > 1 else 0)) / 2.0 + m**3 / 3.0
        elif per_unit:
            dual = b * b * (d_aug + n) + m * m * (n + K) + m**3 / 3.0
        else:
            dual = b * b * n * d_aug + m * m * (n + K) + K * b * b * n + m**3 / 3.0
        n_rest = n * K + K * self.fit_intercept
        primal = (2.0 * b * n * n * d_aug * d_aug
                  + 2.0 * b * n * n * K * n_rest + m * n_rest**2 + p**3 / 3.0)
        return {"dual": dual, "primal": primal}


def _structured(factor):
    """Whether the products take ``factor`` through its structure
    ``A = diag(a) − u wᵀ`` (:class:`FactorParts` of several outputs). One
    output's ``A_k`` is a number per row, a factor of rank one: it takes the
    rank-R products (the same numbers, by the kernels of the default
    steps)."""
    return isinstance(factor, FactorParts) and factor.a.shape[1] > 1


def _apply_factor(factor, z, transpose):
    """``A_kᵀ z_k`` (``transpose``) or ``A_k z_k`` for every row k, O(K) per
    row for the :class:`FactorParts` ``A = diag(a) − u wᵀ``."""
    dtype = np.result_type(factor.a, z)
    return apply_parts_kernel(_as(factor.a, dtype), _as(factor.u, dtype),
                              _as(factor.w, dtype), _as(z, dtype), transpose)


def _as(a, dtype):
    """``a`` C-contiguous in ``dtype`` (the kernels take one dtype)."""
    return np.ascontiguousarray(a, dtype=dtype)


def _dense(factor):
    """The dense curvature factor (b, K, R), C-contiguous."""
    if isinstance(factor, FactorParts):
        return factor.dense()
    if isinstance(factor, RankFactor):
        return np.ascontiguousarray(factor.columns)
    return np.ascontiguousarray(factor)


_SYRK = {"d": dsyrk, "f": ssyrk}


def _gram_lower(A, out=None):
    """``A Aᵀ`` (C order) of a C-contiguous A, by BLAS syrk: only the lower
    triangle holds values (the upper one is zero, or left as it was in
    ``out``, a C-order array of A's dtype written in place when given)."""
    syrk = _SYRK[A.dtype.char]
    # A's transpose is the Fortran-order matrix that syrk(trans=1) takes
    # without a copy; its upper triangle (Fortran order) is the lower one of
    # the C-order view (beta = 0: out's old values are never read)
    if out is None:
        return syrk(1.0, A.T, trans=1).T
    return syrk(1.0, A.T, c=out.T, trans=1, overwrite_c=1).T


def _inner_products_lower(Xa, out=None):
    """``X̂ X̂ᵀ`` with (at least) its lower triangle, for dense or canonical
    CSR X̂ (into ``out`` when given; dense: see :func:`_gram_lower`)."""
    if _sparse(Xa):
        b = Xa.shape[0]
        if out is None:
            out = np.empty((b, b), dtype=Xa.dtype)
        # (calloc: only the pages of the stored columns are ever touched)
        work = np.zeros(Xa.shape[1], dtype=Xa.dtype)
        sparse_inner_products_lower_kernel(Xa.indptr, Xa.indices, Xa.data,
                                           work, out)
        return out
    return _gram_lower(np.ascontiguousarray(Xa), out)


def _sparse(X):
    """``sp.issparse`` with the dense arrays of every step answered first."""
    return not isinstance(X, np.ndarray) and sp.issparse(X)


def _times_transposed(Xa, W):
    """``X̂ Wᵀ`` (b × n) for dense or canonical CSR ``X̂`` and W (n × d̂)."""
    if not _sparse(Xa):
        return Xa @ W.T
    out = np.empty((Xa.shape[0], W.shape[0]), dtype=np.result_type(Xa.dtype,
                                                                     W.dtype))
    # (a transposed copy of W costs n·d̂, the strided reads it saves n per
    # stored entry: 2x faster on a 128-row batch of one-hot rows)
    WT = (np.ascontiguousarray(W.T) if Xa.nnz >= W.shape[1]
          else np.ascontiguousarray(W).T)
    sparse_rows_times_kernel(Xa.indptr, Xa.indices, Xa.data, WT, out)
    return out


def _augment_sparse(X, fit_intercept):
    """Canonical CSR copy of a sparse X, with the ones column appended as the
    last stored entry of each row when ``fit_intercept``."""
    X = sp.csr_array(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # sorts the indices too
    if not fit_intercept:
        return X
    b, d = X.shape
    indptr = X.indptr + np.arange(b + 1, dtype=X.indptr.dtype)
    last = indptr[1:] - 1
    stored = np.ones(X.nnz + b, dtype=bool)
    stored[last] = False
    indices = np.empty(X.nnz + b, dtype=np.result_type(X.indices.dtype, np.int32))
    data = np.empty(X.nnz + b, dtype=X.dtype)
    indices[stored], indices[last] = X.indices, d
    data[stored], data[last] = X.data, 1
    Xa = sp.csr_array((data, indices, indptr), shape=(b, d + 1))
    Xa.has_sorted_indices = True
    return Xa
