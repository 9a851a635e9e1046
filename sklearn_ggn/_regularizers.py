"""Separable regularizers ``g(θ) = τ Σ_i ḡ(θ_i)`` with their GSC constants.

Each class gives ḡ, ḡ' and ḡ'' element-wise (SPEC section 3) in forms free of
cancellation and of 0/0 at t = 0, and the self-concordance constant ``M_g``
of ``g`` used by the step-size rule ``α = ᾱ / (1 + M_g η)``.
"""

import numpy as np


class _GSCRegularizer:
    """Shared constant of a generalized self-concordant smoother.

    ``M_g = M_h p^{(3−ν)/2} μ^{ν/2−2}`` for ``0 < ν ≤ 3`` and
    ``M_g = M_h μ^{4−3ν/2}`` for ``ν > 3``.
    """

    def __init__(self, mu):
        self.mu = float(mu)

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
    nu = 2.6
    M_h = 2.0

    def value(self, t):
        mu = self.mu
        # sqrt(μ²+t²) − μ = t² / (sqrt(μ²+t²) + μ): no cancellation for small t
        return t * t / (np.hypot(mu, t) + mu)

    def derivatives(self, t):
        """Return ``(ḡ'(t), ḡ''(t))`` in one pass."""
        mu = self.mu
        root = np.hypot(mu, t)
        grad = t / root
        hess = (mu * mu) / (root * root * root)
        return grad, hess


class OstrovskiiBach(_GSCRegularizer):
    """Ostrovskii-Bach smoothing of |t| with ``s = sqrt(μ² + 4t²)``.

    ``ḡ(t) = (s − μ)/2 − (μ/2) ln((s + μ)/(2μ))``; ``ν = 3``, ``M_h = 2√2``.
    """

    name = "ostrovskii_bach"
    nu = 3.0
    M_h = 2.0 * np.sqrt(2.0)

    def value(self, t):
        mu = self.mu
        s = np.hypot(mu, 2.0 * t)
        # s − μ = 4t²/(s + μ);  ln((s+μ)/(2μ)) = log1p((s − μ)/(2μ))
        s_minus_mu = 4.0 * t * t / (s + mu)
        return 0.5 * s_minus_mu - 0.5 * mu * np.log1p(s_minus_mu / (2.0 * mu))

    def derivatives(self, t):
        mu = self.mu
        s = np.hypot(mu, 2.0 * t)
        grad = 2.0 * t / (s + mu)
        hess = 2.0 * mu / (s * (s + mu))
        return grad, hess


class L2(_GSCRegularizer):
    """Squared ℓ2 penalty ``ḡ(t) = t²/2`` (``M_g = 0``; μ unused)."""

    name = "l2"
    nu = None
    M_h = 0.0

    def value(self, t):
        return 0.5 * t * t

    def derivatives(self, t):
        return t.copy(), np.ones_like(t)


REGULARIZERS = {
    "pseudo_huber": PseudoHuber,
    "ostrovskii_bach": OstrovskiiBach,
    "l2": L2,
}
