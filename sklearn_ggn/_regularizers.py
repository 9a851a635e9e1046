"""Separable regularizers ``g(θ) = τ Σ_i ḡ(θ_i)`` with their GSC constants.

Each class gives ḡ, ḡ' and ḡ'' element-wise in forms free of
cancellation and of 0/0 at t = 0, and the self-concordance constant ``M_g``
of ``g`` used by the step-size rule ``α = ᾱ / (1 + M_g η)``.
"""

import math

import numpy as np

from ._config import NUMBA_OPTIONS, NUMBA_OPTIONS_REDUCTION, njit

# Regularizer codes for the fused kernels (one compiled signature per dtype).
_PSEUDO_HUBER, _OSTROVSKII_BACH, _L2 = 0, 1, 2


_INLINE = {**NUMBA_OPTIONS, "inline": "always"}


# The formulas, once per regularizer and element: the passes below loop over
# them (the regularizer code is loop-invariant, so LLVM hoists the branch and
# vectorizes each loop). ``c = (μ, μ², 1, 2, 4)`` in the precision of the
# arithmetic (θ's in the step, float64 elsewhere).
@njit(**_INLINE)
def _constants(mu, one):
    """``(μ, μ², 1, 2, 4)`` in the precision of ``one``."""
    ft = type(one)
    return ft(mu), ft(mu * mu), one, ft(2.0), ft(4.0)


@njit(**_INLINE)
def _value(x, code, c):
    """ḡ(x) in the precision of x and c. Cancellation-free forms:
    ``sqrt(μ²+x²) − μ = x²/(sqrt(μ²+x²) + μ)`` and, with
    ``s = sqrt(μ² + 4x²)``, ``s − μ = 4x²/(s + μ)``,
    ``ln((s + μ)/(2μ)) = log1p((s − μ)/(2μ))``."""
    mu, mu2, one, two, four = c
    if code == _PSEUDO_HUBER:
        return x * x / (np.sqrt(mu2 + x * x) + mu)
    if code == _OSTROVSKII_BACH:
        s = np.sqrt(mu2 + four * x * x)
        s_minus_mu = four * x * x / (s + mu)
        return (s_minus_mu - mu * np.log1p(s_minus_mu / (two * mu))) / two
    return x * x / two


@njit(**_INLINE)
def _slope_and_inverse_curvature(x, code, c):
    """``(ḡ'(x), 1/ḡ''(x))`` in the precision of x and c: pseudo-Huber
    ``(x/sqrt(μ²+x²), (μ²+x²)^{3/2}/μ²)``, Ostrovskii-Bach
    ``(2x/(s+μ), s(s+μ)/(2μ))`` with ``s = sqrt(μ²+4x²)``, ℓ2 ``(x, 1)``."""
    mu, mu2, one, two, four = c
    if code == _PSEUDO_HUBER:
        q = mu2 + x * x
        root = np.sqrt(q)
        return x / root, q * root / mu2
    if code == _OSTROVSKII_BACH:
        s = np.sqrt(mu2 + four * x * x)
        return two * x / (s + mu), s * (s + mu) / (two * mu)
    return x, one


@njit(**NUMBA_OPTIONS)
def _derivatives_kernel(t, code, mu, grad, hess):
    """ḡ'(t) and ḡ''(t) in one pass over θ (float64 arithmetic)."""
    c = _constants(mu, 1.0)
    for i in range(t.size):
        slope, inverse = _slope_and_inverse_curvature(np.float64(t[i]), code, c)
        grad[i] = slope
        hess[i] = 1.0 / inverse


@njit(**NUMBA_OPTIONS_REDUCTION)
def _step_quantities_kernel(t, code, mu, tau, damping, grad, inv_curv):
    """∇g = τ ḡ'(θ), D = 1/(damping · ḡ''(θ)) and η² = ∇gᵀ D ∇g in one pass.

    Element-wise arithmetic in θ's precision (float32 runs twice as many
    SIMD lanes), η² accumulated in float64.
    """
    ft = t.dtype.type
    c = _constants(mu, ft(1.0))
    tau_, inv_scale = ft(tau), ft(1.0 / damping)
    eta_sq = 0.0
    for i in range(t.size):
        slope, inverse = _slope_and_inverse_curvature(t[i], code, c)
        g = tau_ * slope
        d = inv_scale * inverse
        grad[i] = g
        inv_curv[i] = d
        eta_sq += np.float64(g * g * d)
    return eta_sq


@njit(**NUMBA_OPTIONS_REDUCTION)
def _value_sum_kernel(t, code, mu):
    """Σ_i ḡ(θ_i) in one pass, summed in float64: the pseudo-Huber terms in
    θ's precision (a float32 fit's risk is a float32 sum too; relative error
    ~1e-7), the rarer regularizers in float64."""
    total = 0.0
    if code == _PSEUDO_HUBER:
        c = _constants(mu, t.dtype.type(1.0))
        for i in range(t.size):
            total += np.float64(_value(t[i], code, c))
    else:
        c = _constants(mu, 1.0)
        for i in range(t.size):
            total += _value(np.float64(t[i]), code, c)
    return total


@njit(**NUMBA_OPTIONS)
def _values_kernel(t, code, mu, out):
    """ḡ(t_i) for every element (float64)."""
    c = _constants(mu, 1.0)
    for i in range(t.size):
        out[i] = _value(np.float64(t[i]), code, c)


class _GSCRegularizer:
    """Shared constant of a generalized self-concordant smoother.

    ``M_g = M_h p^{(3−ν)/2} μ^{ν/2−2}`` for ``0 < ν ≤ 3`` and
    ``M_g = M_h μ^{4−3ν/2}`` for ``ν > 3``.
    """

    def __init__(self, mu):
        self.mu = float(mu)

    def derivatives(self, t):
        """Return ``(ḡ'(t), ḡ''(t))`` (float64) in one fused pass."""
        t = np.ascontiguousarray(t).ravel()
        grad = np.empty(t.shape, dtype=np.float64)
        hess = np.empty(t.shape, dtype=np.float64)
        _derivatives_kernel(t, self._code, self.mu, grad, hess)
        return grad, hess

    def step_quantities(self, theta, tau, damping):
        """``(∇g, D, η)`` for the step: ``∇g = τ ḡ'(θ)``,
        ``D = 1 / (damping · ḡ''(θ))`` and ``η = sqrt(∇gᵀ D ∇g)``,
        in one fused pass, computed in float64 and returned in θ's dtype
        (float32 or float64)."""
        theta = np.ascontiguousarray(theta).ravel()
        dtype = np.float32 if theta.dtype == np.float32 else np.float64
        grad = np.empty(theta.shape, dtype=dtype)
        inv_curv = np.empty(theta.shape, dtype=dtype)
        eta_sq = _step_quantities_kernel(theta, self._code, self.mu, float(tau),
                                         float(damping), grad, inv_curv)
        return grad, inv_curv, math.sqrt(eta_sq)

    def value_sum(self, t):
        """``Σ_i ḡ(t_i)`` in one fused pass."""
        return _value_sum_kernel(np.ascontiguousarray(t).ravel(), self._code,
                                 self.mu)

    def value(self, t):
        """ḡ(t), element-wise (float64)."""
        t = np.asarray(t)
        flat = np.ascontiguousarray(t).ravel()
        out = np.empty(flat.shape, dtype=np.float64)
        _values_kernel(flat, self._code, self.mu, out)
        return out.reshape(t.shape)

    def gradient(self, t):
        """ḡ'(t), element-wise."""
        return self.derivatives(t)[0]

    def hessian(self, t):
        """ḡ''(t), element-wise: the diagonal of ∇²ḡ."""
        return self.derivatives(t)[1]

    def self_concordance_constant(self, n_params):
        """Return ``M_g`` for ``n_params`` regularized parameters."""
        if self.nu is None:
            return 0.0
        if self.nu <= 3:
            return self.M_h * n_params ** ((3 - self.nu) / 2) * self.mu ** (
                self.nu / 2 - 2
            )
        return self.M_h * self.mu ** (4 - 1.5 * self.nu)


class PseudoHuber(_GSCRegularizer):
    """Pseudo-Huber smoothing of |t|: ``ḡ(t) = sqrt(μ² + t²) − μ``.

    Attributes
    ----------
    nu : float
        2.6, the GSC order.
    M_h : float
        2, the GSC constant of the scalar smoother.
    """

    name = "pseudo_huber"
    _code = _PSEUDO_HUBER
    nu = 2.6
    M_h = 2.0


class OstrovskiiBach(_GSCRegularizer):
    """Ostrovskii-Bach smoothing of |t| with ``s = sqrt(μ² + 4t²)``.

    ``ḡ(t) = (s − μ)/2 − (μ/2) ln((s + μ)/(2μ))``; ``ν = 3``, ``M_h = 2√2``.
    """

    name = "ostrovskii_bach"
    _code = _OSTROVSKII_BACH
    nu = 3.0
    M_h = 2.0 * np.sqrt(2.0)


class L2(_GSCRegularizer):
    """Squared ℓ2 penalty ``ḡ(t) = t²/2`` (``M_g = 0``; μ unused)."""

    name = "l2"
    _code = _L2
    nu = None
    M_h = 0.0


REGULARIZERS = {
    "pseudo_huber": PseudoHuber,
    "ostrovskii_bach": OstrovskiiBach,
    "l2": L2,
}
