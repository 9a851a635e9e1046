"""
The overfitting watch: held-out rows that come back
====================================================

A curvature step fits a mini-batch far more closely than a gradient step,
and on small data with many uninformative columns the network memorizes
its training rows within a few epochs. ``early_stopping="auto"`` (the
default) holds out 10 % of the rows (at most 500) during the first epochs;
when their risk keeps rising while the training risk falls and their
accuracy no longer improves, the fit starts again on *all* rows and stops
at the number of epochs that scored best on the held-out rows. Otherwise
the held-out rows join the training and the fit goes on.
``overfitting_watch_`` records what happened.

The data: ``make_classification`` with scikit-learn's defaults (20
features, 2 of them informative, 1 % flipped labels), 1 000 training rows
and 2 000 test rows. The first plot shows the watch's held-out log-loss
per epoch, the second the test accuracy of the fit with the watch and
without it (``early_stopping=False``) for six seeds. ``SKLEARN_GGN_QUICK=1`` runs a smoke test of a few seconds on two
seeds.
"""

import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreClassifier

QUICK = os.environ.get("SKLEARN_GGN_QUICK") == "1"  # smoke-test scale
SEEDS = (2, 4) if QUICK else range(6)
N_TRAIN = 1000

results = []
for seed in SEEDS:
    X, y = make_classification(n_samples=N_TRAIN + 2000, n_features=20,
                               random_state=seed)
    X = StandardScaler().fit(X[:N_TRAIN]).transform(X)
    X_train, y_train, X_test, y_test = X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        watched = GGNScoreClassifier(random_state=seed).fit(X_train, y_train)
        plain = GGNScoreClassifier(random_state=seed,
                                   early_stopping=False).fit(X_train, y_train)
    results.append((seed, watched, plain, watched.score(X_test, y_test),
                    plain.score(X_test, y_test)))
    watch = watched.overfitting_watch_
    outcome = (f"overfitting, refit for {watch['best_epoch']} epochs"
               if watch["overfitting"] else "no overfitting, rows joined")
    print(f"seed {seed}: watched {watch['epochs']} epochs on "
          f"{N_TRAIN - watch['validation_rows']} rows ({outcome}); test accuracy "
          f"{results[-1][3]:.4f} in {watched.n_iter_} epochs against "
          f"{results[-1][4]:.4f} in {plain.n_iter_} without the watch")

# %%
# The held-out risk of one watch
# ------------------------------
# The watch's held-out log-loss against its epochs. Overfitting is the
# held-out risk more than 10 % above its minimum and more than 1.5 times the
# epoch's training risk for three epochs in a row, with the held-out
# accuracy of those epochs on average no better than its best by the risk's
# minimum; the refit then runs the epochs that scored best on the held-out
# rows.

seed, watched = next(((s, w) for s, w, *_ in results
                      if w.overfitting_watch_["overfitting"]), results[0][:2])
watch = watched.overfitting_watch_
epochs = np.arange(1, len(watch["validation_loss_curve"]) + 1)
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(epochs, watch["validation_loss_curve"], "o-", label="held-out log-loss")
if watch["best_epoch"] is not None:
    ax.axvline(watch["best_epoch"], color="gray", linestyle="--",
               label=f"refit: {watch['best_epoch']} epochs on all rows")
ax.set_xlabel("epoch of the watch")
ax.set_ylabel("log-loss")
ax.set_title(f"make_classification, seed {seed}")
ax.legend()
fig.tight_layout()

# %%
# Test accuracy with and without the watch
# ----------------------------------------

fig, ax = plt.subplots(figsize=(6, 4))
positions = np.arange(len(results))
ax.bar(positions - 0.2, [r[3] for r in results], width=0.4,
       label='early_stopping="auto"')
ax.bar(positions + 0.2, [r[4] for r in results], width=0.4,
       label="early_stopping=False")
ax.set_xticks(positions, [f"seed {r[0]}" for r in results])
low = min(min(r[3], r[4]) for r in results)
ax.set_ylim(low - 0.03, 1.0)
ax.set_ylabel("test accuracy")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
