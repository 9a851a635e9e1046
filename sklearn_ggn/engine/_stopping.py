"""Stopping rules on validation data that the solver owns.

A rule is called once per iteration/epoch, after the solver's callback has
added the validation risk and score to the record, as
``rule(record, theta, n_iter)``; it returns None to go on, or a sentence
saying why the fit ends. The solver then stops with status ``"stopped"``
and that sentence as its reason. The objective's own rule is
:class:`~sklearn_ggn.engine.NoImprovement`.
"""

import numpy as np


class EarlyStopping:
    """Stop when the validation score has not improved by ``tol`` for more
    than ``n_iter_no_change`` iterations in a row, keeping the parameters
    of the best score (scikit-learn's MLP rule).

    Parameters
    ----------
    tol : float
        Minimum improvement of the score.
    n_iter_no_change : int or float
        Patience (``np.inf``: never).
    theta0 : ndarray of shape (p,)
        The parameters before the first iteration (kept until a score beats
        ``best_score``).
    best_score : float, default=-np.inf
        The best score of earlier calls of a warm-started sequence.
    scores : list or None, default=None
        The scores of earlier calls; this call's are appended to it.

    Attributes
    ----------
    best_theta : ndarray of shape (p,)
        The parameters of the best score.
    """

    def __init__(self, tol, n_iter_no_change, theta0, best_score=-np.inf,
                 scores=None):
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.best_theta = theta0
        self.best_score = best_score
        self.scores = [] if scores is None else scores
        self.count = 0

    def __call__(self, record, theta, n_iter):
        score = record["validation_score"]
        self.scores.append(score)
        if score > self.best_score:
            self.best_theta = theta
        if score < self.best_score + self.tol:
            self.count += 1
        else:
            self.count = 0
        self.best_score = max(self.best_score, score)
        if self.count > self.n_iter_no_change:
            return (f"the validation score did not improve by more than "
                    f"tol={self.tol} for {self.n_iter_no_change} consecutive "
                    "iterations")
        return None


class OverfittingRule:
    """Whether a fit overfits its held-out rows, epoch by epoch.

    Overfitting: for ``patience`` epochs in a row the held-out risk stays
    more than ``rise`` above its running minimum and more than ``gap``
    times the epoch's training risk, and the held-out score of those epochs
    is on average no better than the best it reached by the risk's minimum.

    Parameters
    ----------
    rise : float
        Relative rise of the held-out risk above its minimum.
    gap : float
        Ratio of the held-out risk to the training risk.
    patience : int
        Epochs in a row.
    """

    def __init__(self, rise, gap, patience):
        self.rise = rise
        self.gap = gap
        self.patience = patience
        self.best_risk = np.inf
        self.above = 0
        # the best held-out score so far and up to the epoch of the risk's
        # minimum (NaN while no score is finite), and every epoch's score
        self.max_score = np.nan
        self.best_score = np.nan
        self.scores = []

    def _far_above(self, risk, training_risk):
        return risk > self.gap * training_risk

    def may_be_memorizing(self, risk, training_risk):
        """After the epoch just recorded: its held-out risk far above the
        training risk and above its minimum."""
        return self._far_above(risk, training_risk) and risk > self.best_risk

    def __call__(self, risk, score, training_risk):
        """Record one epoch; True when the fit overfits."""
        self.scores.append(score)
        if np.isfinite(score):  # (not the NaN of a scorer that failed)
            self.max_score = float(np.fmax(self.max_score, score))
        if risk < self.best_risk:
            # the best so far, not the minimum's own: on a few dozen
            # held-out rows one epoch's score is a row or two off
            self.best_score = self.max_score
        self.best_risk = min(self.best_risk, risk)
        # risen above its minimum, and far above the training risk: a rise
        # that the training risk keeps up with is the noise of early epochs
        overfits = (risk > (1 + self.rise) * self.best_risk
                    and self._far_above(risk, training_risk))
        self.above = self.above + 1 if overfits else 0
        if self.above < self.patience:
            return False
        # no better in the score than by the risk's minimum: a log-loss that
        # grows with the confidence of wrong predictions while the accuracy
        # still improves is not overfitting the user's metric; without
        # finite scores the risk decides alone
        recent = self.scores[-self.patience:]
        if not (np.isfinite(self.best_score) and np.all(np.isfinite(recent))):
            return True
        return sum(recent) / len(recent) <= self.best_score

    @property
    def scored(self):
        """Whether any held-out score was finite."""
        return bool(np.isfinite(self.scores).any())


class OverfittingWatch:
    """The overfitting watch: held-out rows watched for ``epochs`` epochs.

    The fit stops when :class:`OverfittingRule` fires (``overfitting_at``
    is then the epoch), or, from epoch ``epochs`` on and before
    ``longest``, as soon as the held-out risk no longer says the fit may be
    memorizing its rows (back within ``gap`` times the training risk, or
    at a new minimum: ``joined``). Otherwise the solver's ``max_iter``
    (``longest``) ends the watch.

    Parameters
    ----------
    epochs : int
        Epochs watched at least.
    longest : int
        Epochs watched at most (the solver's ``max_iter``).
    rise, gap : float
        See :class:`OverfittingRule`.
    patience : int
        See :class:`OverfittingRule`.
    """

    def __init__(self, epochs, longest, rise, gap, patience):
        self.epochs = epochs
        self.longest = longest
        self.rule = OverfittingRule(rise, gap, patience)
        self.overfitting_at = None
        self.joined = False

    def __call__(self, record, theta, n_iter):
        if "validation_risk" not in record:
            return None
        risk, training = record["validation_risk"], record["risk"]
        if self.rule(risk, record["validation_score"], training):
            self.overfitting_at = n_iter
            return (f"the held-out risk of the overfitting watch stayed above "
                    f"its minimum for {self.rule.patience} epochs"
                    + (", its score no better" if self.rule.scored else ""))
        if (self.epochs <= n_iter < self.longest
                and not self.rule.may_be_memorizing(risk, training)):
            self.joined = True
            return ("the held-out risk of the overfitting watch is at its "
                    f"minimum or within {self.rule.gap:g} times the training "
                    "risk")
        return None

    def best_epoch(self, risks):
        """The watched epoch (1-based) of the best held-out score, or without
        a finite score the one of the least held-out ``risks``."""
        scores = self.rule.scores
        if self.rule.scored:
            return int(np.argmax(np.nan_to_num(scores, nan=-np.inf))) + 1
        return int(np.nanargmin(risks)) + 1
