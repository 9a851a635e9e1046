"""
Predictive uncertainty, calibrated probabilities and the evidence
=================================================================

After ``fit`` the estimators keep the linearized Laplace approximation of
their training objective at the fitted weights: the network is treated as
linear in its parameters around them, ``Φ(x; θ) ≈ Φ(x; θ*) + J(x)(θ − θ*)``,
and the Gauss-Newton matrix of the objective over all training rows,
``J̃ᵀJ̃ + τ ḡ''(θ*)``, is (up to a constant) the posterior precision of the
weights. Three things follow from it:

* ``GGNScoreRegressor.predict(X, return_std=True)``: the standard deviation
  of a new observation, ``sqrt(σ̂² + J(x) P⁻¹ J(x)ᵀ)``, noise included;
* ``GGNScoreClassifier(predictive="probit")``: class probabilities that
  account for the logits' posterior variance;
* ``log_marginal_likelihood_``: the evidence of the fit, to compare values
  of ``tau`` without a validation split.

The three panels: a 1-D regression with a gap in its data (the interval
widens where there are no data), a reliability diagram of a classifier on a
noisy generated task, and the evidence of fits over τ on the diabetes data
next to their held-out negative log-likelihood. It runs in about half a
minute; ``SKLEARN_GGN_QUICK=1`` shrinks it to a smoke test whose numbers
mean little.
"""

import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

QUICK = os.environ.get("SKLEARN_GGN_QUICK") == "1"
MAX_ITER = 5 if QUICK else 100
warnings.simplefilter("ignore", ConvergenceWarning)  # the quick run stops early

# %%
# Intervals on a 1-D regression: data on [-3, -1] and [1, 3] only.
rng = np.random.default_rng(0)
x = np.concatenate([rng.uniform(-3, -1, 60), rng.uniform(1, 3, 60)])
y = np.sin(2 * x) + 0.5 * x + 0.15 * rng.standard_normal(x.size)
reg = GGNScoreRegressor(n_hidden=50, max_iter=MAX_ITER, random_state=0)
reg.fit(x[:, None], y)
grid = np.linspace(-5, 5, 300)
mean, std = reg.predict(grid[:, None], return_std=True)
print(f"posterior: {reg.uncertainty_}, noise std {np.sqrt(reg.noise_variance_[0]):.3f}"
      f" (true 0.15); std at x=-2: {std[np.argmin(abs(grid + 2))]:.3f}, "
      f"x=0: {std[np.argmin(abs(grid))]:.3f}, x=5: {std[-1]:.3f}")

# %%
# A classifier on a noisy four-class task: the fitted softmax against the
# linearized Laplace predictive (probit).
X, labels = make_classification(300 if QUICK else 1500, 20, n_informative=8,
                                n_classes=4, flip_y=0.05, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, labels, test_size=0.3,
                                                    random_state=0)
scaler = StandardScaler().fit(X_train)
clf = GGNScoreClassifier(n_hidden=30 if QUICK else 100, max_iter=MAX_ITER,
                         random_state=0, predictive="probit")
clf.fit(scaler.transform(X_train), y_train)
probas = {"probit": clf.predict_proba(scaler.transform(X_test))}
clf.set_params(predictive="map")  # the same fit's softmax
probas["map"] = clf.predict_proba(scaler.transform(X_test))


def reliability(proba, y, bins=8):
    confidence, correct = proba.max(axis=1), proba.argmax(axis=1) == y
    edges = np.linspace(0, 1, bins + 1)
    rows = [(confidence[m].mean(), correct[m].mean())
            for m in ((confidence > lo) & (confidence <= hi)
                      for lo, hi in zip(edges[:-1], edges[1:], strict=True))
            if m.sum() >= 5]
    return np.array(rows).T


for name, proba in probas.items():
    log_loss = -np.mean(np.log(proba[np.arange(len(y_test)), y_test]))
    print(f"{name:6s}: test log-loss {log_loss:.3f}")

# %%
# The evidence over τ on diabetes, beside the held-out NLL of each fit.
Xd, yd = load_diabetes(return_X_y=True)
Xd_train, Xd_test, yd_train, yd_test = train_test_split(Xd, yd, test_size=0.1,
                                                        random_state=0)
taus = np.logspace(-4, 0, 3 if QUICK else 9)
evidence, nll = [], []
for tau in taus:
    model = make_pipeline(StandardScaler(),
                          GGNScoreRegressor(tau=tau, max_iter=MAX_ITER,
                                            random_state=0))
    model.fit(Xd_train, yd_train)
    m, s = model.predict(Xd_test, return_std=True)
    evidence.append(model[-1].log_marginal_likelihood_)
    nll.append(np.mean(0.5 * np.log(2 * np.pi * s**2) + 0.5 * ((yd_test - m) / s)**2))
best = taus[int(np.argmax(evidence))]
print(f"largest evidence at tau = {best:.3g}; "
      f"lowest test NLL at tau = {taus[int(np.argmin(nll))]:.3g}")

# %%
fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(14, 4))
ax1.fill_between(grid, mean - 1.96 * std, mean + 1.96 * std, alpha=0.3,
                 label="95 % interval")
ax1.plot(grid, mean, label="predict(X)")
ax1.plot(x, y, "k.", ms=3, label="training data")
ax1.set_title("1-D regression: return_std=True")
ax1.legend(loc="upper left", fontsize=8)
for name, proba in probas.items():
    ax2.plot(*reliability(proba, y_test), "o-", label=name)
ax2.plot([0, 1], [0, 1], "k:", lw=0.8)
ax2.set_xlabel("confidence")
ax2.set_ylabel("accuracy")
ax2.set_title("reliability (noisy 4-class task)")
ax2.legend(fontsize=8)
ax3.semilogx(taus, evidence, "o-", color="C0")
ax3.set_xlabel("τ")
ax3.set_ylabel("log_marginal_likelihood_", color="C0")
right = ax3.twinx()
right.semilogx(taus, nll, "s--", color="C1")
right.set_ylabel("test NLL per point", color="C1")
ax3.set_title("diabetes: evidence over τ")
fig.tight_layout()
plt.show()
