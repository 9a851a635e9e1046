"""
Test loss and sparsity versus the smoothing parameter mu
========================================================

This reproduces the **left panel of the paper's Figure "fig:testloss-vs-mu-tau"**
(section "Test loss vs. smoothing parameter" of Adeoye, Petersen & Bemporad,
arXiv:2404.14875): GGN-SCORE on the teacher-student problem for many values
of the smoothing parameter μ of the pseudo-Huber penalty, with τ = 1e-4
fixed, averaged over independent runs.

Paper's settings: inputs uniform on the unit sphere in d = 5 dimensions,
a 5-unit SiLU teacher, m = 500 training and 1000 test points, a 500-unit SiLU
student without biases and with NTK scaling κ(n) = 1/√n, full batch,
ᾱ = 0.95, τ = 1e-4, 41 values of μ "evenly spaced" in [1e-3, 10] (we space
them evenly on a log axis, as the four decades suggest), 10 independent runs
per value. The paper does not state the
number of iterations per run.

What this script runs by default (about a minute on a 2-core laptop):

* 9 values of μ (half a decade apart) instead of 41,
* 2 independent runs (teacher, data and initialization all re-drawn) instead
  of 10,
* 100 full-batch GGN-SCORE iterations per run (``tol=0``, so every μ gets
  the same budget).

Set the environment variable ``SKLEARN_GGN_FULL=1`` for 41 values of μ,
10 runs and 1000 iterations per run (our choice of iteration count; several
hours).

``SKLEARN_GGN_QUICK=1`` instead shrinks the run to a smoke test of a few
seconds (3 values of μ, one run, 10 iterations; the test suite builds
the gallery that way), whose numbers mean nothing.

The paper plots the test loss (½·MSE) and the "number of zeros" of θ (the
entries outside the smallest set holding 99.9 % of ‖θ‖₁, see
:func:`sklearn_ggn.diagnostics.n_zeros`). Small μ makes the self-concordance
constant M_g = 2 μ^-0.7 p^0.2 large, hence the adaptive step
α = min(1, ᾱ / (1 + M_g η)) tiny: the fit barely moves in a fixed budget.
"""

import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_ggn import GGNScoreRegressor
from sklearn_ggn.datasets import make_teacher_student
from sklearn_ggn.diagnostics import n_zeros

FULL = os.environ.get("SKLEARN_GGN_FULL") == "1"
QUICK = os.environ.get("SKLEARN_GGN_QUICK") == "1"

N_HIDDEN, N_FEATURES, TAU = 500, 5, 1e-4
if FULL:
    MUS, N_RUNS, MAX_ITER = np.logspace(-3, 1, 41), 10, 1000
elif QUICK:
    MUS, N_RUNS, MAX_ITER = np.logspace(-3, 1, 3), 1, 10
else:
    MUS, N_RUNS, MAX_ITER = np.logspace(-3, 1, 9), 2, 100


def half_mse(model, X, y):
    """The paper's loss: ½ · mean squared error."""
    return 0.5 * np.mean((model.predict(X) - y) ** 2)


# results[i, run] = (train loss, test loss, number of zeros) for MUS[i]
results = np.empty((len(MUS), N_RUNS, 3))
start = time.perf_counter()
for run in range(N_RUNS):
    X, y, X_test, y_test = make_teacher_student(
        n_train=500, n_test=1000, n_features=N_FEATURES, random_state=run
    )
    for i, mu in enumerate(MUS):
        model = GGNScoreRegressor(
            n_hidden=N_HIDDEN, mu=mu, tau=TAU, fit_intercept=False,
            batch_size=None, max_iter=MAX_ITER, tol=0, random_state=run,
            standardize_target=False,  # the paper trains on y as given
            input_transform=None,  # ... and on X as given
            curvature="exact", hessian="diagonal",  # the paper's step
            damping="tau",  # and its H = τ ḡ'' from the first iteration
        )
        with warnings.catch_warnings():
            # With tol=0 every fit runs MAX_ITER iterations on purpose (the
            # same budget for every value), so "maximum iterations reached"
            # is expected, and so is a value that underfits in that budget
            # ("did not learn": the sweep's point); a divergence would still
            # be shown.
            warnings.filterwarnings("ignore", message="Maximum iterations",
                                category=ConvergenceWarning)
            warnings.filterwarnings("ignore", message="The fit did not learn",
                                category=ConvergenceWarning)
            model.fit(X, y)
        results[i, run] = (half_mse(model, X, y), half_mse(model, X_test, y_test),
                           n_zeros(model))
elapsed = time.perf_counter() - start
n_params = N_HIDDEN * (N_FEATURES + 1)

# %%
# The numbers behind the plot (means over the runs; p is the number of
# parameters).
mean = results.mean(axis=1)
print(f"tau={TAU:g}, {N_RUNS} runs x {MAX_ITER} iterations, p={n_params}, "
      f"{elapsed:.0f} s")
print(f"{'mu':>8s} {'train loss':>11s} {'test loss':>11s} {'zeros':>7s}")
for mu, (train, test, zeros) in zip(MUS, mean, strict=True):
    print(f"{mu:8.3g} {train:11.3e} {test:11.3e} {zeros:7.0f}")

# %%
# Test loss and number of zeros against μ; the bands span the runs.
fig, (ax_loss, ax_zeros) = plt.subplots(1, 2, figsize=(9, 3.5))
for column, label in ((0, "train"), (1, "test")):
    ax_loss.loglog(MUS, mean[:, column], marker="o", label=f"{label} loss")
    ax_loss.fill_between(MUS, results[:, :, column].min(axis=1),
                         results[:, :, column].max(axis=1), alpha=0.2)
ax_loss.set_xlabel("μ")
ax_loss.set_ylabel("½ · MSE")
ax_loss.set_title(f"GGN-SCORE, τ = {TAU:g}, {MAX_ITER} iterations")
ax_loss.legend()
ax_zeros.semilogx(MUS, mean[:, 2], marker="o", color="C2")
ax_zeros.fill_between(MUS, results[:, :, 2].min(axis=1),
                      results[:, :, 2].max(axis=1), color="C2", alpha=0.2)
ax_zeros.set_xlabel("μ")
ax_zeros.set_ylabel(f"number of zeros (of p = {n_params})")
fig.tight_layout()
plt.show()
