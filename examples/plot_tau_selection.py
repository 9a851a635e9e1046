"""
Choosing tau by generalized cross-validation
============================================

With ``tau="auto"`` a full-batch :class:`~sklearn_ggn.GGNScoreRegressor`
chooses the regularization strength τ before its first step, from the data:
at the initial weights the network is linear in its parameters,
``Φ(θ) ≈ Φ(θ0) + J (θ − θ0)``, and the penalty's quadratic model is a ridge
``½ τ θᵀ H̄ θ`` (``H̄ = ḡ''(θ0)``). The fitted values of that kernel ridge
regression are a linear smoother ``S(τ) = G (G + τ I)⁻¹`` of the targets,
with the Gram ``G = J̃ H̄⁻¹ J̃ᵀ`` that the Gauss-Newton step factorizes
anyway, and its generalized cross-validation score

.. math::

    \\mathrm{GCV}(\\tau) = \\frac{m \\, \\|(I - S(\\tau)) z\\|^2}
                              {(m - \\operatorname{tr} S(\\tau))^2}

costs one eigendecomposition of G for a whole grid of τ. The estimator keeps
the τ of least GCV among τ ≥ 1e-4 in ``tau_`` (the linearization at θ0
cannot see a near-Newton fit at smaller τ leave the linear regime) and the
curve in ``tau_path_``.

This example plots that curve on the diabetes data (309 training rows, one
output) against the test R² of fits at fixed values of τ, and marks the
chosen ``tau_``. It runs in about ten seconds; ``SKLEARN_GGN_QUICK=1``
shrinks it to a smoke test of a few seconds (three fixed τ, few
iterations), whose numbers mean little.
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


def fit(tau):
    model = make_pipeline(StandardScaler(),
                          GGNScoreRegressor(tau=tau, max_iter=MAX_ITER,
                                            random_state=0))
    with warnings.catch_warnings():
        # the quick run stops after a few iterations on purpose
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X_train, y_train)


# %%
# The default fit: τ from the GCV of the linearized problem.
auto = fit("auto")
reg = auto[-1]
path = reg.tau_path_
print(f"tau_ = {reg.tau_:.3g} (GCV on {path['n_rows']} rows), "
      f"test R2 = {auto.score(X_test, y_test):.3f}")

# %%
# Fits at fixed τ for comparison (what a grid search would try).
scores = [fit(tau).score(X_test, y_test) for tau in FIXED_TAUS]
for tau, score in zip(FIXED_TAUS, scores, strict=True):
    print(f"tau = {tau:8.1e}: test R2 = {score:.3f}")

# %%
# The criterion over its grid (left axis) and the held-out score of the
# fixed-τ fits (right axis); the dotted line is ``tau_``, the grey band the
# part of the grid below ``tau_min`` that is never chosen. The GCV curve is
# computed once, before the first step; the test scores need one fit per τ.
fig, ax = plt.subplots(figsize=(6.5, 3.8))
ax.axvspan(path["tau"].min(), path["tau_min"], color="0.9")
ax.loglog(path["tau"], path["gcv"], color="C0", label="GCV (linearized, θ0)")
ax.set_xlabel("τ")
ax.set_ylabel("GCV", color="C0")
ax.axvline(reg.tau_, color="k", linestyle=":", label=f"tau_ = {reg.tau_:.2g}")
right = ax.twinx()
right.semilogx(FIXED_TAUS, scores, color="C1", marker="o",
               label="test R² at fixed τ")
right.set_ylabel("test R²", color="C1")
lines = ax.get_legend_handles_labels()
more = right.get_legend_handles_labels()
ax.legend(lines[0] + more[0], lines[1] + more[1], loc="lower left")
ax.set_title("diabetes: τ chosen by GCV")
fig.tight_layout()
plt.show()
