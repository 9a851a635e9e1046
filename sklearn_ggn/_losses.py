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

import math

import numpy as np
from scipy.special import expit, xlogy

from ._activations import exp_nonpositive
from ._config import NUMBA_OPTIONS, njit

# ----------------------------------------------------------------- kernels
# A loss is one numba function of a batch, ``fn(F, Y, s, e, a, u, w,
# parts)`` (F, Y, e, a, u, w of shape (b, K) and s of shape (b,), all in F's
# dtype): with ``parts`` False it returns the risk ``Σ_k s_k ℓ(F_k, Y_k)``
# (summed in float64); with ``parts`` True it writes the residual
# ``e_k = s_k ∂ℓ/∂F_k`` and the curvature factor's parts
# ``A_k = diag(a_k) − u_k w_kᵀ`` (u and w arrive zeroed) and returns 0.
# :func:`register_loss` makes the function a loss; the step calls it from
# Python on arrays it allocates, so a loss compiles only its own loop, once
# per dtype, on first use.


@njit(**NUMBA_OPTIONS)
def _log_expit(x):
    """``log σ(x)`` without overflow."""
    if x >= 0:
        return -math.log1p(exp_nonpositive(-x))
    return x - math.log1p(exp_nonpositive(x))


@njit(**NUMBA_OPTIONS)
def _expit(x):
    """``σ(x)`` from an exponential of a non-positive argument."""
    if x >= 0:
        return 1.0 / (1.0 + exp_nonpositive(-x))
    z = exp_nonpositive(x)
    return z / (1.0 + z)


@njit(**NUMBA_OPTIONS)
def squared_error_fn(F, Y, s, e, a, u, w, parts):
    """``ℓ = ½ (1/K) ‖F − y‖²``, ``e = s (F − y)/K``, ``A = sqrt(s/K) I``."""
    b, K = F.shape
    total = 0.0
    for k in range(b):
        if not parts:
            acc = 0.0
            for c in range(K):
                diff = np.float64(F[k, c]) - Y[k, c]
                acc += diff * diff
            total += s[k] * (acc * (0.5 / K))
            continue
        for c in range(K):
            e[k, c] = (F[k, c] - Y[k, c]) * (s[k] / K)
            a[k, c] = math.sqrt(s[k] / K)
    return total


@njit(**NUMBA_OPTIONS)
def _sigmoids(F, Y, s, e, a, parts):
    """Independent sigmoids: ``ℓ = Σ_c BCE(F_c, y_c)``, ``e = s (π − y)``,
    ``a = sqrt(s π (1 − π))``."""
    b, K = F.shape
    total = 0.0
    for k in range(b):
        if not parts:
            acc = 0.0
            for c in range(K):
                acc -= (Y[k, c] * _log_expit(F[k, c])
                        + (1.0 - Y[k, c]) * _log_expit(-F[k, c]))
            total += s[k] * acc
            continue
        for c in range(K):
            prob = _expit(F[k, c])
            e[k, c] = (prob - Y[k, c]) * s[k]
            a[k, c] = math.sqrt(s[k] * prob * (1.0 - prob))
    return total


@njit(**NUMBA_OPTIONS)
def _softmax_terms(F, k, out):
    """``out[c] = exp(F_kc − max F_k)`` (a SIMD loop in float32) and
    ``(max F_k, Σ_c out[c])``, the sum in float64 in the order of c."""
    K = F.shape[1]
    top = F[k, 0]
    for c in range(1, K):
        if F[k, c] > top:  # (max(top, F[k, c]), no builtin overload to compile)
            top = F[k, c]
    for c in range(K):
        out[c] = exp_nonpositive(F[k, c] - top)
    total = 0.0
    for c in range(K):
        total += out[c]
    return top, total


@njit(**NUMBA_OPTIONS)
def log_loss_fn(F, Y, s, e, a, u, w, parts):
    """Softmax cross-entropy ``ℓ = log Σ_c exp(F_c) − F_y`` (K ≥ 2), with
    ``A = sqrt(s) (diag(sqrt π) − π sqrt(π)ᵀ)`` (uses Σ π = 1). One logit
    is the sigmoid's, :func:`multilabel_fn` (``LogLoss.batch_function``
    chooses), so that a softmax fit does not compile the sigmoid's loop."""
    b, K = F.shape
    total = 0.0
    ex = np.empty(K, dtype=F.dtype)
    for k in range(b):
        top, total_exp = _softmax_terms(F, k, ex)
        if not parts:
            dot = 0.0
            for c in range(K):
                dot += np.float64(F[k, c]) * Y[k, c]
            total += s[k] * (math.log(total_exp) + top - dot)
            continue
        root_s = math.sqrt(s[k])
        for c in range(K):
            prob = ex[c] / total_exp
            e[k, c] = (prob - Y[k, c]) * s[k]
            root = math.sqrt(prob)
            a[k, c] = root * root_s
            u[k, c] = prob * root_s
            w[k, c] = root
    return total


@njit(**NUMBA_OPTIONS)
def multilabel_fn(F, Y, s, e, a, u, w, parts):
    """K independent sigmoids (one per label)."""
    return _sigmoids(F, Y, s, e, a, parts)


@njit(**NUMBA_OPTIONS)
def _mean(F, k, c):
    """The Poisson mean ``exp(F[k, c])`` rounded to F's precision: it
    overflows to inf where ``np.exp`` does in that precision (Φ > 709 in
    float64, 88 in float32)."""
    return np.float64(F.dtype.type(math.exp(F[k, c])))


@njit(**NUMBA_OPTIONS)
def poisson_fn(F, Y, s, e, a, u, w, parts):
    """Half Poisson deviance averaged over outputs,
    ``ℓ = (1/K) Σ_c [exp(F_c) − y_c F_c + y_c log y_c − y_c]``,
    ``e = s (exp(F) − y)/K``, ``a = sqrt(s exp(F)/K)``."""
    b, K = F.shape
    total = 0.0
    for k in range(b):
        if not parts:
            acc = 0.0
            for c in range(K):
                y = np.float64(Y[k, c])
                ylogy = y * math.log(y) if y > 0 else 0.0
                acc += _mean(F, k, c) - y * F[k, c] + (ylogy - y)
            total += s[k] * (acc / K)
            continue
        for c in range(K):
            mean = _mean(F, k, c)
            e[k, c] = (mean - Y[k, c]) * (s[k] / K)
            a[k, c] = math.sqrt(mean * (s[k] / K))
    return total


@njit(**NUMBA_OPTIONS)
def _huber(F, Y, s, e, a, parts, epsilon):
    """Huber's loss of the residual ``r = F − y`` with threshold ε, averaged
    over outputs: ``ℓ = (1/K) Σ_c h(r_c)``, ``h(r) = ½ r²`` for ``|r| ≤ ε``
    and ``ε (|r| − ½ ε)`` beyond; ``e = s clip(r, −ε, ε)/K`` and
    ``a = sqrt(s/K) 1{|r| ≤ ε}`` (the Gauss-Newton curvature ``h'' = 1``
    inside, 0 outside: a 0/1 row weight)."""
    b, K = F.shape
    total = 0.0
    for k in range(b):
        if not parts:
            acc = 0.0
            for c in range(K):
                r = abs(np.float64(F[k, c]) - Y[k, c])
                acc += 0.5 * r * r if r <= epsilon else epsilon * (r - 0.5 * epsilon)
            total += s[k] * (acc / K)
            continue
        root = math.sqrt(s[k] / K)
        for c in range(K):
            r = np.float64(F[k, c]) - Y[k, c]
            e[k, c] = min(max(r, -epsilon), epsilon) * (s[k] / K)
            a[k, c] = root if abs(r) <= epsilon else 0.0
    return total


class _HuberFunction:
    """The Huber loss's batch function for one threshold ε: the cached loop
    :func:`_huber` with ε bound (a loss's function is called from Python, so
    a threshold needs no compilation of its own)."""

    def __init__(self, epsilon):
        self.epsilon = epsilon
        self.__doc__ = f"Huber's loss with threshold {epsilon!r} (see _huber)."

    def __call__(self, F, Y, s, e, a, u, w, parts):
        return _huber(F, Y, s, e, a, parts, self.epsilon)


_HUBER_FUNCTIONS = {}


def huber_fn(epsilon):
    """The Huber loss's batch function for the threshold ``epsilon`` (see
    :func:`register_loss` for the signature), one per value."""
    epsilon = float(epsilon)
    if epsilon not in _HUBER_FUNCTIONS:
        _HUBER_FUNCTIONS[epsilon] = _HuberFunction(epsilon)
    return _HUBER_FUNCTIONS[epsilon]


@njit(**NUMBA_OPTIONS)
def true_vs_rest_kernel(F, Y, s):
    """``e`` and the true-class-versus-rest column ``f_k`` of the softmax
    curvature (see :meth:`LogLoss.reduced_true_vs_rest`), in F's dtype."""
    b, K = F.shape
    e = np.empty((b, K), dtype=F.dtype)
    f = np.empty((b, K), dtype=F.dtype)
    prob = np.empty(K)
    for k in range(b):
        y = 0
        for c in range(1, K):
            if Y[k, c] > Y[k, y]:
                y = c
        total_exp = _softmax_terms(F, k, prob)[1]
        q = 0.0  # 1 − π_y without its cancellation
        for c in range(K):
            prob[c] /= total_exp
            e[k, c] = (prob[c] - Y[k, c]) * s[k]
            if c != y:
                q += prob[c]
        root_q = math.sqrt(q)
        # −π_c sqrt(s π_y / q) as (π_c / sqrt q) sqrt(s π_y): π_c ≤ q
        root = math.sqrt(s[k] * prob[y])
        for c in range(K):
            f[k, c] = -(prob[c] / root_q) * root if root_q > 0 else 0.0
        f[k, y] = root * root_q
    return e, f


# the unused e, a, u, w of a risk-only call, per dtype
_NONE = {"d": np.empty((0, 0)), "f": np.empty((0, 0), dtype=np.float32)}


def _kernel_arrays(F, Y, s):
    """The kernels' arguments: C-contiguous, in F's dtype."""
    F = np.ascontiguousarray(F)
    return (F, np.ascontiguousarray(Y, dtype=F.dtype),
            np.ascontiguousarray(s, dtype=F.dtype))


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
        """``A`` of shape (b, K, K), ``A[k, e, c] = δ_ec a_kc − u_ke w_kc``
        (C order, in the parts' common dtype)."""
        dtype = np.result_type(self.a, self.u, self.w)
        a, u, w = (np.asarray(x, dtype=dtype) for x in (self.a, self.u, self.w))
        b, K = a.shape
        A = np.multiply(np.negative(u)[:, :, None], w[:, None, :])
        A.reshape(b, K * K)[:, ::K + 1] += a  # the diagonals
        return A

    def astype(self, dtype):
        """The parts in ``dtype``."""
        return FactorParts(*(np.asarray(x, dtype=dtype) for x in (self.a, self.u,
                                                                  self.w)))


# Largest |c_k| for which RankFactor.coefficients offers the solve without
# the explicit gradient (beyond it the slope's rᵀd = cᵀJ̃d loses digits).
MAX_COEFFICIENT = 1e6


@njit(**NUMBA_OPTIONS)
def coefficients_kernel(f, e, c):
    """``c_k = f_k·e_k / f_k·f_k`` with ``e_k = c_k f_k`` for every row (f, e
    of shape (b, K)); returns False when a row's residual is not in the span
    of its column (a saturated probability whose factor underflowed), or a
    ``|c_k|`` exceeds :data:`MAX_COEFFICIENT` (a confidently wrong row,
    π_y tiny: ``c_k ~ sqrt(s q / π_y)`` would cost the slope ``rᵀd`` its
    digits)."""
    b, K = f.shape
    scale = 0.0
    for k in range(b):
        for j in range(K):
            if abs(e[k, j]) > scale:  # (max, no builtin overload to compile)
                scale = abs(e[k, j])
    for k in range(b):
        ff = 0.0
        fe = 0.0
        for j in range(K):
            ff += f[k, j] * f[k, j]
            fe += f[k, j] * e[k, j]
        c[k] = fe / ff if ff > 0 else 0.0
        if abs(c[k]) > MAX_COEFFICIENT:
            return False
        for j in range(K):
            if abs(f[k, j] * c[k] - e[k, j]) > 1e-10 * scale:
                return False
    return True


class RankFactor:
    """A curvature factor of rank R per row: ``Q̃_k = F_k F_kᵀ``, F_k of shape
    (K, R).

    The reduced output curvatures (``curvature="true_vs_rest"``) have R = 1,
    which shrinks the dual system from b·K to b rows; the exact factor, made
    dense, is the case R = K (``F_k = A_k``).

    Parameters
    ----------
    columns : ndarray of shape (b, K, R)
        ``F_k`` of every row (named apart from the outputs, which the loss
        functions call F).
    """

    def __init__(self, columns):
        self.columns = columns

    @property
    def rank(self):
        """R, the columns per row (rows of J̃ per sample)."""
        return self.columns.shape[2]

    @classmethod
    def from_parts(cls, parts):
        """The exact factor ``A_k`` of :class:`FactorParts` as a rank-K factor."""
        return cls(np.ascontiguousarray(parts.dense()))

    def astype(self, dtype):
        """The factor in ``dtype``."""
        return RankFactor(np.asarray(self.columns, dtype=dtype))

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
        f, e = (np.ascontiguousarray(self.columns[:, :, 0]),
                np.ascontiguousarray(residual))
        c = np.empty(f.shape[0], dtype=f.dtype)
        return c[:, None] if coefficients_kernel(f, e, c) else None


class _FactoredLoss:
    """A loss given by its batch function (``fn``, see :func:`register_loss`)."""

    fn = None

    def batch_function(self, n_outputs=None):
        """The loss's batch function (:func:`register_loss`) for
        ``n_outputs`` outputs."""
        return type(self).fn

    def risk(self, F, Y, s):
        """``R = Σ_k s_k ℓ(F_k, Y_k)``."""
        return self.batch_risk(*_kernel_arrays(F, Y, s))

    def batch_risk(self, F, Y, s):
        """:meth:`risk` of a step's own arrays (C-contiguous, one dtype)."""
        none = _NONE[F.dtype.char]
        return float(self.batch_function(F.shape[1])(F, Y, s, none, none, none,
                                                     none, False))

    def residual_and_parts(self, F, Y, s):
        """``e`` and the :class:`FactorParts` of ``A`` (``Q_k = A_k A_kᵀ``)."""
        F, Y, s = _kernel_arrays(F, Y, s)
        e = np.empty(F.shape, F.dtype)
        a = np.empty(F.shape, F.dtype)
        u = np.zeros(F.shape, F.dtype)
        w = np.zeros(F.shape, F.dtype)
        self.batch_function(F.shape[1])(F, Y, s, e, a, u, w, True)
        return e, FactorParts(a, u, w)

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
    """Squared error ``ℓ = ½ (1/K) ‖F − y‖²``; ``e_k = s_k (F_k − y_k)/K``,
    ``Q_k = (s_k/K) I`` factored as ``A_k = sqrt(s_k/K) I``."""

    def constant_risk(self, Y, s):
        """Risk of the best constant prediction (the weighted mean of Y)."""
        diff = Y - s @ Y
        return 0.5 * float(np.dot(s, np.einsum("ij,ij->i", diff, diff))) / Y.shape[1]


class LogLoss(_FactoredLoss):
    """Cross-entropy of softmax(F) (K ≥ 2 logits) or sigmoid(F) (one logit).

    Softmax: ``ℓ = log Σ_c exp(F_c) − F_y``, ``e_k = s_k (π_k − y_k)``,
    ``Q_k = s_k (diag π_k − π_k π_kᵀ)`` factored as
    ``A_k = sqrt(s_k) (diag(sqrt π_k) − π_k sqrt(π_k)ᵀ)`` (uses Σ π = 1).
    Sigmoid: ``Q_k = s_k π_k (1 − π_k)``.
    """

    def constant_risk(self, Y, s):
        """Risk of the best constant prediction (the weighted class priors)."""
        prior = s @ Y
        if Y.shape[1] == 1:
            prior = np.array([1.0 - prior[0], prior[0]])
        prior = prior[prior > 0]
        return float(-np.dot(prior, np.log(prior)))

    def batch_function(self, n_outputs=None):
        """:func:`log_loss_fn` (softmax), or :func:`multilabel_fn` (the
        sigmoid's) for one logit."""
        return multilabel_fn if n_outputs == 1 else log_loss_fn

    def probabilities(self, F):
        """The predicted probabilities: σ(F) for one logit, else softmax(F)."""
        if F.shape[1] == 1:
            return expit(F)
        e = np.exp(F - F.max(axis=1, keepdims=True))
        e /= e.sum(axis=1, keepdims=True)
        return e

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
        residual, column = true_vs_rest_kernel(*_kernel_arrays(F, Y, s))
        return residual, RankFactor(column[:, :, None])


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

    @staticmethod
    def mean(F):
        """The predicted mean ``exp(Φ)`` (``inf`` where it overflows)."""
        with np.errstate(over="ignore"):
            return np.exp(F)

    def constant_risk(self, Y, s):
        """Risk of the best constant prediction (the weighted mean of Y)."""
        mean = s @ Y
        losses = mean - xlogy(Y, mean) + xlogy(Y, Y) - Y
        return float(np.dot(s, losses.sum(axis=1))) / Y.shape[1]


class MultilabelLogLoss(_FactoredLoss):
    """Binary cross-entropy of K independent sigmoids (multilabel targets).

    Each output is the logit of one label, ``π_kc = σ(F_kc)``, and the labels
    are independent: per sample ``ℓ = Σ_c BCE(F_c, y_c)`` (summed over the
    labels, as scikit-learn's ``MLPClassifier`` does for indicator targets).
    Residual ``e_kc = s_k (π_kc − y_kc)``, curvature
    ``Q_k = s_k diag(π_k (1 − π_k))`` factored as
    ``A_k = diag(sqrt(s_k π_k (1 − π_k)))``.
    """

    def constant_risk(self, Y, s):
        """Risk of the best constant prediction (each label's weighted rate)."""
        rate = np.clip(s @ Y, 0.0, 1.0)
        return float(-np.sum(xlogy(rate, rate) + xlogy(1.0 - rate, 1.0 - rate)))

    def probabilities(self, F):
        """Each label's probability σ(F)."""
        return expit(F)


# the median absolute deviation of a Gaussian over its standard deviation,
# Φ⁻¹(3/4): MAD / MAD_NORMAL is the normal-consistent robust scale
MAD_NORMAL = 0.6744897501960817


def robust_target_statistics(Y, s, tiny):
    """``(center, scale)`` of each output for ``loss="huber"``: the weighted
    median and the normal-consistent weighted median absolute deviation,
    ``MAD / Φ⁻¹(3/4)`` (1.4826 MAD).

    Outlying targets move neither: with 5 % of the targets moved by 50
    standard deviations the standard deviation of y grows twelvefold and
    the MAD by 5 %. Huber's threshold ``epsilon`` is then in units of the
    targets' robust spread. Where more than half the targets are one value
    (the MAD is 0) the scale is the weighted standard deviation about the
    mean; a constant output keeps scale 1.

    Parameters
    ----------
    Y : ndarray of shape (n_samples, n_outputs)
    s : ndarray of shape (n_samples,)
        Normalized sample weights (sum 1); a weight counts as repeated rows
        (the inverted CDF's quantiles, no interpolation).
    tiny : ndarray of shape (n_outputs,)
        Scales at or below it count as zero (round-off of a constant).

    Returns
    -------
    center, scale : ndarray of shape (n_outputs,)
    """
    Y = np.asarray(Y, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    present = s > 0
    Y, s = Y[present], s[present]
    # (targets near the largest float: the statistics of Y / max|Y|)
    top = np.abs(Y).max(axis=0)
    top = np.where(np.isfinite(top) & (top > 0), top, 1.0)
    Z = Y / top
    weights = (None if np.all(s == s[0])
               else np.broadcast_to(s[:, None], Z.shape))
    center = np.quantile(Z, 0.5, axis=0, method="inverted_cdf", weights=weights)
    mad = np.quantile(np.abs(Z - center), 0.5, axis=0, method="inverted_cdf",
                      weights=weights)
    scale = mad / MAD_NORMAL
    mean = s @ Z
    std = np.sqrt(s @ (Z - mean) ** 2)
    scale = np.where(scale * top > tiny, scale, std)
    scale = np.where(scale * top > tiny, scale * top, 1.0)
    return center * top, scale


class HuberLoss(_FactoredLoss):
    """Huber's loss of the residual with threshold ε, averaged over outputs.

    Per sample, with ``r = F − y``,

        ``ℓ = (1/K) Σ_c h(r_c)``, ``h(r) = ½ r²`` for ``|r| ≤ ε`` and
        ``ε (|r| − ½ ε)`` beyond,

    quadratic for small residuals (the squared error's) and linear for large
    ones, so that an outlier pulls on the fit with a bounded force
    ``ε``. ``h`` is once continuously differentiable; its Gauss-Newton
    curvature is ``h'' = 1`` inside the threshold and 0 outside (1 at
    ``|r| = ε``). Residual ``e_kc = s_k clip(r_kc, −ε, ε) / K``, curvature
    ``Q_k = diag(s_k 1{|r_k| ≤ ε} / K)`` factored as
    ``A_k = diag(sqrt(s_k / K) 1{|r_k| ≤ ε})``. The rows beyond the
    threshold leave the curvature: the step's system stays definite by the
    regularizer's curvature H (the damping) in the primal form and by the
    identity of ``I + J̃ D J̃ᵀ`` in the dual form.

    Parameters
    ----------
    epsilon : float, default=1.35
        The threshold ε > 0, in the units the network is trained in (the
        regressor's standardized targets: median and normal-consistent MAD,
        :func:`robust_target_statistics`).
    """

    # what a fit that asks for intervals is told: the noise model the loss
    # stands for, and that no posterior is computed for it
    posterior_note = (
        ". loss='huber' is the negative log-likelihood of noise with a "
        "Gaussian centre and exponential tails beyond epsilon * "
        "target_scale_ (the targets' robust spread), not of Gaussian noise; "
        "no Laplace posterior or interval is computed for it. For Gaussian "
        "intervals fit loss='squared_error' (on targets without gross "
        "outliers)")

    def __init__(self, epsilon=1.35):
        self.epsilon = float(epsilon)

    def batch_function(self, n_outputs=None):
        """The batch function of this ε (:func:`huber_fn`)."""
        return huber_fn(self.epsilon)

    def constant_risk(self, Y, s):
        """Risk of the best constant prediction (each output's minimizer of
        the weighted Huber risk, between its weighted median and mean)."""
        from scipy.optimize import minimize_scalar

        ones = np.ones((Y.shape[0], 1))
        total = 0.0
        for column in np.asarray(Y, dtype=np.float64).T:
            column = column[:, None]

            def risk(c, column=column):
                return self.risk(c * ones, column, s)

            lo, hi = float(column.min()), float(column.max())
            if hi > lo:
                best = minimize_scalar(risk, bounds=(lo, hi), method="bounded",
                                       options={"xatol": 1e-10 * (hi - lo)})
                total += min(best.fun, risk(lo), risk(hi))
        return total / Y.shape[1]


LOSSES = {}


def register_loss(name, fn, cls=None):
    """Make the numba function ``fn`` the loss ``name``.

    Parameters
    ----------
    name : str
        The loss's key in :data:`LOSSES`.
    fn : numba function
        ``fn(F, Y, s, e, a, u, w, parts)`` of a batch (called from Python
        on the step's arrays: any callable of this signature works, a numba
        function keeps the step fast): the outputs F and
        targets Y, e, a, u, w of shape (b, K) and the normalized weights s of
        shape (b,), all of F's dtype (float32 or float64). With ``parts``
        False it returns the risk ``Σ_k s_k ℓ(F_k, Y_k)`` (a float64); with
        ``parts`` True it writes each row's residual ``e_k = s_k ∂ℓ/∂F_k``
        and the parts of the curvature factor ``A_k = diag(a_k) − u_k w_kᵀ``
        with ``s_k ∂²ℓ/∂F_k² = A_k A_kᵀ`` (``u``, ``w`` arrive zeroed), and
        returns 0.
    cls : type, optional
        The loss's class when it has more than the function (a subclass of
        the built-in losses' base; the estimators also use
        ``constant_risk``, a classifier's loss ``probabilities``, a reduced
        curvature ``reduced_<curvature>``). By default a class is made.

    Returns
    -------
    cls : type
        The loss class, registered in :data:`LOSSES`: a
        :class:`~sklearn_ggn.engine.Problem` built with an instance of it
        takes the same step as the built-in losses.

    Examples
    --------
    >>> import math
    >>> from numba import njit
    >>> @njit
    ... def log_cosh(F, Y, s, e, a, u, w, parts):
    ...     b, K = F.shape
    ...     risk = 0.0
    ...     for k in range(b):
    ...         for c in range(K):
    ...             t = F[k, c] - Y[k, c]
    ...             if parts:
    ...                 e[k, c] = math.tanh(t) * s[k] / K
    ...                 a[k, c] = math.sqrt(s[k] / K) / math.cosh(t)
    ...             else:
    ...                 risk += s[k] * math.log(math.cosh(t)) / K
    ...     return risk
    >>> LogCosh = register_loss("log_cosh", log_cosh)
    >>> float(LogCosh().risk(np.zeros((2, 1)), np.ones((2, 1)), np.full(2, 0.5)))
    0.433...
    >>> del LOSSES["log_cosh"]
    """
    if not callable(fn):
        raise TypeError(f"the loss function of {name!r} must be a numba njit "
                        f"function, got {type(fn).__name__}")
    if cls is None:
        cls = type(f"{name}_loss", (_FactoredLoss,), {"__doc__": fn.__doc__})
    cls.name, cls.fn = name, staticmethod(fn)
    LOSSES[name] = cls
    return cls


register_loss("squared_error", squared_error_fn, SquaredError)
register_loss("log_loss", log_loss_fn, LogLoss)
register_loss("poisson", poisson_fn, PoissonLoss)
register_loss("multilabel_log_loss", multilabel_fn, MultilabelLogLoss)
register_loss("huber", huber_fn(1.35), HuberLoss)
