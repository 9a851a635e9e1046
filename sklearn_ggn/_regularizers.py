"""Separable regularizers ``g(θ) = τ Σ_i ḡ(θ_i)`` with their GSC constants.

Each class gives ḡ, ḡ' and ḡ'' element-wise in forms free of
cancellation and of 0/0 at t = 0, and the self-concordance constant ``M_g``
of ``g`` used by the step-size rule ``α = ᾱ / (1 + M_g η)``.
"""

import math

import numpy as np
from numba import njit

from ._config import NUMBA_OPTIONS, NUMBA_OPTIONS_REDUCTION

# Regularizer codes for the fused kernels (one compiled signature per dtype).
_PSEUDO_HUBER, _OSTROVSKII_BACH, _L2 = 0, 1, 2


@njit(**NUMBA_OPTIONS)
def _derivatives_kernel(t, code, mu, grad, hess):
    """ḡ'(t) and ḡ''(t) in one pass over θ (float64 arithmetic)."""
    for i in range(t.size):
        x = np.float64(t[i])
        if code == _PSEUDO_HUBER:
            root = math.sqrt(mu * mu + x * x)
            grad[i] = x / root
            hess[i] = mu * mu / (root * root * root)
        elif code == _OSTROVSKII_BACH:
            s = math.sqrt(mu * mu + 4.0 * x * x)
            grad[i] = 2.0 * x / (s + mu)
            hess[i] = 2.0 * mu / (s * (s + mu))
        else:
            grad[i] = x
            hess[i] = 1.0


@njit(**NUMBA_OPTIONS_REDUCTION)
def _step_quantities_kernel(t, code, mu, tau, scale, grad, inv_curv):
    """∇g = τ ḡ'(θ), D = 1/(scale · ḡ''(θ)) and η² = ∇gᵀ D ∇g in one pass.

    Element-wise arithmetic in θ's precision (float32 runs twice as many
    SIMD lanes), η² accumulated in float64. One loop per regularizer (the
    branch hoisted out of the loop) and D written without a division
    (pseudo-Huber: 1/ḡ'' = (μ² + t²)^{3/2} / μ²), so that LLVM vectorizes.
    """
    ft = t.dtype.type
    eta_sq = 0.0
    if code == _PSEUDO_HUBER:
        mu2 = ft(mu * mu)
        c = ft(1.0 / (scale * mu * mu))
        tau_ = ft(tau)
        for i in range(t.size):
            x = t[i]
            q = mu2 + x * x
            root = np.sqrt(q)
            g = tau_ * x / root
            d = c * q * root
            grad[i] = g
            inv_curv[i] = d
            eta_sq += np.float64(g * g * d)
    elif code == _OSTROVSKII_BACH:
        mu_ = ft(mu)
        mu2 = ft(mu * mu)
        c = ft(1.0 / (2.0 * scale * mu))
        two_tau = ft(2.0 * tau)
        four = ft(4.0)
        for i in range(t.size):
            x = t[i]
            s = np.sqrt(mu2 + four * x * x)
            g = two_tau * x / (s + mu_)
            d = c * s * (s + mu_)
            grad[i] = g
            inv_curv[i] = d
            eta_sq += np.float64(g * g * d)
    else:
        d = ft(1.0 / scale)
        tau_ = ft(tau)
        for i in range(t.size):
            g = tau_ * t[i]
            grad[i] = g
            inv_curv[i] = d
            eta_sq += np.float64(g * g * d)
    return eta_sq


@njit(**NUMBA_OPTIONS_REDUCTION)
def _value_sum_kernel(t, code, mu):
    """Σ_i ḡ(θ_i) in one pass, summed in float64. The pseudo-Huber terms are
    evaluated in θ's precision (a float32 fit's risk is a float32 sum too;
    relative error ~1e-7), the rarer regularizers in float64. One loop per
    regularizer so that LLVM vectorizes it."""
    total = 0.0
    if code == _PSEUDO_HUBER:
        ft = t.dtype.type
        mu_ = ft(mu)
        mu2 = ft(mu * mu)
        for i in range(t.size):
            x = t[i]
            total += np.float64(x * x / (np.sqrt(mu2 + x * x) + mu_))
    elif code == _OSTROVSKII_BACH:
        for i in range(t.size):
            x = np.float64(t[i])
            s = math.sqrt(mu * mu + 4.0 * x * x)
            s_minus_mu = 4.0 * x * x / (s + mu)
            total += 0.5 * s_minus_mu - 0.5 * mu * math.log1p(s_minus_mu / (2.0 * mu))
    else:
        for i in range(t.size):
            x = np.float64(t[i])
            total += 0.5 * x * x
    return total


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

    def step_quantities(self, theta, tau, curvature_scale):
        """``(∇g, D, η)`` for the step: ``∇g = τ ḡ'(θ)``,
        ``D = 1 / (curvature_scale · ḡ''(θ))`` and ``η = sqrt(∇gᵀ D ∇g)``,
        in one fused pass, computed in float64 and returned in θ's dtype
        (float32 or float64)."""
        theta = np.ascontiguousarray(theta).ravel()
        dtype = np.float32 if theta.dtype == np.float32 else np.float64
        grad = np.empty(theta.shape, dtype=dtype)
        inv_curv = np.empty(theta.shape, dtype=dtype)
        eta_sq = _step_quantities_kernel(theta, self._code, self.mu, float(tau),
                                         float(curvature_scale), grad, inv_curv)
        return grad, inv_curv, math.sqrt(eta_sq)

    def value_sum(self, t):
        """``Σ_i ḡ(t_i)`` in one fused pass."""
        return _value_sum_kernel(np.ascontiguousarray(t).ravel(), self._code,
                                 self.mu)

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

    def value(self, t):
        mu = self.mu
        # sqrt(μ²+t²) − μ = t² / (sqrt(μ²+t²) + μ): no cancellation for small t
        return t * t / (np.hypot(mu, t) + mu)



class OstrovskiiBach(_GSCRegularizer):
    """Ostrovskii-Bach smoothing of |t| with ``s = sqrt(μ² + 4t²)``.

    ``ḡ(t) = (s − μ)/2 − (μ/2) ln((s + μ)/(2μ))``; ``ν = 3``, ``M_h = 2√2``.
    """

    name = "ostrovskii_bach"
    _code = _OSTROVSKII_BACH
    nu = 3.0
    M_h = 2.0 * np.sqrt(2.0)

    def value(self, t):
        mu = self.mu
        s = np.hypot(mu, 2.0 * t)
        # s − μ = 4t²/(s + μ);  ln((s+μ)/(2μ)) = log1p((s − μ)/(2μ))
        s_minus_mu = 4.0 * t * t / (s + mu)
        return 0.5 * s_minus_mu - 0.5 * mu * np.log1p(s_minus_mu / (2.0 * mu))



class L2(_GSCRegularizer):
    """Squared ℓ2 penalty ``ḡ(t) = t²/2`` (``M_g = 0``; μ unused)."""

    name = "l2"
    _code = _L2
    nu = None
    M_h = 0.0

    def value(self, t):
        return 0.5 * t * t



REGULARIZERS = {
    "pseudo_huber": PseudoHuber,
    "ostrovskii_bach": OstrovskiiBach,
    "l2": L2,
}
