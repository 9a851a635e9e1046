"""Losses expressed through the network output Φ (SPEC section 2).

For a batch of outputs ``F`` (b × K), targets ``Y`` (b × K) and normalised
sample weights ``s`` (Σ s = 1) each loss gives

* the risk ``R = Σ_k s_k ℓ(F_k, Y_k)``,
* the residual ``e_k = ∂R/∂F_k``,
* a factor ``A_k`` (K × K) of the curvature block ``Q_k = ∂²R/∂F_k² = A_k A_kᵀ``.

The Gauss-Newton step only ever needs ``e`` and ``A`` (the factorisation
turns the possibly non-symmetric dual system into an SPD one).
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


class SquaredError:
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

    def residual_and_factor(self, F, Y, s):
        b, K = F.shape
        residual = (F - Y) * (s / K)[:, None]
        factor = np.zeros((b, K, K), dtype=F.dtype)
        idx = np.arange(K)
        factor[:, idx, idx] = np.sqrt(s / K)[:, None]
        return residual, factor


class LogLoss:
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

    def residual_and_factor(self, F, Y, s):
        prob = self.probabilities(F)
        residual = (prob - Y) * s[:, None]
        if F.shape[1] == 1:
            factor = np.sqrt(s * prob[:, 0] * (1.0 - prob[:, 0]))[:, None, None]
            return residual, factor.astype(F.dtype, copy=False)
        sqrt_prob = np.sqrt(prob)
        factor = -prob[:, :, None] * sqrt_prob[:, None, :]
        K = F.shape[1]
        idx = np.arange(K)
        factor[:, idx, idx] += sqrt_prob
        factor *= np.sqrt(s)[:, None, None]
        return residual, factor


class PoissonLoss:
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

    def residual_and_factor(self, F, Y, s):
        b, K = F.shape
        lam = self.mean(F)
        residual = (lam - Y) * (s / K)[:, None]
        factor = np.zeros((b, K, K), dtype=F.dtype)
        idx = np.arange(K)
        factor[:, idx, idx] = np.sqrt(lam * (s / K)[:, None])
        return residual, factor


LOSSES = {"squared_error": SquaredError, "log_loss": LogLoss,
          "poisson": PoissonLoss}
