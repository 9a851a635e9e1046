"""The public estimators: thin subclasses of :class:`BaseGGNScore`."""

from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import ClassifierMixin, RegressorMixin, _fit_context
from sklearn.metrics import accuracy_score, r2_score
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.class_weight import compute_class_weight, compute_sample_weight
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import (
    check_classification_targets,
    is_multilabel,
    unique_labels,
)
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from ._base import BaseGGNScore, _Number, _plain
from ._losses import (HuberLoss, LogLoss, MultilabelLogLoss, PoissonLoss,
                      SquaredError, robust_target_statistics)

# Sparse X: CSR and CSC as given, other SciPy formats converted to CSR; the
# network keeps a CSR copy and X enters only its first layer (see _network).
_ACCEPT_SPARSE = ("csr", "csc")

_SHARED_PARAMETERS = """
    n_hidden : int, default=100
        Number of hidden units n.

    activation : {"silu", "relu", "tanh", "sigmoid", "softplus", "identity"}, \
            default="silu"
        Hidden activation ρ. ``"silu"`` is the paper's choice for its synthetic
        experiments, ``"relu"`` for MNIST. ``"identity"`` (ρ(a) = a) makes
        the network linear in X, as ``MLPRegressor(activation="identity")``.

    scaling : {"ntk", "mean_field"} or float, default="ntk"
        Output scaling κ(n): ``1/sqrt(n)`` (``"ntk"``, the paper's), ``1/n``
        (``"mean_field"``) or the given positive float.

    fit_intercept : bool, default=True
        Whether to learn a hidden bias ``b_h`` and an output bias ``b_o``.
        They are regularized like every other parameter (the paper recovers
        biases by appending a constant input, which is what ``b_h`` is).

    regularizer : {"pseudo_huber", "ostrovskii_bach", "l2"}, default="pseudo_huber"
        The smoothed penalty ḡ; ``"pseudo_huber"`` is the paper's.

    mu : float or "auto", default="auto"
        Smoothing parameter μ > 0 of the ℓ1 smoothers (unused by ``"l2"``).
        It trades sparsity for step size: the penalty is ℓ1-like for
        ``|θ_i| ≫ μ`` and quadratic below, and the step-size rule
        ``α = ᾱ / (1 + M_g η)`` has ``M_g ∝ μ^{ν/2 − 2}``, so a small μ
        (≤ 0.1) makes α collapse (0.005-0.03 measured) and training crawl,
        while a very large μ makes the penalty a plain ridge. ``"auto"`` is
        ``1/κ(n)`` (√n with the NTK scaling), the paper's recommended
        ``μ = c/κ(n)`` with c = 1. Typical range ``0.1·√n`` to ``10·√n``;
        tune it together with ``tau`` by ``GridSearchCV``. The evidence is
        on the documentation's defaults page.

    tau : float, "auto" or "evidence", default="auto"
        Regularization strength τ ≥ 0 of the penalty ``τ Σ ḡ_μ(θ_i)``. It
        trades training fit for smaller, sparser weights: with a curvature
        method that reaches the optimum, a tiny τ lets the network
        interpolate small data sets (diabetes: test R² < 0 at τ = 1e-4),
        while a large one underfits. ``"auto"``, for full-batch fits of the
        squared-error regressor, takes the τ ≥ 1e-4 of a log grid (1e-6 to
        1) minimizing the generalized cross-validation of the problem
        linearized at the initial weights (a kernel ridge regression with
        the Gauss-Newton Gram ``J̃ ḡ''(θ0)⁻¹ J̃ᵀ``, on at most 1024 rows ×
        outputs; the curve is ``tau_path_``; a warm start that continues a
        fit keeps its τ); for other full-batch fits
        ``τ = min(10 / n_samples, 0.01)`` (with ``sample_weight``, their sum
        in place of ``n_samples``) — the penalty weighs as much as ten
        samples' loss — and ``max(1e-4, 1 / n_samples)`` for mini-batch
        fits (one sample's loss, with ``sample_weight`` their sum, at most
        0.01; from 10 000 rows on 1e-4, where the batches' noise regularizes
        enough; the overfitting watch's fit on part of the rows keeps the
        value of all of them), 1e-4 for ``partial_fit``, whose chunks are
        not the data set; the value used is ``tau_``. A float is used as
        given. The linearization at the initial weights can misjudge models
        far from linear there: with ``activation="relu"`` or ``"softplus"``
        on a few hundred rows GCV has chosen τ ≈ 0.03-0.06 where 1e-3 tested
        0.97 against 0.71-0.73; compare a few fixed values there.
        ``"evidence"``: as ``"auto"``, but the τ of the grid is the one
        that maximizes the marginal likelihood (evidence) of the same
        linearized problem read as a Bayesian ridge (Gaussian prior of
        precision proportional to ``τ ḡ''(θ0)``, Gaussian noise whose
        variance is profiled out; the curve is ``tau_path_["evidence"]``);
        where GCV does not choose τ (classifiers, other losses, mini-batch
        fits) it is ``"auto"``.
        Typical range 1e-6 to 1e-1; to tune it, search a log grid with
        ``GridSearchCV`` (e.g. ``np.logspace(-5, -1, 5)``). The evidence is
        on the documentation's defaults page.

    step_size : float, default=0.95
        ᾱ in ``α = min(1, ᾱ / (1 + M_g η))``, in (0, 1].

    damping : "adaptive", "auto", "tau" or float, default="adaptive"
        Curvature of the regularizer in the Gauss-Newton matrix,
        ``H = λ_H ḡ''(θ)``:

        - ``"adaptive"``: on mini-batches (and ``partial_fit``)
          ``H = λ u ḡ''`` with ``u = 1/ḡ''(0)`` (μ for the ℓ1 smoothers, 1
          for ``"l2"``) and λ adapted on data the step did not see: a step
          that makes the next batch's objective more than 1.5× worse is
          undone and λ tripled, each accepted step lets λ decay by 0.5 %
          (down to its floor), and an epoch that improves the epoch
          objective by less than 1 % (slow) or by less than 0.3 % of the
          first epoch's objective (small) raises λ's floor 1.5-fold; five
          such stalled epochs in a row that are small (the floor raised
          7.6-fold or more) end the fit — slow progress alone does not,
          since on noisy data every epoch is slow next to the noise floor
          while the rising damping still anneals the fit. λ starts at 0.1
          and its state carries across epochs, warm starts and
          ``partial_fit`` calls (``partial_fit`` applies no per-epoch
          rule: a chunk is not a pass over the data). With the structured
          step (``hessian="per_unit"``, the default) the rules count work
          instead: λ starts at 0.03 and decays by 0.5 % per 8 rows seen,
          an epoch of s steps is held to s/250 of the stall thresholds
          (fewer steps, lower thresholds; more, higher), and a stalled
          epoch raises the floor 1.3-fold. In
          full batch ``H = λ ḡ''`` with λ starting at
          ``max(τ, τ₀)``, ``τ₀ = min(0.01, 10/n)`` (``tau="auto"``'s
          full-batch rule before the regressor's generalized
          cross-validation refines it), and adapted like
          Levenberg-Marquardt's damping:
          a step the line search shortens doubles λ, a step taken as
          proposed divides it by 3, never below τ, where the step is the
          paper's ``"tau"`` (a tiny H from the start makes the step size
          collapse on models the Gauss-Newton step fits poorly); with
          ``line_search=False`` a step that raised the objective doubles
          λ, any other divides it by 3.
        - ``"tau"``: ``H = ∇²g = τ ḡ''`` exactly as the paper's equations.
        - a positive float c: ``H = c ḡ''`` (1.0 reproduces the authors'
          code).
        - ``"auto"``: the 0.1 default, ``"tau"`` for full-batch ``fit`` and
          1.0 for mini-batches (1.0 also when ``tau=0``).

        See :func:`sklearn_ggn.paper_params` for the paper's settings and
        the documentation's defaults page for the measurements.

    line_search : "auto" or bool, default="auto"
        Armijo backtracking (halving, c = 1e-4) from the adaptive α on the
        batch objective (the reference's ``ss_type=3``). ``"auto"``: on for
        full-batch fits and for the exact step (``hessian="diagonal"``), off
        on the structured step's mini-batches, whose adaptive damping judges
        every step on the next batch (and undoes it when it made that batch
        1.5 times worse).

    linear_solver : {"auto", "dual", "primal"}, default="auto"
        How the Gauss-Newton system is solved.

        - ``"dual"``: Woodbury / kernel form, a Cholesky of the (bK × bK)
          matrix ``I + J̃ D J̃ᵀ``; cheap when the batch is small relative to
          the number of parameters (the overparameterized regime).
        - ``"primal"``: a Cholesky of the (p × p) matrix ``Jᵀ Q J + H``; cheap
          for small networks and large batches.
        - ``"auto"``: the form with fewer estimated flops whose memory fits.

    solver : {"ggn", "gd"}, default="ggn"
        ``"ggn"`` is GGN-SCORE; ``"gd"`` is the paper's baseline, plain
        gradient descent ``θ ← θ − learning_rate ∇R(θ)`` on the unregularized
        risk (``tau`` is then unused and ``loss_curve_`` records R).

    learning_rate : float, default=1.0
        Step of ``solver="gd"`` (the paper uses 1).

    batch_size : int, "auto" or None, default="auto"
        Samples per step. ``None`` is full batch. ``"auto"``, where the
        step is structured (the default ``hessian="per_unit"`` with one row
        of the kernel system per sample: one output, or the classifier's
        true-vs-rest curvature): full batch up to 512 samples (1024 for
        the squared-error regressor, which chooses τ by generalized
        cross-validation in full batch, and for the Huber regressor), else
        128 samples per batch. Otherwise (several outputs of a regressor,
        multilabel targets, ``loss="squared_error"`` for a classifier, or
        ``hessian="diagonal"``): full batch while
        ``n_samples · n_outputs ≤ 1024``; otherwise ``256 // K`` samples for
        K outputs (256 for one output), all outputs' rows of the kernel
        system together.
        ``partial_fit``, which sees chunks of a larger data set, always takes
        these mini-batches. The size used is ``batch_size_``.

    max_iter : int, default=100
        Maximum number of iterations (full batch) or epochs (mini-batch).

    tol : float, default=1e-4
        Minimum improvement of the objective (or of the validation score with
        ``early_stopping``) that resets the ``n_iter_no_change`` counter.

    n_iter_no_change : int or np.inf, default=10
        Stop when more than this many consecutive iterations/epochs have
        not improved by ``tol`` (MLP's rule; ``np.inf``: never, run
        ``max_iter``).

    early_stopping : "auto" or bool, default="auto"
        ``"auto"``: an overfitting watch that gives every row back. A fresh
        mini-batch ``fit`` without ``X_val`` (not a warm start from fitted
        weights or weights set by hand) holds out
        ``validation_fraction`` of the rows (at most 500, at least 50,
        stratified for classifiers) for its first 15 epochs (at most half
        of ``max_iter``; below 10 there is no watch, nor with fewer rows to
        hold out or to train on, a class of one row, more classes than rows
        on a side of the split, a side without weight, or full batches); a
        regressor's watch goes on after them while the held-out risk stands
        more than 1.5 times the training risk (the fit may be memorizing
        its rows) and above its minimum, up to 50 epochs (at most half of
        ``max_iter``).
        When the risk on them stays more than 10 % above its minimum (7 %
        for the squared error) and more than 1.5 times the training risk
        for 3 epochs in a row, and their score (``scoring``) over those
        epochs is on average no better than its best by the risk's minimum,
        the fit overfits: it is refit on all rows, from the same initial
        weights, for the number of epochs that scored best on the held-out
        rows. Otherwise they join the training rows and the fit goes on (its
        input statistics are those of the watched rows). What the watch
        found is in ``overfitting_watch_``.

        ``True``: stop when the validation score stops improving and keep
        the parameters of the best validation score. The validation data are
        ``X_val, y_val`` when given to ``fit``, otherwise a held-out
        ``validation_fraction`` of the training data (stratified for
        classifiers), which the model never trains on. When the split is
        too small (fewer than two validation rows, or than one of each class
        on either side) the fit warns and trains on all rows without early
        stopping; a class of one row raises a ValueError, as MLPClassifier's
        stratified split does. The validation score then
        decides alone when the fit ends: the adaptive damping's stalled
        epochs still raise the damping but do not stop a fit whose
        validation score improves.

        ``False``: neither; the fit ends by its own stopping rules (the
        0.7 default). ``partial_fit`` ignores the parameter.

    validation_fraction : float, default=0.1
        Fraction held out for early stopping (or for the overfitting watch).

    shuffle : bool, default=True
        Shuffle the samples every epoch (mini-batch only).

    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the shuffling and the validation split;
        with an int, fits are reproducible bit for bit on the same machine
        and number of BLAS threads (BLAS sums in a thread-dependent order).

    warm_start : bool, default=False
        Start from the current ``hidden_weights_``, ``output_weights_`` (and
        intercepts). These may also be set by hand before ``fit`` to start
        from one's own initialization (weights on the inputs as the network
        sees them, through ``input_transform``, whose statistics that fit
        computes).

    verbose : bool or int, default=False
        Print one line per iteration/epoch: objective, risk, α, the damping,
        the validation score (with validation data) and time, and which
        rule ended the fit when one did (reaching ``max_iter`` is the
        ``ConvergenceWarning``'s to say).

    store_initial_weights : bool, default=False
        Keep a copy of the initial weights in ``initial_weights_`` (needed by
        :func:`sklearn_ggn.diagnostics.time_invariance`); off by default so
        that ordinary fits pay nothing.
    curvature : {"auto", "exact", "true_vs_rest"}, default="auto"
        Output curvature Q of the Gauss-Newton model. ``"exact"`` is the
        paper's: for K classes the kernel system has b·K rows.
        ``"true_vs_rest"`` keeps, of the softmax curvature
        ``diag π − π πᵀ``, the part of the margin between the true class and
        the rest, ``π_y (1 − π_y)(e_y − r)(e_y − r)ᵀ`` with ``r`` the other
        classes' normalized probabilities: one row per sample, a b × b system
        (K² less Gram, K³ less factorization); the gradient stays exact.
        It applies to the softmax log loss; other losses (one output, the
        squared error, Poisson) keep their exact Q. ``"auto"`` is
        ``"true_vs_rest"``. See the user guide's "The default step".
    hessian : {"auto", "diagonal", "per_unit"}, default="auto"
        Structure of H, the curvature of the regularizer in the step.
        ``"diagonal"`` is ``λ_H ḡ''(θ)`` entry by entry (the paper's);
        ``"per_unit"`` gives every parameter of a hidden unit (its input
        weights, bias and output weights) the unit's mean of that curvature,
        so that the Gram costs ``b²(d + n)`` instead of ``b²·n·d``; the
        regularizer's gradient stays exact. ``"auto"`` is ``"per_unit"``.
        :func:`~sklearn_ggn.paper_params` sets ``curvature="exact",
        hessian="diagonal"``.

    scoring : str, callable or None, default=None
        The validation score that ``early_stopping`` follows (which
        ``validation_scores_`` records with ``early_stopping=True``, and
        ``history_["validation_score"]`` whenever there are validation
        data), as
        ``HistGradientBoosting``'s ``scoring``:

        - ``None``: the estimator's ``score`` (accuracy for the classifier,
          R² for the regressor), computed from the network outputs.
        - ``"loss"``: minus the validation risk (the training loss on the
          validation rows, without the penalty; ``validation_loss_curve_``);
          ``tol`` is then in units of the loss.
        - a scorer name (see scikit-learn's ``get_scorer_names``), or a
          callable ``scorer(estimator, X, y)``: called after every
          iteration/epoch on the validation rows with the current weights
          (with ``sample_weight=`` when the validation rows are weighted,
          as by ``class_weight``, and the callable takes it). Greater is
          better.

    input_transform : {"robust_clip"} or None, default="robust_clip"
        What the network sees of ``X``. ``"robust_clip"``: every column is
        centered on its median, scaled by the smaller of its standard
        deviation and its interquartile range / 1.349 (where the quartiles
        coincide, as for zero-inflated columns, by half its range, but a
        column there of two values each in 5 rows or more, such as a one-hot
        column of a level in fewer than a quarter of the rows, keeps a step
        of 1; a constant column becomes 0) and smoothly
        clipped, ``x' = z / sqrt(1 + (z/B)²)`` with ``B = 3 · 1.349``: the
        bulk of a column keeps unit scale whatever its outliers, and no
        value reaches ±B. An outlying row then cannot take a huge step, and
        the fit no longer depends on the seed where columns are heavy-tailed
        (counts, money, rare pixels); the map is monotone, so nothing is lost
        that the network cannot undo. The statistics (``input_center_``,
        ``input_scale_``) come from the training rows of the first fit and
        are kept by warm starts and ``partial_fit`` (the first
        ``partial_fit`` chunk fixes them for the stream: a column constant
        in it is centered and not scaled; a first chunk of fewer than 20
        rows warns). It composes with
        a ``StandardScaler`` in front (an affine map changes none of its
        results). Sparse ``X`` gets its dense copy's map, kept sparse where
        a column's median is 0 (its stored values are mapped) and with the
        other columns stored in full. ``None``: the network sees ``X`` as given (the paper's
        setting; standardize ``X`` yourself). The evidence for the default
        is on the documentation's defaults page.
"""

_SHARED_ATTRIBUTES = """
    hidden_weights_ : ndarray of shape (n_hidden, `n_features_in_`)
        Hidden-layer weights U.

    output_weights_ : ndarray of shape (n_hidden, `n_outputs_`)
        Output weights V.

    hidden_intercept_ : ndarray of shape (n_hidden,)
        Hidden bias ``b_h`` (only with ``fit_intercept=True``).

    output_intercept_ : ndarray of shape (`n_outputs_`,)
        Output bias ``b_o`` (only with ``fit_intercept=True``).

    n_outputs_ : int
        Number of network outputs K.

    n_iter_ : int
        Iterations (full batch) or epochs (mini-batch) run by the last call
        of ``fit`` or ``partial_fit`` (as ``MLPClassifier``); the whole
        warm-started or ``partial_fit`` sequence ran ``len(loss_curve_)``.

    t_ : int
        Number of steps taken.

    loss_curve_ : list of float
        Objective ``R + g`` after each iteration (full batch), or the mean
        batch objective of each epoch (mini-batch).

    history_ : dict of lists
        One entry per iteration/epoch: ``"objective"`` (as ``loss_curve_``),
        ``"risk"`` (R alone), ``"step_size"`` (α taken; the epoch mean for
        mini-batches), ``"damping"`` (the curvature scale ``λ_H`` of the
        steps, their mean over an epoch; ``solver="ggn"`` only), ``"time"``
        (training seconds since the first fit of a warm-started sequence;
        validation evaluations are not counted), and with validation data
        (``X_val`` or ``early_stopping``) ``"validation_risk"`` and
        ``"validation_score"``.

    initial_weights_ : dict of ndarray
        With ``store_initial_weights=True``: the weights the optimization
        started from (``"hidden_weights"``, ``"output_weights"`` and the
        intercepts); kept across warm-started fits.

    best_loss_ : float or None
        Smallest value in ``loss_curve_``; None with ``early_stopping``,
        where the validation score decides (``best_validation_score_``).

    validation_scores_ : list of float or None
        Validation score per iteration/epoch with ``early_stopping`` (on
        ``X_val`` when given, else on the held-out split), as ``scoring``
        defines it.

    validation_loss_curve_ : list of float or None
        With validation data (``X_val``, or the held-out split of
        ``early_stopping``): the risk (the training loss, without the
        penalty) on the validation rows after each iteration/epoch, in the
        units of ``history_["risk"]``, the training risk (``loss_curve_``
        adds the penalty). None without validation data.

    best_validation_score_ : float or None
        Best validation score with ``early_stopping=True`` (None when the
        fit diverged before the first score).

    overfitting_watch_ : dict or None
        What ``early_stopping="auto"``'s watch found, None when there was
        none: ``"validation_rows"``, ``"epochs"`` (watched),
        ``"overfitting"`` (bool), ``"best_epoch"`` (the epochs of the refit
        when it overfitted, else None), and the held-out
        ``"validation_loss_curve"`` and ``"validation_scores"`` per watched
        epoch. ``n_iter_`` and ``loss_curve_`` are those of the fit on all
        rows: after overfitting, the refit's; otherwise the watched epochs
        and the ones after.

    tau_ : float
        The regularization strength used (``tau``, or its ``"auto"`` value).

    tau_path_ : dict or None
        When ``tau="auto"`` chose τ by generalized cross-validation (or
        ``tau="evidence"`` by the evidence): the
        grid ``"tau"``, the criterion ``"gcv"`` (minimized), the
        leave-one-out error ``"loo"``, the degrees of freedom ``"dof"``
        (``tr S``) of the linearized smoother and ``"evidence"`` (its
        negative log marginal likelihood per entry, up to a constant) over
        that grid (arrays), ``"n_rows"`` (the rows of the Gram),
        ``"criterion"`` and ``"tau_min"`` (the smallest τ it may choose);
        e.g.
        ``plt.loglog(tau_path_["tau"], tau_path_["gcv"])``. None otherwise.

    uncertainty_ : str or None
        The structure of the Laplace posterior computed after ``fit`` (what
        ``uncertainty`` resolved to: ``"dual"``, ``"primal"`` or
        ``"last_layer"``), or None when there is none (``uncertainty=None``,
        after ``partial_fit``, with ``tau=0``, or for losses it is not
        defined for).

    log_marginal_likelihood_ : float or None
        The log evidence of the Laplace approximation at the fitted weights
        (in the units of ``y`` for the regressor),
        ``log p(y | θ*) − α Σ ḡ(θ*) − ½ log det(P H⁻¹)``, with the prior the
        Gaussian of precision ``H = α ḡ''(θ*)`` (the penalty's curvature at
        θ*) and ``P`` the posterior precision; None when ``uncertainty_``
        is None. Compare it across values of ``tau`` (larger is better);
        see the user guide's "Predictive uncertainty and evidence".

    linear_solver_ : str or None
        The form (``"dual"`` or ``"primal"``) every step of the last fit
        used (what ``linear_solver="auto"`` resolved to); None with
        ``solver="gd"``, which solves no linear system.

    batch_size_ : int
        Rows per step of the last call (what ``batch_size`` resolved to; the
        number of training rows for a full batch).

    input_center_ : ndarray of shape (`n_features_in_`,) or None
        The column medians of ``input_transform="robust_clip"`` (a sparse
        column's implicit zeros count); None when the network sees ``X`` as
        given (``input_transform=None``).

    input_scale_ : ndarray of shape (`n_features_in_`,) or None
        The column factors of ``input_transform="robust_clip"``
        (``1 / min(σ, IQR / 1.349)``; where the quartiles coincide 2 / range,
        or 1 / range for a column of two values; 0 for a constant one); None as
        ``input_center_``.

    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (only when X has string
        column names).
"""

_OBJECTIVE = r"""
    The network is :math:`\Phi(x) = \kappa(n) V^\top \rho(U x + b_h) + b_o` and
    the objective is the regularized empirical risk

    .. math::

        \min_\theta \; \sum_k s_k \, \ell(\Phi(x_k), y_k)
        + \tau \sum_i \bar g_\mu(\theta_i),

    minimized by GGN-SCORE steps :math:`\theta \leftarrow \theta - \alpha d`
    with :math:`(J^\top Q J + H) d = J^\top e + \nabla g` and
    :math:`\alpha = \min(1, \bar\alpha / (1 + M_g \|\nabla g\|^*_\theta))`.
"""

_REFERENCES = """
    References
    ----------
    .. [1] A. D. Adeoye, P. C. Petersen, A. Bemporad. "Regularized Gauss-Newton
       for Optimizing Overparameterized Neural Networks." arXiv:2404.14875.
"""


def _with_docs(doc):
    return (doc.replace("%(parameters)s", _SHARED_PARAMETERS)
               .replace("%(attributes)s", _SHARED_ATTRIBUTES)
               .replace("%(objective)s", _OBJECTIVE)
               .replace("%(references)s", _REFERENCES))


class GGNScoreRegressor(RegressorMixin, BaseGGNScore):
    __doc__ = _with_docs("""Two-layer network regressor trained by GGN-SCORE.

    A scaled one-hidden-layer network fitted with the generalized Gauss-Newton
    method regularized by a self-concordant smoothing of the ℓ1 norm, with the
    squared-error loss ``½ (1/K) ‖Φ(x) − y‖²``, the Huber loss or the Poisson
    deviance of a log-link model.
%(objective)s
    Parameters
    ----------
    loss : {"squared_error", "poisson", "huber"}, default="squared_error"
        Training loss. ``"poisson"`` is the half Poisson deviance with the
        log link, as ``MLPRegressor(loss="poisson")``: the network output Φ
        is the log of the mean, :meth:`predict` returns ``exp(Φ)``, targets
        must be non-negative (counts, rates, positive amounts), and the
        curvature of the Gauss-Newton model is ``Q = diag(s exp(Φ)) / K``.
        With several outputs the deviance is averaged over them (as the
        squared error is here; ``MLPRegressor`` sums it). ``"huber"`` is
        Huber's robust loss of the residual ``r = Φ(x) − y`` (in the
        standardized units of ``standardize_target``): ``½ r²`` for
        ``|r| ≤ epsilon`` and ``epsilon (|r| − ½ epsilon)`` beyond, averaged
        over outputs, so that outlying targets pull on the fit with a bounded
        force; its Gauss-Newton curvature is 1 for the rows within the
        threshold and 0 for the others.
%(parameters)s
    standardize_target : bool, default=True
        Train on standardized targets and map the predictions back, so that
        the fit does not depend on the units of ``y``: fitting ``a·y + b``
        predicts ``a·ŷ + b``, and ``tau``, ``mu`` and the initial weights
        mean the same for every ``y``. With ``loss="squared_error"`` each
        output is centered by its mean and divided by its standard
        deviation (both weighted by ``sample_weight``; a constant output is
        only centered). With ``loss="poisson"`` each output is only divided
        by its (weighted) mean — counts must stay non-negative under the log
        link — so fitting ``a·y`` (``a > 0``) predicts ``a·ŷ``; an all-zero
        output is left as is. With ``loss="huber"`` each output is centered
        by its (weighted) median and divided by 1.4826 × its median absolute
        deviation, which outlying targets do not inflate (by its standard
        deviation where the MAD is 0). The statistics are ``target_mean_`` and
        ``target_scale_``. They are computed by ``fit`` and by the first
        ``partial_fit``, and kept by later ``partial_fit`` calls and by a
        ``warm_start`` fit that continues from fitted weights (those weights
        map to the kept units). ``loss_curve_``, ``best_loss_`` and
        ``history_`` (objective, risk, validation risk) are in the
        standardized units, the units ``tau`` weighs against; scores (R²)
        do not depend on units. False trains on ``y`` as given (the paper's
        setting).

    epsilon : float, default=1.35
        The threshold of ``loss="huber"`` (unused by the other losses): a
        residual beyond ``epsilon`` costs linearly. Named and defaulted as
        ``HuberRegressor``'s, which also puts it on a scaled residual; here
        the scale is the robust spread of ``y``, 1.4826 × its median absolute
        deviation (with ``standardize_target=True``; ``y``'s own units
        otherwise), so 1.35 treats as outliers residuals beyond 1.35 robust
        standard deviations of the targets, whatever the outliers. A smaller
        value (e.g. 0.1-0.5) makes more rows count linearly (more robust,
        less efficient on clean data); tune it with ``GridSearchCV``. Far
        smaller values (1e-6 and below) make the loss vanish against the
        penalty (it grows as ``ε |r|``): the fit shrinks to a constant.

    uncertainty : {"auto", "dual", "primal", "last_layer"} or None, \
            default="auto"
        The structure of the linearized Laplace posterior over all training
        rows at the fitted weights (computed on first use), for
        ``predict(X, return_std=True)`` and ``log_marginal_likelihood_``
        (``loss="squared_error"`` only). The precision is the Gauss-Newton
        matrix ``(N K / σ̂²)(J̃ᵀJ̃ + τ ḡ''(θ*))`` of the training objective:

        - ``"dual"``: exact, by the Woodbury (kernel) form: keeps the
          Cholesky factor of the (m·K × m·K) kernel system and the m
          training inputs;
        - ``"primal"``: exact: keeps the inverse Cholesky factor of the (p × p)
          precision, nothing of the training data;
        - ``"last_layer"``: the output weights and bias only, the hidden
          layer held at its fitted value (its uncertainty is ignored, so
          the std is smaller, most of all away from the data): a factor of
          order ``(n_hidden + 1)·K``, for any m and p;
        - ``"auto"``: the exact form of fewer flops (the step's cost model
          for a batch of all rows) among ``"dual"`` while ``m·K ≤ 2048``
          and ``"primal"`` while ``p ≤ 3000``, if its memory fits;
          otherwise ``"last_layer"`` (also for sparse X);
        - None: none (``return_std=True`` raises).

        The one used is ``uncertainty_``.

    Attributes
    ----------
    noise_variance_ : ndarray of shape (`n_outputs_`,) or None
        The noise variance σ̂² of each output in the units of ``y²``:
        the weighted residual sum of squares of the training rows divided
        by ``N K − γ``, γ the effective number of parameters of the
        linearized fit (see the user guide); None when ``uncertainty_`` is
        None.

    target_mean_ : ndarray of shape (`n_outputs_`,)
        What is subtracted from each output before training and added back
        to the predictions (the median with ``loss="huber"``; zeros with
        ``standardize_target=False`` or ``loss="poisson"``).

    target_scale_ : ndarray of shape (`n_outputs_`,)
        What each centered output is divided by before training and the
        predictions multiplied by (ones with ``standardize_target=False``).
%(attributes)s
    See Also
    --------
    GGNScoreClassifier : The classifier counterpart.
    sklearn.neural_network.MLPRegressor : First-order training of an MLP.
%(references)s
    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_ggn import GGNScoreRegressor
    >>> X, y = make_regression(n_samples=200, n_features=5, noise=1.0,
    ...                        random_state=0)
    >>> reg = GGNScoreRegressor(n_hidden=50, random_state=0).fit(X, y / 100)
    >>> reg.predict(X[:2]).shape
    (2,)
    """)

    _parameter_constraints = {
        **BaseGGNScore._parameter_constraints,
        "loss": [StrOptions({"squared_error", "poisson", "huber"})],
        "standardize_target": ["boolean"],
        "epsilon": [_Number(Real, 0, None, closed="neither")],
        "uncertainty": [StrOptions({"auto", "dual", "primal", "last_layer"}),
                        None],
    }

    def __init__(self, loss="squared_error", n_hidden=100, activation="silu",
                 scaling="ntk", fit_intercept=True, regularizer="pseudo_huber",
                 mu="auto", tau="auto", step_size=0.95, damping="adaptive",
                 line_search="auto", linear_solver="auto", solver="ggn",
                 learning_rate=1.0, batch_size="auto", max_iter=100, tol=1e-4,
                 n_iter_no_change=10, early_stopping="auto", validation_fraction=0.1,
                 shuffle=True, random_state=None, warm_start=False, verbose=False,
                 store_initial_weights=False, curvature="auto", hessian="auto",
                 scoring=None, standardize_target=True, epsilon=1.35,
                 uncertainty="auto", input_transform="robust_clip"):
        self.loss = loss
        self.standardize_target = standardize_target
        self.epsilon = epsilon
        self.uncertainty = uncertainty
        super().__init__(
            n_hidden=n_hidden, activation=activation, scaling=scaling,
            fit_intercept=fit_intercept, regularizer=regularizer, mu=mu, tau=tau,
            step_size=step_size, damping=damping, line_search=line_search,
            linear_solver=linear_solver, solver=solver, learning_rate=learning_rate,
            batch_size=batch_size, max_iter=max_iter, tol=tol,
            n_iter_no_change=n_iter_no_change, early_stopping=early_stopping,
            validation_fraction=validation_fraction, shuffle=shuffle,
            random_state=random_state, warm_start=warm_start, verbose=verbose,
            store_initial_weights=store_initial_weights, curvature=curvature,
            hessian=hessian, scoring=scoring, input_transform=input_transform,
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.positive_only = self.loss == "poisson"
        tags.input_tags.sparse = True
        return tags

    def _loss_object(self):
        if self.loss == "huber":
            return HuberLoss(self.epsilon)
        return PoissonLoss() if self.loss == "poisson" else SquaredError()

    def _selects_tau(self):
        return self.loss == "squared_error" and self.solver == "ggn"

    _posterior_loss = "squared_error"

    def _evidence_attributes(self, log_z, sigma2, posterior, target_attributes):
        # the density of y is that of the standardized targets divided by
        # the scale of every output, once per (weighted) row
        scale = np.asarray(target_attributes.get("target_scale_", 1.0),
                           dtype=np.float64) * np.ones(self.n_outputs_)
        log_z -= posterior["n_weighted"] * float(np.sum(np.log(scale)))
        return {"log_marginal_likelihood_": float(log_z),
                "noise_variance_": sigma2 * scale**2}

    @property
    def noise_variance_(self):
        """The noise variance σ̂² of every output in the units of y, or None
        without a posterior (computed on first use, see ``uncertainty``)."""
        return self._noise_checked().get("noise_variance_")

    def _full_batch_regression(self):
        # Huber in full batch too: on friedman1 (600 rows, 10 % of the
        # targets shifted by 20-40) mini-batches of 128 at τ = 1e-4 reached
        # a held-out R² of 0.01, the full batch 0.83 (the squared error 0.67)
        return self._selects_tau() or (self.loss == "huber"
                                       and self.solver == "ggn")

    def _validate_input(self, X, y, reset, classes=None):
        X, y = validate_data(self, X, y, reset=reset, dtype=[np.float64, np.float32],
                             accept_sparse=_ACCEPT_SPARSE, multi_output=True,
                             y_numeric=True, ensure_min_samples=1, order="C")
        Y = np.asarray(y, dtype=X.dtype)
        if Y.ndim == 1:
            Y = Y.reshape(-1, 1)
        if self.loss == "poisson" and Y.min() < 0:
            raise ValueError(
                f'loss="poisson" needs non-negative targets (counts, rates or '
                f"positive amounts), but y has {int(np.sum(Y < 0))} negative "
                f"value(s), the smallest {Y.min():.6g}. Use "
                f'loss="squared_error" for targets of any sign.')
        if reset:
            self._y_ndim = np.ndim(y)
            self.n_outputs_ = Y.shape[1]
        elif Y.shape[1] != self.n_outputs_:
            raise ValueError(f"y has {Y.shape[1]} outputs but the model was fitted "
                             f"with {self.n_outputs_}.")
        return X, np.ascontiguousarray(Y)

    def _encode_targets(self, Y, sample_weight, keep, attributes=None):
        if attributes is None and keep and hasattr(self, "target_scale_"):
            attributes = {"target_mean_": self.target_mean_,
                          "target_scale_": self.target_scale_}
        if attributes is None:
            attributes = self._target_statistics(Y, sample_weight)
        mean, scale = attributes["target_mean_"], attributes["target_scale_"]
        # in float64 (float32 targets may be large), back in Y's dtype
        encoded = (Y.astype(np.float64) - mean) / scale
        return np.ascontiguousarray(encoded, dtype=Y.dtype), attributes

    def _target_statistics(self, Y, sample_weight):
        """``target_mean_`` and ``target_scale_`` (see standardize_target)."""
        n_outputs = Y.shape[1]
        mean, scale = np.zeros(n_outputs), np.ones(n_outputs)
        if self.standardize_target:
            s = np.asarray(sample_weight, dtype=np.float64)
            s = s / s.sum()
            Y = Y.astype(np.float64)
            center = s @ Y
            # what round-off leaves of a constant output counts as zero
            tiny = 1e3 * np.finfo(np.float64).eps * np.abs(Y).max(axis=0)
            if self.loss == "poisson":
                scale = np.where(center > tiny, center, 1.0)
            elif self.loss == "huber":  # median and MAD (outliers move neither)
                mean, scale = robust_target_statistics(Y, s, tiny)
            else:
                mean = center
                with np.errstate(over="ignore"):
                    std = np.sqrt(s @ (Y - center) ** 2)
                if not np.all(np.isfinite(std)):
                    # targets near the largest float: their squares overflow;
                    # the same moments of y over its largest magnitude
                    top = np.abs(Y).max(axis=0)
                    top = np.where(top > 0, top, 1.0)
                    Z = Y / top
                    std = top * np.sqrt(s @ (Z - s @ Z) ** 2)
                scale = np.where(std > tiny, std, 1.0)
        return {"target_mean_": mean, "target_scale_": scale}

    def _score_outputs(self, outputs, Y, sample_weight):
        if self.loss == "poisson":
            outputs = PoissonLoss.mean(outputs)
        return r2_score(Y, outputs, sample_weight=sample_weight)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, *, X_val=None, y_val=None,
            sample_weight_val=None):
        """Fit the network to data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs (float64 or float32; other dtypes become float64).
            Sparse matrices (CSR, CSC) are never densified.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; integer weights are equivalent to repeating
            rows (exactly so with full-batch training; in mini-batches each
            batch's risk is an unbiased estimate of the weighted risk, its
            rows weighed relative to the mean weight of all rows).
        X_val : array-like of shape (n_val, n_features), default=None
            Validation inputs: their risk and score are recorded in
            ``history_`` after every iteration/epoch, and used instead of a
            held-out split by ``early_stopping``. Inside a ``Pipeline`` they
            are not transformed by the preceding steps.
        y_val : array-like, default=None
            Validation targets (with ``X_val``).
        sample_weight_val : array-like of shape (n_val,), default=None
            Validation sample weights.

        Returns
        -------
        self : GGNScoreRegressor
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight, X_val=X_val, y_val=y_val,
                         sample_weight_val=sample_weight_val)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """Run one pass (one epoch, or one step for a full batch) over the data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, relative to the mean weight of this call's
            rows (each call is a pass over its own chunk).

        Returns
        -------
        self : GGNScoreRegressor
            The updated estimator.

        Notes
        -----
        With ``standardize_target=True`` the first call (on a fresh
        estimator) fixes ``target_mean_`` and ``target_scale_`` from its
        chunk; later calls keep them, so that every chunk is trained in the
        same units. Make the first chunk representative (or shuffle the
        stream).
        """
        return self._fit(X, y, sample_weight, incremental=True)

    def predict(self, X, return_std=False):
        """Predict with the trained network, optionally with the predictive std.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.
        return_std : bool, default=False
            Also return the standard deviation of a new observation at each
            input under the linearized Laplace approximation of the fit
            (``loss="squared_error"`` fitted by ``fit``; see
            ``uncertainty``), in the units of ``y`` and with the noise
            included: ``sqrt(noise_variance_ + J(x) P⁻¹ J(x)ᵀ)``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Predictions in the units of ``y`` (see ``standardize_target``);
            one-dimensional when ``y`` was in ``fit``. With
            ``loss="poisson"`` the predicted mean ``exp(Φ)`` (times
            ``target_scale_``).
        y_std : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Standard deviation of the predictive distribution of ``y`` at
            each input (only with ``return_std=True``), shaped as ``y_pred``.
        """
        check_is_fitted(self, ["hidden_weights_", "output_weights_"])
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32],
                          accept_sparse=_ACCEPT_SPARSE)
        # (the network's inputs, mapped once for the mean and the std)
        Z, Za = self._network_inputs(X, augmented=True)
        out = self._outputs_at(Z.astype(self.hidden_weights_.dtype, copy=False), Za)
        if self.loss == "poisson":
            out = PoissonLoss.mean(out)
        # back to the units of y (see standardize_target)
        scale = np.asarray(getattr(self, "target_scale_", 1.0), dtype=out.dtype)
        mean = np.asarray(getattr(self, "target_mean_", 0.0), dtype=out.dtype)
        with np.errstate(over="ignore"):
            out = out * scale + mean
        one_dimensional = getattr(self, "_y_ndim", 2) == 1
        if not return_std:
            return out[:, 0] if one_dimensional else out
        # P⁻¹ = σ²/(N K) B⁻¹ in the standardized units, plus the noise σ²
        variance = self._output_variance(Z, Za)  # (raises without a posterior)
        sigma2 = self._noise_checked()["_laplace"]["noise_variance"]
        variance *= sigma2 / self.n_outputs_
        variance += sigma2
        std = (np.sqrt(variance) * np.asarray(getattr(self, "target_scale_", 1.0),
                                              dtype=np.float64)).astype(out.dtype)
        if one_dimensional:
            return out[:, 0], std[:, 0]
        return out, std


class GGNScoreClassifier(ClassifierMixin, BaseGGNScore):
    __doc__ = _with_docs("""Two-layer network classifier trained by GGN-SCORE.

    With ``loss="log_loss"`` the network outputs logits (softmax for K ≥ 3
    classes, one sigmoid logit for two, and one independent sigmoid per label
    for multilabel targets, an indicator matrix ``y``); with
    ``loss="squared_error"`` it is fitted to one-hot (or indicator) targets
    as in the paper's MNIST experiments.
%(objective)s
    Parameters
    ----------
    loss : {"log_loss", "squared_error"}, default="log_loss"
        Training loss. Only ``"log_loss"`` defines ``predict_proba``.
%(parameters)s
    class_weight : dict, list of dict, "balanced" or None, default=None
        Weights of the classes, as in scikit-learn's other classifiers: each
        row's sample weight is multiplied by the weight of its class before
        the weights are normalized, i.e. the fit is the one with
        ``sample_weight=compute_sample_weight(class_weight, y)`` (times any
        ``sample_weight`` given). A dict maps class labels to weights
        (classes not in it weigh 1); ``"balanced"`` gives class c the weight
        ``n_samples / (n_classes * n_c)`` over the rows of the call (with
        ``partial_fit``, each chunk is balanced by its own class counts;
        pass a dict, e.g. from ``compute_class_weight`` on a representative
        sample, for weights fixed across the stream). With early stopping
        the held-out rows keep their class weights, so the validation score
        is weighted too; ``sample_weight_val`` is used as given. For
        multilabel targets (an indicator matrix) ``"balanced"`` or a list of
        one dict per label (keys 0 and 1) weigh each row by the product over
        the labels, as ``RandomForestClassifier`` does for several outputs;
        a single dict is refused there.

    uncertainty : {"auto", "dual", "primal", "last_layer"} or None, \
            default="auto"
        The structure of the linearized Laplace posterior over all training
        rows at the fitted weights (``loss="log_loss"`` only), for
        ``predictive="probit"`` and ``log_marginal_likelihood_``: ``"dual"``
        (exact, kernel form; keeps the training inputs), ``"primal"``
        (exact, p × p), ``"last_layer"``
        (the output layer only, the hidden layer held fixed) or ``"auto"``,
        chosen as for :class:`GGNScoreRegressor` (``"dual"`` while
        ``m·K ≤ 2048``, ``"primal"`` while ``p ≤ 3000``, by the step's cost
        model, else ``"last_layer"``). It is computed on first use
        (``predictive="probit"``, ``log_marginal_likelihood_``, pickling):
        over all training rows it costs a fraction of the fit (digits: the
        last layer, 0.12 s after a 0.44 s fit). None computes none. The one
        used is
        ``uncertainty_``.

    predictive : {"map", "probit"}, default="map"
        What :meth:`predict_proba` returns. ``"map"``: the softmax (sigmoid)
        of the fitted logits. ``"probit"``: the linearized Laplace
        predictive: each logit's posterior variance ``v`` (the prior
        precision scaled by the evidence at the fitted weights) shrinks it
        to ``f / sqrt(1 + π v / 8)`` before the softmax; without a
        posterior (``uncertainty_`` None) the ``"map"`` probabilities.
        ``predict`` and ``decision_function`` always use the fitted logits,
        so with several classes a row near a boundary can be predicted a
        class other than the argmax of its probit probabilities (each logit
        is shrunk by its own variance). During a fit, validation scores and
        scikit-learn's callbacks score the epochs' weights with the
        ``"map"`` probabilities (the posterior is the final weights'). The
        default follows the measurements of the user guide: the probit
        lowered the log-loss and calibration error on a noisy generated
        task and raised both on digits and breast_cancer.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels (for multilabel targets, the column indices
        ``0, ..., n_labels - 1``).
%(attributes)s
    See Also
    --------
    GGNScoreRegressor : The regressor counterpart.
    sklearn.neural_network.MLPClassifier : First-order training of an MLP.
%(references)s
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_ggn import GGNScoreClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = make_pipeline(StandardScaler(),
    ...                     GGNScoreClassifier(n_hidden=32, random_state=0))
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    """)

    _parameter_constraints = {
        **BaseGGNScore._parameter_constraints,
        "loss": [StrOptions({"log_loss", "squared_error"})],
        "class_weight": [dict, list, StrOptions({"balanced"}), None],
        "uncertainty": [StrOptions({"auto", "dual", "primal", "last_layer"}),
                        None],
        "predictive": [StrOptions({"map", "probit"})],
    }

    def __init__(self, loss="log_loss", n_hidden=100, activation="silu",
                 scaling="ntk", fit_intercept=True, regularizer="pseudo_huber",
                 mu="auto", tau="auto", step_size=0.95, damping="adaptive",
                 line_search="auto", linear_solver="auto", solver="ggn",
                 learning_rate=1.0, batch_size="auto", max_iter=100, tol=1e-4,
                 n_iter_no_change=10, early_stopping="auto", validation_fraction=0.1,
                 shuffle=True, random_state=None, warm_start=False, verbose=False,
                 store_initial_weights=False, curvature="auto", hessian="auto",
                 scoring=None, class_weight=None, uncertainty="auto",
                 predictive="map", input_transform="robust_clip"):
        self.loss = loss
        self.class_weight = class_weight
        self.uncertainty = uncertainty
        self.predictive = predictive
        super().__init__(
            n_hidden=n_hidden, activation=activation, scaling=scaling,
            fit_intercept=fit_intercept, regularizer=regularizer, mu=mu, tau=tau,
            step_size=step_size, damping=damping, line_search=line_search,
            linear_solver=linear_solver, solver=solver, learning_rate=learning_rate,
            batch_size=batch_size, max_iter=max_iter, tol=tol,
            n_iter_no_change=n_iter_no_change, early_stopping=early_stopping,
            validation_fraction=validation_fraction, shuffle=shuffle,
            random_state=random_state, warm_start=warm_start, verbose=verbose,
            store_initial_weights=store_initial_weights, curvature=curvature,
            hessian=hessian, scoring=scoring, input_transform=input_transform,
        )

    # whether the last fit's y was a multilabel indicator matrix
    _multilabel = False
    # the predictive's prior precision is scaled by the evidence at the
    # fitted weights (docs: the fit's own prior at a small tau made the
    # probit probabilities far too uncertain)
    _posterior_prior_scale = "evidence"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_label = True
        return tags

    def _loss_object(self):
        if self.loss != "log_loss":
            return SquaredError()
        return MultilabelLogLoss() if self._multilabel else LogLoss()

    _posterior_loss = "log_loss"

    def _class_sample_weight(self, Y):
        if self.class_weight is None:
            return None
        if self._multilabel:
            if isinstance(self.class_weight, dict):
                raise ValueError(
                    "class_weight for multilabel targets must be 'balanced' or a "
                    "list of one dict per label (keys 0 and 1), as for "
                    f"RandomForestClassifier; got a dict: {self.class_weight!r}.")
            if (isinstance(self.class_weight, list)
                    and len(self.class_weight) != Y.shape[1]):
                raise ValueError(
                    f"class_weight has {len(self.class_weight)} dicts but y has "
                    f"{Y.shape[1]} labels: give one dict per label.")
            return self._checked_class_factor(
                compute_sample_weight(self.class_weight, Y.astype(np.int64)))
        if isinstance(self.class_weight, list):
            raise ValueError(
                "class_weight as a list of dicts is for multilabel targets; for "
                "one label per sample, give a dict {class label: weight} or "
                "'balanced'.")
        codes = (Y[:, 0] > 0.5).astype(np.intp) if Y.shape[1] == 1 \
            else Y.argmax(axis=1)
        if self.class_weight == "balanced":
            # the classes present in this call (compute_sample_weight's)
            present = np.unique(codes)
            table = np.zeros(len(self.classes_))
            table[present] = compute_class_weight("balanced", classes=present,
                                                  y=codes)
        else:
            unknown = [c for c in self.class_weight
                       if c not in set(self.classes_.tolist())]
            if unknown:
                raise ValueError(
                    f"class_weight has labels that are not classes: {unknown}; "
                    f"the classes are {self.classes_.tolist()}.")
            table = compute_class_weight(self.class_weight, classes=self.classes_,
                                         y=self.classes_[codes])
        return self._checked_class_factor(table[codes])

    def _checked_class_factor(self, factor):
        """The rows' class-weight factors, or a ValueError naming
        ``class_weight`` when one is negative or not finite."""
        factor = np.asarray(factor, dtype=np.float64)
        if not (np.all(np.isfinite(factor)) and np.all(factor >= 0)):
            raise ValueError(
                "class_weight must give every class a finite, non-negative "
                f"weight; got {self.class_weight!r}.")
        return factor

    def _single_logit(self):
        return (self.loss == "log_loss" and len(self.classes_) == 2
                and not self._multilabel)

    def _validate_input(self, X, y, reset, classes=None):
        X, y = validate_data(self, X, y, reset=reset, dtype=[np.float64, np.float32],
                             accept_sparse=_ACCEPT_SPARSE, ensure_min_samples=1,
                             order="C", multi_output=True)
        if sp.issparse(y):
            y = y.toarray()
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        # type_of_target(y) == "multilabel-indicator", which the check above
        # has just computed: once validated, type_of_target answers it by
        # is_multilabel first (a third of its time on a 1-d y)
        multilabel = is_multilabel(y)
        if y.ndim == 2 and not multilabel:
            raise ValueError(
                "Multioutput target data is not supported with label "
                f"binarization: y has {y.shape[1]} columns of class labels; "
                f"{type(self).__name__} takes one label per row or a "
                "multilabel indicator matrix (columns of 0 and 1).")
        if reset:
            warm = self.warm_start and hasattr(self, "classes_")
            previous = self.classes_ if warm else None
            if multilabel:
                # an indicator matrix: one output (sigmoid) per label, whose
                # labels are the columns, as MLPClassifier's classes_
                labels = np.arange(y.shape[1])
                if classes is not None and len(unique_labels(classes)) == y.shape[1]:
                    labels = unique_labels(classes)
            else:
                # y's labels found once (each unique_labels is a pass over y)
                if classes is None:
                    labels = present = unique_labels(y)
                else:
                    labels = unique_labels(classes)
                    present = unique_labels(y)
                self._check_labels_known(y, labels, "classes", present)
            if previous is not None and set(present if not multilabel
                                            else labels) != set(previous):
                raise ValueError(
                    "warm_start can only be used where `y` has the same classes as "
                    f"in the previous call to fit. Previously got {previous}, `y` "
                    f"has {unique_labels(y) if not multilabel else labels}")
            if len(labels) < 2 and not multilabel:
                raise ValueError(
                    f"{type(self).__name__} needs samples of at least 2 classes in "
                    "the data, but the data contains only one class: "
                    f"{_plain(labels[0])!r}."
                )
            self.classes_ = labels
            self._multilabel = multilabel
            self._encoder = LabelEncoder().fit(labels)
            self.n_outputs_ = 1 if self._single_logit() else len(labels)
        else:
            if classes is not None and not np.array_equal(self.classes_,
                                                          unique_labels(classes)):
                raise ValueError(
                    f"`classes={unique_labels(classes)!r}` is not the same as on "
                    f"last call to partial_fit, was: {self.classes_!r}")
            if multilabel != self._multilabel or (
                    multilabel and y.shape[1] != self.n_outputs_):
                raise ValueError(
                    f"y is {'an indicator matrix of ' if multilabel else 'not '}"
                    f"{'%d labels' % y.shape[1] if multilabel else 'multilabel'}, "
                    f"but the model was fitted "
                    + (f"to {self.n_outputs_} labels." if self._multilabel
                       else f"to the classes {self.classes_}."))
            if not multilabel:
                self._check_labels_known(y, self.classes_, "classes_")
        if multilabel:
            return X, np.ascontiguousarray(y, dtype=X.dtype)
        codes = self._encoder.transform(y)
        if self.n_outputs_ == 1:
            Y = codes.astype(X.dtype).reshape(-1, 1)
        else:
            Y = np.zeros((len(codes), self.n_outputs_), dtype=X.dtype)
            Y[np.arange(len(codes)), codes] = 1
        return X, Y

    @staticmethod
    def _check_labels_known(y, labels, name, present=None):
        """Raise when y has labels not in ``labels`` (``present``: y's own
        labels when already found)."""
        new = np.setdiff1d(unique_labels(y) if present is None else present,
                           labels)
        if len(new):
            raise ValueError(
                f"y has labels not in {name} = {labels}: {new} (each new label "
                "needs its own output; pass all classes to the first call of "
                "partial_fit, or refit).")

    def _score_outputs(self, outputs, Y, sample_weight):
        if self._multilabel:  # subset accuracy, as MLPClassifier.score
            threshold = 0.0 if self.loss == "log_loss" else 0.5
            return accuracy_score(Y > 0.5, outputs > threshold,
                                  sample_weight=sample_weight)
        if Y.shape[1] == 1:  # one logit
            return accuracy_score(Y[:, 0] > 0.5, outputs[:, 0] > 0,
                                  sample_weight=sample_weight)
        return accuracy_score(Y.argmax(axis=1), outputs.argmax(axis=1),
                              sample_weight=sample_weight)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, *, X_val=None, y_val=None,
            sample_weight_val=None):
        """Fit the network to labelled data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs (float64 or float32; other dtypes become float64).
            Sparse matrices (CSR, CSC) are never densified.
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            Class labels (at least two classes), or a multilabel indicator
            matrix.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; integer weights are equivalent to repeating
            rows (exactly so with full-batch training; in mini-batches each
            batch's risk is an unbiased estimate of the weighted risk, its
            rows weighed relative to the mean weight of all rows).
        X_val : array-like of shape (n_val, n_features), default=None
            Validation inputs: their risk and score are recorded in
            ``history_`` after every iteration/epoch, and used instead of a
            held-out split by ``early_stopping``. Inside a ``Pipeline`` they
            are not transformed by the preceding steps.
        y_val : array-like, default=None
            Validation targets (with ``X_val``).
        sample_weight_val : array-like of shape (n_val,), default=None
            Validation sample weights.

        Returns
        -------
        self : GGNScoreClassifier
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight, X_val=X_val, y_val=y_val,
                         sample_weight_val=sample_weight_val)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Run one pass (one epoch, or one step for a full batch) over the data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,) or (n_samples, n_labels)
            Class labels, or a multilabel indicator matrix.
        classes : array-like of shape (n_classes,), default=None
            All classes; required on the first call unless ``y`` has them all.
            On a later call it must equal ``classes_``.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, relative to the mean weight of this call's
            rows (each call is a pass over its own chunk).

        Returns
        -------
        self : GGNScoreClassifier
            The updated estimator.
        """
        return self._fit(X, y, sample_weight, incremental=True, classes=classes)

    def decision_function(self, X):
        """Raw network outputs (logits, or fitted one-hot scores).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes a 1-D score, positive for ``classes_[1]``; for
            multilabel targets one column per label.
        """
        check_is_fitted(self, ["hidden_weights_", "output_weights_"])
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32],
                          accept_sparse=_ACCEPT_SPARSE)
        out = self._raw_output(X.astype(self.hidden_weights_.dtype, copy=False))
        if len(self.classes_) == 2 and not self._multilabel:
            return out[:, 0] if out.shape[1] == 1 else out[:, 1] - out[:, 0]
        return out

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_labels)
            Predicted labels, or for multilabel targets the predicted
            indicator matrix.
        """
        scores = self.decision_function(X)
        if self._multilabel:  # the indicator matrix, as MLPClassifier
            threshold = 0.0 if self.loss == "log_loss" else 0.5
            return (scores > threshold).astype(int)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _has_proba(self):
        # As scikit-learn's SVC(probability=False): hasattr is False, and the
        # AttributeError's cause says why.
        if self.loss != "log_loss":
            raise AttributeError(
                f"predict_proba is not available with loss={self.loss!r}: the "
                "squared-error classifier fits one-hot targets and its outputs "
                "are not probabilities. Use loss='log_loss' for class "
                "probabilities.")
        return True

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities (``loss="log_loss"`` only).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Softmax (or sigmoid) of the logits, shrunk by their posterior
            variance with ``predictive="probit"``; for multilabel targets
            each label's probability (rows need not sum to one).
        """
        if (self.predictive == "probit"
                and self._posterior()["_laplace"] is not None):
            return self._probit_proba(X)
        scores = self.decision_function(X)
        if self._multilabel:  # independent sigmoids: rows need not sum to 1
            return MultilabelLogLoss().probabilities(scores)
        if scores.ndim == 1:
            # σ(−z) for the first class, not 1 − σ(z), which cancels to a few
            # float32 ulps when σ(z) is near 1
            return expit(np.column_stack([-scores, scores]))
        return LogLoss().probabilities(scores)

    def _probit_proba(self, X):
        """The probit approximation of the linearized Laplace predictive:
        each logit ``f_c ~ N(μ_c, v_c)`` is shrunk to
        ``μ_c / sqrt(1 + π v_c / 8)`` before the sigmoid (for one logit
        MacKay's approximation of E σ(f), within 0.03 of it for every μ
        and v) or the softmax (the per-class generalization)."""
        check_is_fitted(self, ["hidden_weights_", "output_weights_"])
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32],
                          accept_sparse=_ACCEPT_SPARSE)
        dtype = self.hidden_weights_.dtype
        # (mapped once for the mean and variance)
        Z, Za = self._network_inputs(X, augmented=True)
        logits = self._outputs_at(Z.astype(dtype, copy=False), Za).astype(np.float64)
        variance = self._output_variance(Z, Za)
        logits /= np.sqrt(1.0 + np.pi * variance / 8.0)
        if self._multilabel:
            proba = MultilabelLogLoss().probabilities(logits)
        elif logits.shape[1] == 1:
            proba = expit(np.column_stack([-logits[:, 0], logits[:, 0]]))
        else:
            proba = LogLoss().probabilities(logits)
        return proba.astype(dtype, copy=False)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probabilities.
        """
        # scikit-learn's convention: exactly log(predict_proba), -inf included.
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))
