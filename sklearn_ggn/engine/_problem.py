"""The training problem: network, loss, regularizer and data."""

from dataclasses import dataclass

import numpy as np

from .._kernels import normalized_weights
from .._losses import FactorParts, RankFactor
from .._network import ForwardCache
from ._linearization import Linearization, promote_cache


def _rows(A, idx):
    """Rows ``idx`` of a dense array (``take``: a copy row by row, 3-4x
    faster than fancy indexing on a batch) or of a CSR matrix."""
    return A.take(idx, axis=0) if isinstance(A, np.ndarray) else A[idx]


@dataclass
class Batch:
    """Rows of one step: augmented inputs, targets and normalised weights.

    Attributes
    ----------
    Xa : ndarray of shape (b, d̂)
        Inputs with the intercept column.
    Y : ndarray of shape (b, K)
        Targets.
    s : ndarray of shape (b,)
        The rows' weights in the risk ``Σ_k s_k ℓ_k``: normalised to sum to
        one, or relative to the mean weight of all rows for a step's
        mini-batch (:meth:`Problem.batch`).
    weight : float
        What the rows weigh in an epoch's means: their total sample weight,
        ``b`` times the mean weight for a step's mini-batch.
    """

    Xa: np.ndarray
    Y: np.ndarray
    s: np.ndarray
    weight: float

    @property
    def size(self):
        """Number of rows b."""
        return self.Xa.shape[0]


@dataclass
class Evaluation:
    """The objective at θ on a batch, with the forward pass that gave it.

    Attributes
    ----------
    objective : float
        ``L = R + g`` (``R`` alone for an unregularized problem).
    risk : float
        ``R``.
    cache : ForwardCache
        Activations (and derivatives when asked) and outputs.
    """

    objective: float
    risk: float
    cache: ForwardCache


class Problem:
    """What is minimised: ``Σ_k s_k ℓ(Φ(x_k; θ), y_k) + τ Σ_i ḡ(θ_i)``.

    It owns the objective, the gradient's pieces and the dtype policy (θ and
    the data share X's dtype, float32 or float64); the solver only sees
    :class:`Batch`, :class:`Evaluation` and :class:`Linearization` objects.

    Parameters
    ----------
    network : TwoLayerNetwork
        The network.
    loss : object
        A loss of ``engine.LOSSES`` (risk, residual and curvature factor).
    regularizer : object
        A regularizer of ``engine.REGULARIZERS`` (with its μ).
    tau : float
        Regularization strength τ.
    X : ndarray of shape (n_samples, n_features)
        Training inputs.
    Y : ndarray of shape (n_samples, K)
        Training targets (one-hot for softmax classifiers).
    sample_weight : ndarray of shape (n_samples,)
        Non-negative weights.
    regularized : bool, default=True
        False for the paper's gradient-descent baseline, which minimises the
        risk alone.
    Xa : ndarray of shape (n_samples, n_features + fit_intercept), default=None
        X already augmented (``network.augment(X)``), when the caller has
        it; None augments X here.
    """

    def __init__(self, network, loss, regularizer, tau, X, Y, sample_weight,
                 regularized=True, Xa=None):
        self.network = network
        self.loss = loss
        self.regularizer = regularizer
        self.tau = float(tau)
        self.Xa = network.augment(X) if Xa is None else Xa
        self.Y = Y
        # the targets as the kernels take them: C-contiguous, in X's dtype
        self._Y = np.ascontiguousarray(Y, dtype=self.Xa.dtype)
        self.sample_weight = sample_weight
        # the rows' mean weight (summed in float64): a batch's weights are
        # taken relative to it
        self._mean_weight = (float(np.sum(sample_weight, dtype=np.float64))
                             / max(1, len(sample_weight)))
        self.regularized = regularized
        self.M_g = regularizer.self_concordance_constant(network.n_params)
        self._last_reg = ((None, None), (None, None))

    @property
    def n_samples(self):
        """Number of training rows."""
        return self.Xa.shape[0]

    @property
    def mean_weight(self):
        """The rows' mean sample weight (a step's batch weighs relative to
        it)."""
        return self._mean_weight

    @property
    def dtype(self):
        """Working precision of θ and the data."""
        return self.Xa.dtype

    def batch(self, idx=None, step=False):
        """The :class:`Batch` of rows ``idx`` (an integer index array; all
        rows when None), or None when their weights sum to zero.

        The rows' weights normalized to sum to one: the problem on those
        rows. With ``step=True`` (a mini-batch of the epoch's steps, ``b``
        rows) each weight over ``b`` times the mean weight of all rows
        instead, ``s_k = w_k / (b w̄)``, so that the batch's risk is an
        unbiased estimate of the weighted risk of all rows (a batch of
        light rows weighs little; normalized within the batch it took the
        step of a heavy one, and extreme class weights inverted a fit). With
        equal weights both are ``1/b``."""
        w = self.sample_weight if idx is None else self.sample_weight.take(idx)
        if step and idx is not None:
            if not np.sum(w, dtype=np.float64) > 0:
                return None
            # (b w̄ in w's dtype, as normalized_weights divides by its total)
            weight = len(idx) * self._mean_weight
            s = w / w.dtype.type(weight)
        else:
            s, weight = normalized_weights(w)
            if weight <= 0:
                return None
        s = s.astype(self.Xa.dtype, copy=False)
        if idx is None:
            return Batch(self.Xa, self._Y, s, weight)
        return Batch(_rows(self.Xa, idx), self._Y.take(idx, axis=0), s, weight)

    def regularization(self, theta):
        """``g(θ) = τ Σ ḡ(θ_i)``."""
        # θ accepted by a line search is the very array whose g was computed
        # in its trial, and the adaptive damping evaluates the θ before the
        # last step again: the last two values are kept (passes over p saved).
        for cached, value in self._last_reg:
            if theta is cached:
                return value
        value = self.tau * self.regularizer.value_sum(theta)
        self._last_reg = (self._last_reg[1], (theta, value))
        return value

    def evaluate(self, theta, batch, with_deriv=True):
        """The :class:`Evaluation` of θ on ``batch``."""
        cache = self.network.forward(theta, batch.Xa, with_deriv)
        risk = self.loss.batch_risk(cache.outputs, batch.Y, batch.s)
        if not self.regularized:
            return Evaluation(risk, risk, cache)
        return Evaluation(risk + self.regularization(theta), risk, cache)

    def risk_gradient(self, theta, batch, evaluation):
        """``∇R = Jᵀ e`` on ``batch`` (what gradient descent follows)."""
        residual, _ = self.loss.residual_and_factor(evaluation.cache.outputs,
                                                    batch.Y, batch.s)
        return self.network.gradient(theta, evaluation.cache, residual)

    def linearize(self, theta, batch, evaluation, damping, dtype=None,
                  curvature="exact", hessian="diagonal"):
        """The Gauss-Newton model at θ with ``H = damping · ḡ''(θ)``.

        Parameters
        ----------
        theta : ndarray of shape (p,)
        batch : Batch
        evaluation : Evaluation
            ``evaluate(theta, batch)`` with derivatives.
        damping : float
            ``λ_H``, the scale of the regularizer's curvature in ``H``.
        dtype : dtype, default=None
            Precision of the linearization; None is θ's. A float32 problem
            asks float64 for the primal form, whose cost is its p × p
            factorization.
        curvature : {"exact", "true_vs_rest"}, default="exact"
            The output curvature Q of the step: exact, or the loss's reduced
            form of rank one per row (see ``LogLoss.reduced_true_vs_rest``;
            losses without one keep the exact Q).
        hessian : {"diagonal", "per_unit"}, default="diagonal"
            H as above, or its per-unit structure
            (``TwoLayerNetwork.per_unit``: each hidden unit's parameters share
            the unit's mean curvature); η is then computed with that H.

        Returns
        -------
        linearization : Linearization
        eta : float
            ``η = sqrt(∇gᵀ D ∇g)`` for the step-size rule.
        """
        cache, Y, s = evaluation.cache, batch.Y, batch.s
        if dtype is not None and np.dtype(dtype) != theta.dtype:
            theta = theta.astype(dtype)
            cache = promote_cache(cache, dtype)
            Y = Y.astype(dtype, copy=False)
            s = s.astype(dtype, copy=False)
        s = s.astype(cache.outputs.dtype, copy=False)
        if hasattr(self.loss, "residual_and_curvature"):
            residual, factor = self.loss.residual_and_curvature(cache.outputs, Y, s,
                                                                curvature)
        else:  # a loss with only a dense factor
            residual, factor = self.loss.residual_and_factor(cache.outputs, Y, s)
        reg_grad, D, eta = self.regularizer.step_quantities(theta, self.tau,
                                                            damping)
        unit_D = None
        if hessian == "per_unit":
            # (D is this step's own array: made per unit in place, η under
            # it in the same pass)
            D, unit_D, eta = self.network.per_unit(D, copy=False,
                                                   gradient=reg_grad)
        if unit_D is not None and not isinstance(factor, RankFactor):
            factor = RankFactor.from_parts(factor) if isinstance(
                factor, FactorParts) else RankFactor(np.ascontiguousarray(factor))
        return Linearization(self.network, theta, cache, residual, factor, reg_grad,
                             D, unit_D), eta
