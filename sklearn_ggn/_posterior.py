"""The Laplace posterior of a fitted estimator: computed on first use from
the fit's rows, kept in the fit's cache, released with the rows; absent
from an estimator loaded from a file saved without it."""

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from .engine import Problem, StepFailure


class PosteriorNotStoredError(ValueError, AttributeError):
    """The estimator was loaded from a model file saved without its Laplace
    posterior (``store_posterior=False``), and the training rows it is
    computed from are not in the file.

    A ``ValueError`` and an ``AttributeError``, as scikit-learn's
    ``NotFittedError``: ``hasattr(est, "uncertainty_")`` is False."""


def not_stored_message(estimator):
    """What an estimator loaded without its posterior says when asked for it."""
    name = type(estimator).__name__
    return (f"This {name} was unpickled (or loaded by skops) from a state "
            "saved without its Laplace posterior (store_posterior=False, the "
            "default; estimators returned by joblib's process workers or by "
            "dask are pickled too), which does not hold the training rows it "
            f"is computed from: {estimator._posterior_uses} are not "
            "available. To keep them, save the fitted estimator with "
            "store_posterior=True (call set_params(store_posterior=True) "
            "before saving it, or fit with it); this one gets them back only "
            "by a refit on the training rows.")


def not_stored():
    """The posterior cache of an estimator saved without its posterior: no
    state and no pending rows."""
    return {"state": None, "inputs": None}


def no_posterior(reason):
    """The posterior's attributes of a fit that has none, and why."""
    return {"_laplace": None, "uncertainty_": None,
            "log_marginal_likelihood_": None, "_laplace_unavailable": reason}


def fitting_posterior():
    """The posterior cache of the copies that score a model during its fit
    (validation scores, scikit-learn's callbacks): none, so that they use
    the fitted logits (a probit predictive needs the final weights')."""
    return {"state": no_posterior("the model is being fitted"), "inputs": None}


def _detached(array, sources):
    """``array``, or a copy of it when it may share memory with one of the
    arrays ``sources`` (dense or sparse)."""
    def buffer(a):
        return a.data if sp.issparse(a) else a

    mine = buffer(array)
    for source in sources:
        theirs = buffer(source)
        if isinstance(theirs, np.ndarray) and np.may_share_memory(mine, theirs):
            return array.copy()
    return array


def posterior_cache(estimator, reason, X, Y, sample_weight, tau, theta,
                    incremental, target_attributes, sources=()):
    """The cache of a fit's posterior: its inputs, or why it has none. The
    rows and the fit's parameters are one value, so that a thread reads
    both or neither; a fit without a posterior keeps no rows.

    ``sources`` are the arrays the fit was given, as validated (the
    caller's own memory when validation did not copy them): rows that may
    share memory with them are copied, so that a caller changing its
    arrays after ``fit`` does not change the posterior computed later."""
    if reason is not None:
        return {"state": no_posterior(reason), "inputs": None}
    X, Y, sample_weight = (_detached(a, sources) for a in (X, Y, sample_weight))
    return {"state": None,
            "inputs": ((X, Y, sample_weight, float(tau),
                        np.array(theta, dtype=np.float64), bool(incremental),
                        dict(target_attributes)),
                       estimator.get_params(deep=False))}


def noise_estimable(targets, dof):
    """Whether a fit's residuals say anything of the noise: at least one
    residual degree of freedom, the weighted targets (rows × outputs) less
    the effective parameters ``dof`` of the linearized fit."""
    return targets - dof >= 1.0


class PosteriorMixin:
    """The posterior's glue of the estimators: ``uncertainty_``,
    ``log_marginal_likelihood_`` and the output variance of the predictive
    distribution (see :mod:`sklearn_ggn._laplace`)."""

    # the prior of the Laplace posterior: the fit's ("fitted"), or scaled by
    # the evidence at the fitted weights ("evidence"; see _laplace)
    _posterior_prior_scale = "fitted"

    # the loss whose Laplace posterior the estimator offers
    _posterior_loss = None

    # what needs the posterior (named when it is not in a loaded model file)
    _posterior_uses = "uncertainty_ and log_marginal_likelihood_"

    def _posterior_unavailable(self, incremental, tau):
        """Why no Laplace posterior is computed for this fit, or None."""
        if self._posterior_loss is None:
            return "this estimator has no predictive uncertainty"
        if self.uncertainty is None:
            return "uncertainty=None"
        if self.loss != self._posterior_loss or self.solver != "ggn":
            return (f"the Laplace posterior is defined for "
                    f"loss={self._posterior_loss!r} fitted by solver='ggn' "
                    f"(this is loss={self.loss!r}, solver={self.solver!r})"
                    + getattr(self._loss_object(), "posterior_note", ""))
        if incremental:
            return ("partial_fit sees one chunk of the data, and the posterior "
                    "needs the curvature over the whole training set: call fit")
        if not tau > 0:
            return ("tau=0 puts no prior on the weights (the Laplace "
                    "posterior is improper): use tau > 0")
        return None

    def _posterior(self):
        """The Laplace posterior's attributes (``_laplace``,
        ``uncertainty_``, ``log_marginal_likelihood_``, ...), computed on
        first use from the fit's rows with the fit's parameters and kept in
        the fit's cache (the estimator's attributes stay as the fit left
        them: a cached function of the fitted state); the rows are released
        then.

        Raises
        ------
        PosteriorNotStoredError
            When the estimator was loaded from a file saved without its
            posterior (neither state nor rows in the cache).
        """
        cache = self.__dict__.get("_posterior_cache")
        if cache is None:
            raise NotFittedError(f"This {type(self).__name__} instance is not "
                                 "fitted yet. Call 'fit' with appropriate "
                                 "arguments before using this estimator.")
        # (one read of the pending inputs; the state is stored before they
        # are released, so a thread that finds none finds the state: two
        # threads may both compute it, never neither)
        pending = cache["inputs"]
        if pending is not None:
            (X, Y, sample_weight, tau, theta, incremental, target), params = pending
            # the estimator as it was fitted (its parameters then)
            fitted = type(self).__new__(type(self))
            fitted.__dict__.update(self.__dict__)
            fitted.__dict__.update(params)
            network = fitted._network(X.shape[1], Y.shape[1])
            cache["state"] = fitted._posterior_attributes(
                network, X, Y, sample_weight, tau, theta, incremental, target)
            cache["inputs"] = None
        state = cache["state"]
        if state is None:  # (a file saved without it: see not_stored)
            raise PosteriorNotStoredError(not_stored_message(self))
        return state

    @property
    def uncertainty_(self):
        """The structure of the Laplace posterior (``"dual"``, ``"primal"``,
        ``"last_layer"``), or None when there is none."""
        return self._posterior()["uncertainty_"]

    @property
    def log_marginal_likelihood_(self):
        """The log evidence of the Laplace approximation, or None."""
        return self._noise_checked()["log_marginal_likelihood_"]

    def _noise_checked(self):
        """The posterior, after a warning when its noise variance (squared
        error) has no residual degrees of freedom behind it: what uses σ̂²
        (the intervals, the evidence, ``noise_variance_``) says so."""
        state = self._posterior()
        laplace = state.get("_laplace")
        if laplace is None or laplace.get("noise_variance") is None:
            return state
        # the residual degrees of freedom of σ̂²: below one it says nothing
        targets = laplace["n_weighted"] * self.n_outputs_
        if not noise_estimable(targets, laplace["dof"]):
            warnings.warn(
                "The noise variance cannot be estimated: the fit spends "
                f"{laplace['dof']:.3g} effective parameters on {targets:.3g} "
                "training targets (sample weights count as rows), so its "
                "residuals say nothing of the noise: its predictive standard "
                "deviations and evidence are not meaningful. Use more rows (or "
                "weights that count them), or a larger tau.", UserWarning)
        return state

    def _posterior_attributes(self, network, X, Y, sample_weight, tau, theta,
                              incremental, target_attributes):
        """The linearized Laplace posterior at the fitted θ over all training
        rows (``sklearn_ggn._laplace``), as fitted attributes: the stored
        factor ``_laplace`` (a dict of plain arrays), ``uncertainty_``,
        ``log_marginal_likelihood_`` and, for the squared error,
        ``noise_variance_``."""
        from . import _laplace

        reason = self._posterior_unavailable(incremental, tau)
        if reason is not None:
            return no_posterior(reason)
        attributes = {"_laplace": None, "uncertainty_": None,
                      "log_marginal_likelihood_": None}
        problem = Problem(network, self._loss_object(), self._regularizer_object(),
                          tau, X.astype(np.float64, copy=False),
                          Y.astype(np.float64, copy=False),
                          sample_weight.astype(np.float64, copy=False))
        rows = int(np.count_nonzero(sample_weight > 0))
        try:
            structure = _laplace.choose_structure(self.uncertainty, network, rows,
                                                  sp.issparse(X))
        except MemoryError as exc:
            # the fit itself succeeded: keep it, with the structure that fits
            warnings.warn(f"uncertainty={self.uncertainty!r} does not fit in "
                          f"memory ({exc}); the Laplace posterior is computed "
                          "for the last layer only (uncertainty='last_layer').",
                          UserWarning)
            structure = "last_layer"
        theta = theta.astype(np.float64)
        try:
            posterior = _laplace.fit_posterior(problem, theta, structure,
                                               self._posterior_prior_scale)
        except StepFailure as exc:
            attributes["_laplace_unavailable"] = (
                f"the Laplace posterior ({structure}) could not be factorized: "
                f"{exc}")
            warnings.warn("No predictive uncertainty: "
                          f"{attributes['_laplace_unavailable']}. Try a larger "
                          "tau.", UserWarning)
            return attributes
        log_z, sigma2 = _laplace.log_evidence(problem, theta, posterior)
        posterior["noise_variance"] = sigma2
        posterior["n_weighted"] = float(np.sum(sample_weight, dtype=np.float64))
        attributes.update(_laplace=posterior, uncertainty_=structure,
                          _laplace_unavailable=None,
                          **self._evidence_attributes(log_z, sigma2, posterior,
                                                      target_attributes))
        attributes.update(self._noise_model_attributes(
            network, X, Y, sample_weight, theta, posterior))
        return attributes

    def _climb_evidence(self, run, solved, network, rows, fitted):
        """``tau="auto"``'s second stage: from the solve at GCV's τ, climb the
        Laplace evidence of the fitted network (:func:`~sklearn_ggn._tau.
        evidence_path`, ``run(tau, theta_start)`` solving); the solve kept,
        with ``tau_`` and ``tau_path_["evidence_path"]`` set in ``fitted``.
        The path starts from a first solve that converged or reached
        ``max_iter`` (at too small a τ the first solve is slow and
        interpolates: the path is what leaves it), scored at its last
        weights as every later solve is; a first solve that diverged or was
        stopped keeps the criterion's solve, and so does a fit with
        scikit-learn callbacks (whose context is one fit). A solve kept at
        ``max_iter`` warns as any fit at ``max_iter``."""
        from ._tau import evidence_path

        if (self.__dict__.get("_skl_callbacks")
                or solved.result.status in ("diverged", "stopped")):
            return solved
        X, Y, sample_weight = rows
        solved, fitted["tau_path_"]["evidence_path"] = evidence_path(
            run, lambda s: self._fitted_evidence(network, X, Y, sample_weight,
                                                 s.problem.tau, s.result),
            solved, self.verbose)
        fitted["tau_"] = solved.problem.tau
        return solved

    def _fitted_evidence(self, network, X, Y, sample_weight, tau, result):
        """The log evidence of the Laplace posterior at a solve's θ on all
        rows, in the units the network is trained in, with the structure
        ``uncertainty="auto"`` chooses for dense rows (whatever
        ``uncertainty`` says, and the same for a sparse X as for its dense
        copy: τ does not depend on either); ``-inf`` for a solve that
        diverged or was stopped, a posterior that cannot be factorized, or a
        fit that spends all but one of its targets' degrees of freedom (its
        noise variance, and so its evidence, says nothing: the warning of
        ``noise_variance_``). A solve that reached ``max_iter`` is scored at
        its last weights."""
        from . import _laplace

        if (result.status in ("diverged", "stopped")
                or not np.all(np.isfinite(result.theta))):
            return -np.inf
        problem = Problem(network, self._loss_object(), self._regularizer_object(),
                          tau, X.astype(np.float64, copy=False),
                          Y.astype(np.float64, copy=False),
                          sample_weight.astype(np.float64, copy=False))
        theta = result.theta.astype(np.float64)
        try:
            structure = _laplace.choose_structure(
                "auto", network, int(np.count_nonzero(sample_weight > 0)))
            posterior = _laplace.fit_posterior(problem, theta, structure,
                                               self._posterior_prior_scale,
                                               keep_rows=False)
        except (StepFailure, MemoryError):
            return -np.inf
        targets = float(np.sum(sample_weight, dtype=np.float64)) * Y.shape[1]
        if not noise_estimable(targets, posterior["dof"]):
            return -np.inf
        log_z = _laplace.log_evidence(problem, theta, posterior)[0]
        return log_z if np.isfinite(log_z) else -np.inf

    def _noise_model_attributes(self, network, X, Y, sample_weight, theta,
                                posterior):
        """The posterior's model of the noise (the regressor's
        ``noise="heteroscedastic"``); none by default."""
        return {}

    def _evidence_attributes(self, log_z, sigma2, posterior, target_attributes):
        """``log_marginal_likelihood_`` (and the regressor's noise) in the
        units of y."""
        return {"log_marginal_likelihood_": log_z}

    def _output_variance(self, Z, Za=None):
        """``J(x) P⁻¹ J(x)ᵀ`` per row and output (n, K), in training units,
        at the network's inputs ``Z`` (:meth:`_network_inputs` of validated
        X), or at their augmented form ``Za`` when given."""
        from . import _laplace

        state = self._posterior()
        posterior = state["_laplace"]
        if posterior is None:
            raise ValueError(
                "No predictive uncertainty is available: "
                f"{state.get('_laplace_unavailable') or 'refit the estimator'}.")
        network = self._fitted_network(Z.shape[1], self.output_weights_.shape[1])
        theta = self._fitted_theta(network, np.float64)
        variance = _laplace.output_variance(
            network, theta, posterior, network.augment(Z) if Za is None else Za)
        return variance / posterior["n_weighted"]
