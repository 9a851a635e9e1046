"""The Gauss-Newton model of the objective at θ on one batch.

Given the batch residual ``e = ∂R/∂Φ``, the curvature factor ``A`` with
``Q = A Aᵀ``, the regularizer gradient ``∇g = τ ḡ'(θ)`` and the diagonal
curvature ``H`` (``D = H⁻¹``), the search direction solves

    (Jᵀ Q J + H) d = r,      r = Jᵀ e + ∇g                    (primal, p × p)

or, by the Woodbury identity with ``J̃ = Aᵀ J``,

    d = D r − D J̃ᵀ (I + J̃ D J̃ᵀ)⁻¹ J̃ D r                     (dual, bK × bK).
"""

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg.lapack import dpotrf, spotrf

from .._config import one_blas_thread
from .._kernels import all_finite, cholesky_solve_kernel, gershgorin_kernel
from .._losses import FactorParts, RankFactor
from .._network import ForwardCache

# Refine the dual solution when ‖D r‖ / ‖d‖ exceeds this (digits lost to
# cancellation in D r − D J̃ᵀ y).
REFINE_CANCELLATION = 1e3
# float32 dual steps (see Linearization.direction): refine when the estimated
# relative error ε₃₂·max(λ_max(G̃), ‖D r‖/‖d‖) exceeds MIXED_TOLERANCE;
# refinement needs the contraction ε₃₂·λ_max below MAX_CONTRACTION and stops
# when a correction is below MIXED_CONVERGED relative (invisible once d is
# rounded to float32).
MIXED_TOLERANCE = 1e-4
MAX_CONTRACTION = 0.25
MAX_MIXED_REFINEMENTS = 6
MIXED_CONVERGED = float(np.finfo(np.float32).eps)
# Machine epsilon per working dtype (a Python float) and the smallest normal
# float64 (a NumPy float64, as np.finfo gives it), read once: np.finfo cost
# a call and a cache lookup three times per step.
_EPS = {np.dtype(t): float(np.finfo(t).eps) for t in (np.float32, np.float64)}
_TINY = np.finfo(float).tiny
# Order from which the Cholesky factorization runs on one BLAS thread (see
# cholesky).
LARGE_CHOLESKY = 12_000
# Orders up to which SciPy's LAPACK potrf is called directly: NumPy's
# np.linalg.cholesky took 2-2.7x longer on one thread for orders 120-500
# (m = 234, the letter mini-batch: 0.84 vs 0.31 ms) and 1.8x at 1000 (13.3
# against 7.4 ms, potrf on the transposed view); every full batch of the
# "auto" rule (up to 1024 rows) takes it. See cholesky for why larger
# systems stay with NumPy.
SMALL_CHOLESKY = 1024


_POTRF = {"d": dpotrf, "f": spotrf}


class StepFailure(Exception):
    """The linear system of a step could not be solved (non-finite or not PD)."""


def cholesky(system):
    """Cholesky factor of a (symmetric positive definite) Gauss-Newton system.

    Systems of order above :data:`SMALL_CHOLESKY` use NumPy's LAPACK, the
    same OpenBLAS thread pool as NumPy's products; SciPy's is a separate
    OpenBLAS, whose threads are starved by NumPy's still-spinning ones
    right after a NumPy syrk (9 ms alone, 94 ms after the syrk, for
    m = 1000). The per-unit Gram's products are SciPy's syrk, and systems
    up to order 1024 call SciPy's ``potrf`` directly (a 1000-row full-batch
    regression: 0.71 s against 1.0 s on one thread, 0.65 against 1.34 s on
    two). The triangular solves are numba loops.

    Raises
    ------
    StepFailure
        When the system has non-finite entries or is not numerically positive
        definite.
    """
    if not all_finite(system):
        raise StepFailure("the Gauss-Newton system has non-finite entries")
    try:
        if system.shape[0] <= SMALL_CHOLESKY:
            # Small systems: SciPy's potrf directly (no NumPy gufunc
            # machinery); SciPy's OpenBLAS is the one whose threads NumPy's
            # could starve, but a step this small runs on one BLAS thread (the
            # solver's policy), or else the factorization is a negligible part
            # of its step.
            # given the transposed view (Fortran order, no copy) it reads
            # the same triangle as the lower factorization of the C array;
            # its upper factor U (Fortran order, UᵀU = system) viewed in C
            # order is L: 30 against 64 µs at order 128 (one thread), the
            # copies in and out of Fortran order saved
            potrf = _POTRF[system.dtype.char]
            factor, info = potrf(system.T, lower=0, clean=1, overwrite_a=0)
            if info != 0:
                raise np.linalg.LinAlgError(f"potrf info={info}")
            return factor.T
        if system.shape[0] < LARGE_CHOLESKY:
            return np.linalg.cholesky(system)
        # OpenBLAS's multithreaded potrf (0.3.30 in NumPy's wheels, 0.3.31 in
        # SciPy's) crashed the process with a segmentation fault for order
        # 16 128 on a 2-core machine (15 000 passed); one thread passed. Large
        # systems (in practice only a forced linear_solver="primal") are
        # therefore factorized with one BLAS thread.
        with one_blas_thread():
            return np.linalg.cholesky(system)
    except np.linalg.LinAlgError as exc:
        raise StepFailure(
            "the Gauss-Newton system is not numerically positive definite"
        ) from exc


def promote_cache(cache, dtype=np.float64):
    """The forward cache with every array in ``dtype`` (the one promotion of a
    float32 step's data)."""
    return ForwardCache(*(None if a is None
                          else a.astype(dtype, copy=False) if sp.issparse(a)
                          else np.asarray(a, dtype=dtype)
                          for a in (cache.Xa, cache.rho, cache.rho_d,
                                    cache.outputs)))


@dataclass
class Linearization:
    """The linearized network at θ on one batch, and the regularizer's model.

    It gives the Jacobian products ``J̃ v`` and ``J̃ᵀ u``, the dual Gram
    ``J̃ D J̃ᵀ`` or the primal matrix ``J̃ᵀ J̃``, and the Gauss-Newton
    direction (:meth:`direction`), never forming J̃ where the structure of
    the Jacobian avoids it.

    Parameters
    ----------
    network : TwoLayerNetwork
        Shapes, scaling and activation.
    theta : ndarray of shape (p,)
        The parameters.
    cache : ForwardCache
        Forward pass at θ on the batch, with activation derivatives.
    residual : ndarray of shape (b, K)
        ``e = ∂R/∂Φ``.
    factor : ndarray of shape (b, K, K), FactorParts or RankFactor
        ``A`` with ``Q_k = A_k A_kᵀ``, dense or as the parts of
        ``A_k = diag(a_k) − u_k w_kᵀ`` (the structured Gram, see
        ``TwoLayerNetwork.gram``), or a :class:`RankFactor` ``F`` with R
        columns per row (the step's curvature is then ``F_k F_kᵀ``: a reduced
        output curvature, or the exact one with the per-unit H).
    reg_grad : ndarray of shape (p,)
        ``∇g(θ)``.
    D : ndarray of shape (p,)
        Inverse of the diagonal regularizer curvature ``H``.
    unit_D : ndarray of shape (n,) or None, default=None
        When H is constant over each hidden unit's parameters (``D`` equals
        ``unit_D[i]`` on unit i's input weights, bias and output weights):
        the Gram then skips the per-unit weighting of the inputs. Requires
        a :class:`RankFactor`.
    """

    network: object
    theta: np.ndarray
    cache: ForwardCache
    residual: np.ndarray
    factor: np.ndarray
    reg_grad: np.ndarray
    D: np.ndarray
    unit_D: np.ndarray = None

    def __post_init__(self):
        self._W = None
        self._gradient = None
        self._lin64 = None

    # ------------------------------------------------------------ products
    @property
    def rank(self):
        """Rows of J̃ per sample: K, or R for a :class:`RankFactor`."""
        if isinstance(self.factor, RankFactor):
            return self.factor.rank
        return self.residual.shape[1]

    @property
    def W(self):
        """Hidden-layer sensitivities ``W[k, c, i] = ρ'(a_ki) (V A_k)[i, c]``."""
        if self._W is None:
            if isinstance(self.factor, RankFactor):
                self._W = self.network.rank_sensitivities(self.theta, self.cache,
                                                          self.factor.columns)
            else:
                self._W = self.network.sensitivities(self.theta, self.cache,
                                                     self.factor)
        return self._W

    @property
    def gradient(self):
        """``r = Jᵀ e + ∇g``, the objective's gradient at θ."""
        if self._gradient is None:
            r = self.network.gradient(self.theta, self.cache, self.residual)
            r += self.reg_grad
            self._gradient = r
        return self._gradient

    def jvp(self, v):
        """``J̃ v`` of shape (b, K) (or (b, R))."""
        return self.network.jvp(self.theta, self.cache, self.W, self.factor, v)

    def vjp(self, y):
        """``J̃ᵀ y`` (flat, length p) for ``y`` of shape (b, K) (or (b, R))."""
        return self.network.vjp(self.theta, self.cache, self.W, self.factor, y)

    def gram(self):
        """The dual Gram ``J̃ D J̃ᵀ`` of shape (bK, bK) (or (bR, bR))."""
        if isinstance(self.factor, RankFactor):
            return self.network.rank_gram(self.theta, self.cache, self.W,
                                          self.factor.columns, self.D, self.unit_D)
        return self.network.gram(self.theta, self.cache, self.W, self.factor, self.D)

    def gauss_newton_matrix(self):
        """The primal ``J̃ᵀ J̃`` of shape (p, p)."""
        return self.network.gauss_newton_matrix(self.theta, self.cache, self.W,
                                                self.factor)

    # Factorization and triangular solves are methods so that a profiler can
    # time them on the class (benchmarks/step_cost.py).
    @staticmethod
    def factorize(system):
        """Cholesky factor of the system (see :func:`cholesky`)."""
        return cholesky(system)

    @staticmethod
    def triangular_solve(L, rhs):
        """``(L Lᵀ)⁻¹ rhs`` by forward and back substitution (numba)."""
        x = np.empty(L.shape[0], dtype=L.dtype)
        cholesky_solve_kernel(L, rhs, x)
        return x

    def astype(self, dtype):
        """The same linearization with every array in ``dtype``."""
        def cast(a):
            if a is None:
                return None
            if isinstance(a, (FactorParts, RankFactor)):
                return a.astype(dtype)
            return np.asarray(a, dtype=dtype)

        return Linearization(self.network, cast(self.theta),
                             promote_cache(self.cache, dtype), cast(self.residual),
                             cast(self.factor), cast(self.reg_grad), cast(self.D),
                             cast(self.unit_D))

    # ------------------------------------------------------------ solves
    def _well_conditioned_coefficients(self, gershgorin):
        """The coefficients c of ``e = F c`` when the step is solved without
        the explicit gradient (float64, a rank factor, and no cancellation
        to refine: ``‖D r‖/‖d‖ ≤ (1 + λ_max) cond(D)^½``), else None."""
        if not (self.theta.dtype == np.float64
                and isinstance(self.factor, RankFactor)):
            return None
        # D's extremes (over its n unit values and K bias values when H is
        # per unit: the same numbers, no passes over p)
        values = (self.D if self.unit_D is None else
                  np.concatenate((self.unit_D,
                                  self.D[self.network.n_hidden_params
                                         + self.unit_D.size
                                         * self.network.n_outputs:])))
        spread = math.sqrt(np.maximum.reduce(values) / np.minimum.reduce(values))
        if (1.0 + gershgorin) * spread <= REFINE_CANCELLATION:
            return self.factor.coefficients(self.residual)
        return None

    def direction(self, form):
        """The GGN-SCORE direction ``d`` with ``(J̃ᵀJ̃ + H) d = r``.

        float64 is solved as is. For float32 (dual form; primal float32 steps
        are linearized in float64 by the solver) the Gram — the dominant
        cost — is formed and factorized in float32; the solution's error is
        estimated from the Gram's norm (a Gershgorin bound on λ_max, the
        condition number of ``I + G̃`` since λ_min ≥ 1) and the cancellation
        ratio ``‖D r‖ / ‖d‖``, and when the estimate exceeds
        :data:`MIXED_TOLERANCE` the direction is refined by iterative
        refinement with float64 residuals (converging at the rate
        ``ε₃₂ λ_max``), or recomputed entirely in float64 when that
        contraction is too weak (≥ :data:`MAX_CONTRACTION`), the float32
        factorization fails or the refinement stalls.

        Parameters
        ----------
        form : {"dual", "primal"}
            Which linear system to factorize.

        Returns
        -------
        d : ndarray of shape (p,)
            In θ's dtype.

        Raises
        ------
        StepFailure
            When the system cannot be factorized or the direction is not finite.
        """
        if form != "dual":
            system = self.gauss_newton_matrix()
            _diagonal(system)[...] += 1.0 / self.D
            return _finite(self.triangular_solve(self.factorize(system),
                                                 self.gradient))

        system = self.gram()
        contraction = 0.0
        # λ_max(G̃) bounded by Gershgorin
        gershgorin = float(gershgorin_kernel(system, np.empty(system.shape[1])))
        if system.dtype != np.float64:
            # ε₃₂ λ_max(G̃): the relative error of the float32 solve and the
            # contraction factor of its refinement
            contraction = _EPS[self.theta.dtype] * gershgorin
        coef = self._well_conditioned_coefficients(gershgorin)
        _diagonal(system)[...] += 1.0
        if contraction >= MAX_CONTRACTION:
            system = None  # (freed before the float64 step forms its own)
            return self._float64_direction()
        try:
            L = self.factorize(system)
        except StepFailure:
            if self.theta.dtype == np.float64:
                raise
            L = None
        if L is None:
            # (outside the handler: its traceback would keep the system)
            system = None
            return self._float64_direction()
        if coef is not None:
            return _finite(self._dual_solve_coefficients(L, system, coef))
        r = self.gradient
        direction, Dr = self._dual_solve(L, r)
        ratio = _norm(Dr) / max(_norm(direction), _TINY)
        if self.theta.dtype == np.float64:
            # The dual formula subtracts two nearly equal vectors when D is
            # large (small τ): log10(‖D r‖ / ‖d‖) digits are lost (measured:
            # 1e-8 → 1e-5 relative error from τ = 1e-6 to 1e-8). Then one step
            # of iterative refinement on the primal equation restores them, at
            # the cost of two more Jacobian products and solves;
            # well-conditioned steps (e.g. damping=1 on mini-batches) skip it.
            if ratio > REFINE_CANCELLATION:
                direction += self._dual_solve(L, self.primal_residual(direction,
                                                                      r))[0]
        elif max(contraction, _EPS[self.theta.dtype] * ratio) > MIXED_TOLERANCE:
            direction = self._refine_mixed(L, direction)
            if direction is None:  # not converged
                system = L = None
                return self._float64_direction()
        return _finite(direction)

    def _dual_solve(self, L, v, lin=None):
        """``(J̃ᵀJ̃ + H)⁻¹ v = D v − D J̃ᵀ (I + J̃ D J̃ᵀ)⁻¹ J̃ D v`` with the
        Cholesky factor ``L`` of ``I + J̃ D J̃ᵀ``; products in the dtype of
        ``lin`` (default: this linearization), triangular solves in L's.
        Returns ``(solution, D v)``."""
        lin = self if lin is None else lin
        b, R = lin.residual.shape[0], lin.rank
        Dv = lin.D * v
        rhs = np.ascontiguousarray(lin.jvp(Dv)).ravel()
        y = self.triangular_solve(L, rhs.astype(L.dtype, copy=False))
        back = lin.vjp(y.reshape(b, R).astype(v.dtype, copy=False))
        back *= lin.D
        return np.subtract(Dv, back, out=back), Dv

    def _dual_solve_coefficients(self, L, system, coef):
        """The dual direction when ``e = F c``: with ``r = J̃ᵀ c + ∇g``,

            ``d = D ∇g + D J̃ᵀ (c − y)``,  ``y = (I + G)⁻¹ (J̃ D ∇g + G c)``,

        one product each way (the explicit gradient would be a third). The
        directional derivative ``rᵀ d = cᵀ J̃ d + ∇gᵀ d`` follows from
        ``J̃ d = J̃ D ∇g + G (c − y)`` (:meth:`cached_slope`)."""
        b, R = coef.shape
        c = coef.ravel()
        Dg = self.D * self.reg_grad
        u = np.ascontiguousarray(self.jvp(Dg)).ravel()
        # system = I + G; u + G c = u + (I + G) c − c, in place
        rhs = system @ c
        rhs += u
        rhs -= c
        w = self.triangular_solve(L, rhs)
        w = np.subtract(c, w, out=w)
        direction = self.vjp(w.reshape(b, R))
        direction *= self.D
        direction += Dg
        Jd = system @ w
        Jd += u
        Jd -= w
        self._slope = (direction, float(c @ Jd) + float(self.reg_grad @ direction))
        return direction

    def cached_slope(self, direction):
        """``rᵀ d`` when the direction's solve gave it without the explicit
        gradient (:meth:`_dual_solve_coefficients`), else None."""
        cached = getattr(self, "_slope", None)
        if cached is not None and cached[0] is direction:
            return cached[1]
        return None

    def primal_residual(self, d, r):
        """``r − (J̃ᵀJ̃ + H) d``."""
        res = r - self.vjp(self.jvp(d))
        res -= d / self.D
        return res

    def _refine_mixed(self, L, direction):
        """Mixed-precision iterative refinement of a float32 dual direction.

        Residuals of the primal equation in float64 (the sensitivities and
        the right-hand side too: the ill-conditioned system amplifies their
        float32 rounding as much as that of the solve), corrections from the
        float32 Cholesky factor; None when it has not converged after
        :data:`MAX_MIXED_REFINEMENTS` rounds (the caller then frees the
        float32 system and factor and takes a float64 step).
        """
        lin64 = self._float64()
        r64 = lin64.gradient
        d64 = direction.astype(np.float64)
        previous = None
        for _ in range(MAX_MIXED_REFINEMENTS):
            correction = self._dual_solve(L, lin64.primal_residual(d64, r64),
                                          lin64)[0]
            d64 += correction
            size = _norm(correction) / _norm(d64)
            # Stop when this correction, or the next one predicted from the
            # observed contraction (size / previous < 1/2), is below float32
            # precision.
            predicted = (size * size / previous
                         if previous and size < 0.5 * previous else size)
            if min(size, predicted) <= MIXED_CONVERGED:
                return d64.astype(self.theta.dtype)
            previous = size
        return None

    def _float64(self):
        """float64 copies of a float32 linearization, made once per step
        (float32 → float64 is exact, so its gradient is the float32 one's
        float64 sum)."""
        if self._lin64 is None:
            self._lin64 = self.astype(np.float64)
        return self._lin64

    def _float64_direction(self):
        """The dual direction computed entirely in float64, in θ's dtype."""
        return self._float64().direction("dual").astype(self.theta.dtype)


def _diagonal(system):
    """A writable view of a square array's diagonal (a strided slice of
    the C-order array: ``.flat`` indexing cost 3 us at order 128)."""
    if system.flags.c_contiguous:
        return system.reshape(-1)[:: system.shape[0] + 1]
    return np.einsum("ii->i", system)


def _norm(x):
    """``np.linalg.norm`` of a real vector, as it computes it
    (``sqrt(x·x)`` in x's dtype) without its argument handling."""
    return np.sqrt(x.dot(x))


def _finite(direction):
    if not all_finite(direction):
        raise StepFailure("the Gauss-Newton direction is not finite")
    return direction
