"""Losses expressed through the network output Φ.

For a batch of outputs ``F`` (b × K), targets ``Y`` (b × K) and normalised
sample weights ``s`` (Σ s = 1) each loss gives

* the risk ``R = Σ_k s_k ℓ(F_k, Y_k)``,
* the residual ``e_k = ∂R/∂F_k``,
* a factor ``A_k`` (K × K) of the curvature block ``Q_k = ∂²R/∂F_k² = A_k A_kᵀ``.

The Gauss-Newton step only ever needs ``e`` and ``A`` (the factorisation
turns the possibly non-symmetric dual system into an SPD one). Every factor
here is a diagonal minus a rank-one matrix,

    ``A_k = diag(a_k) − u_k w_kᵀ``,

(``u = w = 0`` but for the softmax), and :meth:`residual_and_parts` gives
``(a, u, w)``: the structured Gram kernels apply ``A`` in O(K²) per pair of
rows instead of O(K³), and the sensitivities ``V A_k`` in O(K n) instead of
O(K² n). ``residual_and_factor`` is the dense ``A`` built from the same parts.
"""

import numpy as np
from scipy.special import expit, log_expit, xlogy


# Plain NumPy softmax / log-sum-exp: scipy.special's versions go through its
# array-API dispatch, which cost ~0.3-0.5 ms a call, 10-20 % of a small
# mini-batch step (profile of issue 8: letter, batch 4-9).
def logsumexp(F, axis=1):
    top = F.max(axis=axis, keepdims=True)
    out = np.log(np.exp(F - top).sum(axis=axis, keepdims=True)) + top
    return np.squeeze(out, axis=axis)


def softmax(F, axis=1):
    e = np.exp(F - F.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


class FactorParts:
    """The curvature factor ``A_k = diag(a_k) − u_k w_kᵀ`` of a batch.

    Parameters
    ----------
    a, u, w : ndarray of shape (b, K)
        The diagonal and the rank-one part (``u = w = 0`` for the diagonal
        factors of the squared error, the Poisson loss and the sigmoid).
    """

    def __init__(self, a, u, w):
        self.a = a
        self.u = u
        self.w = w

    @classmethod
    def diagonal(cls, a):
        """``A_k = diag(a_k)``."""
        zero = np.zeros_like(a)
        return cls(a, zero, zero)

    def dense(self):
        """``A`` of shape (b, K, K), ``A[k, e, c] = δ_ec a_kc − u_ke w_kc``."""
        factor = -self.u[:, :, None] * self.w[:, None, :]
        idx = np.arange(self.a.shape[1])
        factor[:, idx, idx] += self.a
        return factor

    def astype(self, dtype):
        """The parts in ``dtype``."""
        return FactorParts(*(np.asarray(x, dtype=dtype) for x in (self.a, self.u,
                                                                  self.w)))


# Largest |c_k| for which RankFactor.coefficients offers the solve without
# the explicit gradient (beyond it the slope's rᵀd = cᵀJ̃d loses digits).
MAX_COEFFICIENT = 1e6


class RankFactor:
    """A curvature factor of rank R per row: ``Q̃_k = F_k F_kᵀ``, F_k of shape
    (K, R).

    The reduced output curvatures (``curvature="true_vs_rest"``) have R = 1,
    which shrinks the dual system from b·K to b rows; the exact factor, made
    dense, is the case R = K (``F_k = A_k``).

    Parameters
    ----------
    F : ndarray of shape (b, K, R)
    """

    def __init__(self, F):
        self.F = F

    @property
    def rank(self):
        """R, the columns per row (rows of J̃ per sample)."""
        return self.F.shape[2]

    @classmethod
    def from_parts(cls, parts):
        """The exact factor ``A_k`` of :class:`FactorParts` as a rank-K factor."""
        return cls(np.ascontiguousarray(parts.dense()))

    def astype(self, dtype):
        """The factor in ``dtype``."""
        return RankFactor(np.asarray(self.F, dtype=dtype))

    def coefficients(self, residual):
        """``c`` with ``e_k = F_k c_k`` for every row, or None.

        For a factor of rank one whose columns span the residual (the
        true-vs-rest factor, every one-output loss) the gradient is
        ``Jᵀ e = J̃ᵀ c``, which saves the step a Jacobian product
        (``Linearization.direction``). None when a row's residual is not in
        the span (a saturated probability whose factor underflowed).
        """
        if self.rank != 1:
            return None
        f = self.F[:, :, 0]
        ff = np.einsum("kc,kc->k", f, f)
        fe = np.einsum("kc,kc->k", f, residual)
        c = np.divide(fe, ff, out=np.zeros_like(fe), where=ff > 0)
        scale = np.abs(residual).max(initial=0.0)
        if np.abs(f * c[:, None] - residual).max(initial=0.0) > 1e-10 * scale:
            return None
        if np.abs(c).max(initial=0.0) > MAX_COEFFICIENT:
            # a confidently wrong row (π_y tiny): c_k ~ sqrt(s q / π_y) would
            # cost the line search's slope its digits
            return None
        return c[:, None]


class _FactoredLoss:
    """A loss whose curvature factor comes as :class:`FactorParts`."""

    def residual_and_factor(self, F, Y, s):
        """``e`` and the dense factor ``A`` (b, K, K)."""
        residual, parts = self.residual_and_parts(F, Y, s)
        return residual, parts.dense()

    def residual_and_curvature(self, F, Y, s, curvature="exact"):
        """``e`` and the factor of the output curvature the step uses.

        ``"exact"`` gives the :class:`FactorParts` of ``Q_k = A_k A_kᵀ``; a
        reduced form gives a :class:`RankFactor`. A loss without a reduced form
        (one output, the squared error, Poisson) keeps its exact factor.
        """
        if not self.reduces(curvature, F.shape[1]):
            return self.residual_and_parts(F, Y, s)
        return getattr(self, "reduced_" + curvature)(F, Y, s)

    def reduces(self, curvature, n_outputs):
        """Whether ``curvature`` replaces this loss's exact Q by a factor of
        rank one per row (a reduced form exists and there are several
        outputs)."""
        return (curvature != "exact" and n_outputs > 1
                and hasattr(self, "reduced_" + curvature))


class SquaredError(_FactoredLoss):
    """Squared error ``ℓ = ½ (1/K) ‖F − y‖²``; ``Q_k = (s_k/K) I``."""

    name = "squared_error"

    def risk(self, F, Y, s):
        K = F.shape[1]
        diff = F - Y
        return 0.5 * float(np.dot(s, np.einsum("ij,ij->i", diff, diff))) / K

    def constant_risk(self, Y, s):
        """Risk of the best constant prediction (the weighted mean of Y)."""
        diff = Y - s @ Y
        return 0.5 * float(np.dot(s, np.einsum("ij,ij->i", diff, diff))) / Y.shape[1]

    def residual_and_parts(self, F, Y, s):
        b, K = F.shape
        residual = (F - Y) * (s / K)[:, None]
        a = np.repeat(np.sqrt(s / K).astype(F.dtype, copy=False)[:, None], K, axis=1)
        return residual, FactorParts.diagonal(a)


class LogLoss(_FactoredLoss):
    """Cross-entropy of softmax(F) (K ≥ 2 logits) or sigmoid(F) (one logit).

    Softmax: ``Q_k = s_k (diag π_k − π_k π_kᵀ)`` factored as
    ``A_k = sqrt(s_k) (diag(sqrt π_k) − π_k sqrt(π_k)ᵀ)`` (uses Σ π = 1).
    Sigmoid: ``Q_k = s_k π_k (1 − π_k)``.
    """

    name = "log_loss"

    def risk(self, F, Y, s):
        if F.shape[1] == 1:
            f, y = F[:, 0], Y[:, 0]
            # −[y log σ(f) + (1−y) log σ(−f)], stable for large |f|
            losses = -(y * log_expit(f) + (1.0 - y) * log_expit(-f))
        else:
            losses = logsumexp(F, axis=1) - np.einsum("ij,ij->i", F, Y)
        return float(np.dot(s, losses))

    def constant_risk(self, Y, s):
        """Risk of the best constant prediction (the weighted class priors)."""
        prior = s @ Y
        if Y.shape[1] == 1:
            prior = np.array([1.0 - prior[0], prior[0]])
        prior = prior[prior > 0]
        return float(-np.dot(prior, np.log(prior)))

    def probabilities(self, F):
        if F.shape[1] == 1:
            return expit(F)
        return softmax(F, axis=1)

    def residual_and_parts(self, F, Y, s):
        prob = self.probabilities(F)
        residual = (prob - Y) * s[:, None]
        if F.shape[1] == 1:
            a = np.sqrt(s * prob[:, 0] * (1.0 - prob[:, 0]))[:, None]
            return residual, FactorParts.diagonal(a.astype(F.dtype, copy=False))
        # A_k = sqrt(s_k) (diag(sqrt π_k) − π_k sqrt(π_k)ᵀ)
        sqrt_prob = np.sqrt(prob)
        root_s = np.sqrt(s)[:, None]
        return residual, FactorParts(sqrt_prob * root_s, prob * root_s, sqrt_prob)

    def reduced_true_vs_rest(self, F, Y, s):
        """``e`` and the true-class-versus-rest factor of the softmax curvature.

        With ``y`` the true class, ``q = Σ_{c≠y} π_c = 1 − π_y`` and
        ``r = π_{−y} / q`` (the rest's distribution, zero at y),

            ``diag π − π πᵀ = π_y q (e_y − r)(e_y − r)ᵀ + q (diag r − r rᵀ)``;

        the first term (the curvature of the margin between the true class
        and the rest) is kept: ``F_k = sqrt(s_k π_y q) (e_y − r)``, one column
        per row. The dropped term is positive semidefinite, so the step's
        curvature is a lower bound of the exact one; the gradient
        ``π − e_y = −q (e_y − r)`` lies in the span of F.
        """
        prob = self.probabilities(F)
        residual = (prob - Y) * s[:, None]
        rows = np.arange(F.shape[0])
        y = Y.argmax(axis=1)
        p_y = prob[rows, y]
        rest = prob.copy()
        rest[rows, y] = 0.0
        q = rest.sum(axis=1)  # 1 − π_y without its cancellation
        root_q = np.sqrt(q)
        # −π_c sqrt(s π_y / q) as (π_c / sqrt q) sqrt(s π_y): π_c ≤ q, no overflow
        column = np.divide(rest, root_q[:, None], out=np.zeros_like(rest),
                           where=root_q[:, None] > 0)
        column *= -np.sqrt(s * p_y)[:, None]
        column[rows, y] = np.sqrt(s * p_y) * root_q
        return residual, RankFactor(column[:, :, None].astype(F.dtype, copy=False))


class PoissonLoss(_FactoredLoss):
    """Half Poisson deviance with the log link, averaged over the K outputs.

    The network output Φ is the log of the predicted mean, ``λ = exp(Φ)``;
    per sample

        ``ℓ = (1/K) Σ_c [exp(Φ_c) − y_c Φ_c + y_c log y_c − y_c]``,

    the half Poisson deviance of scikit-learn's ``MLPRegressor(loss="poisson")``
    and ``PoissonRegressor`` (averaged, not summed, over outputs: the squared
    error's convention here, so that τ keeps its meaning when K changes; the
    two coincide for one output). The constant ``y log y − y`` makes a perfect
    prediction cost zero and does not change the step. Residual
    ``e_k = s_k (exp(Φ_k) − y_k) / K``, curvature ``Q_k = diag(s_k exp(Φ_k) / K)``
    factored as ``A_k = diag(sqrt(s_k exp(Φ_k) / K))``.

    Overflow: ``exp(Φ)`` is not clipped (a clipped exponential would make
    the risk, residual and curvature inconsistent). Where it overflows
    (``Φ > 709`` in float64, ``Φ > 88`` in float32) the risk is ``inf``
    without a floating-point warning: a line-search trial there is rejected
    (halved), and a point where the risk is infinite ends the fit as
    diverged with the last finite parameters. Targets must be non-negative
    (the estimator checks).
    """

    name = "poisson"

    @staticmethod
    def mean(F):
        """The predicted mean ``exp(Φ)`` (``inf`` where it overflows)."""
        with np.errstate(over="ignore"):
            return np.exp(F)

    def risk(self, F, Y, s):
        K = F.shape[1]
        with np.errstate(over="ignore", invalid="ignore"):
            losses = self.mean(F) - Y * F + (xlogy(Y, Y) - Y)
            return float(np.dot(s, losses.sum(axis=1))) / K

    def constant_risk(self, Y, s):
        """Risk of the best constant prediction (the weighted mean of Y)."""
        mean = s @ Y
        losses = mean - xlogy(Y, mean) + xlogy(Y, Y) - Y
        return float(np.dot(s, losses.sum(axis=1))) / Y.shape[1]

    def residual_and_parts(self, F, Y, s):
        K = F.shape[1]
        lam = self.mean(F)
        residual = (lam - Y) * (s / K)[:, None]
        return residual, FactorParts.diagonal(np.sqrt(lam * (s / K)[:, None]))


class MultilabelLogLoss(_FactoredLoss):
    """Binary cross-entropy of K independent sigmoids (multilabel targets).

    Each output is the logit of one label, ``π_kc = σ(F_kc)``, and the labels
    are independent: per sample ``ℓ = Σ_c BCE(F_c, y_c)`` (summed over the
    labels, as scikit-learn's ``MLPClassifier`` does for indicator targets).
    Residual ``e_kc = s_k (π_kc − y_kc)``, curvature
    ``Q_k = s_k diag(π_k (1 − π_k))`` factored as
    ``A_k = diag(sqrt(s_k π_k (1 − π_k)))``.
    """

    name = "multilabel_log_loss"

    def risk(self, F, Y, s):
        losses = -(Y * log_expit(F) + (1.0 - Y) * log_expit(-F))
        return float(np.dot(s, losses.sum(axis=1)))

    def constant_risk(self, Y, s):
        """Risk of the best constant prediction (each label's weighted rate)."""
        rate = np.clip(s @ Y, 0.0, 1.0)
        return float(-np.sum(xlogy(rate, rate) + xlogy(1.0 - rate, 1.0 - rate)))

    def probabilities(self, F):
        return expit(F)

    def residual_and_parts(self, F, Y, s):
        prob = expit(F)
        residual = (prob - Y) * s[:, None]
        a = np.sqrt(s[:, None] * prob * (1.0 - prob))
        return residual, FactorParts.diagonal(a.astype(F.dtype, copy=False))


LOSSES = {"squared_error": SquaredError, "log_loss": LogLoss,
          "poisson": PoissonLoss, "multilabel_log_loss": MultilabelLogLoss}
