"""
Choosing tau: generalized cross-validation, then the evidence
=============================================================

With ``tau="auto"`` a full-batch :class:`~sklearn_ggn.GGNScoreRegressor`
chooses the regularization strength τ from the data, in two stages.

First, before its first step: at the initial weights the network is linear
in its parameters, ``Φ(θ) ≈ Φ(θ0) + J (θ − θ0)``, and the penalty's
quadratic model is a ridge ``½ τ θᵀ H̄ θ`` (``H̄ = ḡ''(θ0)``). The fitted
values of that kernel ridge regression are a linear smoother
``S(τ) = G (G + τ I)⁻¹`` of the targets, with the Gram ``G = J̃ H̄⁻¹ J̃ᵀ``
that the Gauss-Newton step factorizes anyway, and its generalized
cross-validation score

.. math::

    \\mathrm{GCV}(\\tau) = \\frac{m \\, \\|(I - S(\\tau)) z\\|^2}
                              {(m - \\operatorname{tr} S(\\tau))^2}

costs one eigendecomposition of G for a whole grid of τ. The τ of least GCV
among τ ≥ 1e-4 is the first stage's (the curve is ``tau_path_``).

Second, the linearization at θ0 cannot see a network that leaves its linear
regime, so the fit then climbs the Laplace evidence of the *fitted* network
(``log_marginal_likelihood_`` at the fitted weights): it refits at τ·√10
(or τ/√10), warm-started from the best fit so far, while the evidence
rises, and keeps the best (``tau_path_["evidence_path"]``, ``tau_``).
``tau="gcv"`` stops after the first stage.

This example plots both criteria on the diabetes data (309 training rows,
one output) against the test R² of fits at fixed values of τ. It runs in
about ten seconds; ``SKLEARN_GGN_QUICK=1`` shrinks it to a smoke test of a
few seconds (three fixed τ of few iterations), whose numbers mean little.
"""

import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreRegressor

QUICK = os.environ.get("SKLEARN_GGN_QUICK") == "1"
FIXED_TAUS = np.logspace(-5, -1, 3 if QUICK else 9)
MAX_ITER = 5 if QUICK else 100

X, y = load_diabetes(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3,
                                                    random_state=0)


def fit(tau, max_iter=MAX_ITER):
    model = make_pipeline(StandardScaler(),
                          GGNScoreRegressor(tau=tau, max_iter=max_iter,
                                            random_state=0))
    with warnings.catch_warnings():
        # the quick run stops after a few iterations on purpose
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X_train, y_train)


# %%
# The default fit: the first stage's τ, then the evidence path from there
# (a path needs fits that converge: this one runs to its default max_iter
# even in the quick run).
auto = fit("auto", max_iter=200)
reg = auto[-1]
path, climb = reg.tau_path_, reg.tau_path_["evidence_path"]
print(f"GCV (on {path['n_rows']} rows) chose {climb['tau'][0]:.3g}; the evidence "
      f"path tried {', '.join(f'{t:.3g}' for t in climb['tau'])} and kept "
      f"tau_ = {reg.tau_:.3g}: test R2 = {auto.score(X_test, y_test):.3f}")

# %%
# Fits at fixed τ for comparison (what a grid search would try).
scores = [fit(tau).score(X_test, y_test) for tau in FIXED_TAUS]
for tau, score in zip(FIXED_TAUS, scores, strict=True):
    print(f"tau = {tau:8.1e}: test R2 = {score:.3f}")

# %%
# Left: the GCV curve of the first stage over its grid (the grey band is
# the part below ``tau_min``, never chosen) and the held-out score of the
# fixed-τ fits. Right: the log evidence of each fit of the path, the
# chosen one circled. The GCV curve is computed once, before the first
# step; each point of the path is a fit.
fig, (ax, ev) = plt.subplots(1, 2, figsize=(10, 3.8))
ax.axvspan(path["tau"].min(), path["tau_min"], color="0.9")
ax.loglog(path["tau"], path["gcv"], color="C0", label="GCV (linearized, θ0)")
ax.set_xlabel("τ")
ax.set_ylabel("GCV", color="C0")
ax.axvline(climb["tau"][0], color="C0", linestyle=":", label="GCV's τ")
ax.axvline(reg.tau_, color="k", linestyle="--", label=f"tau_ = {reg.tau_:.2g}")
right = ax.twinx()
right.semilogx(FIXED_TAUS, scores, color="C1", marker="o",
               label="test R² at fixed τ")
right.set_ylabel("test R²", color="C1")
lines = ax.get_legend_handles_labels()
more = right.get_legend_handles_labels()
ax.legend(lines[0] + more[0], lines[1] + more[1], loc="lower left", fontsize=8)
ax.set_title("diabetes: GCV at θ0")
order = np.argsort(climb["tau"])
ev.semilogx(climb["tau"][order], climb["log_evidence"][order], "o-", color="C2")
ev.semilogx(reg.tau_, climb["log_evidence"][climb["chosen"]], "o", ms=14,
            mfc="none", color="k")
ev.set_xlabel("τ")
ev.set_ylabel("log evidence of the fitted network")
ev.set_title("the evidence path")
fig.tight_layout()
plt.show()
