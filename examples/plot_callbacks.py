"""
Progress bars and per-epoch scores with scikit-learn's callbacks
================================================================

scikit-learn 1.9's :mod:`sklearn.callback` reaches inside a fit: the
estimators report every epoch (mini-batch) or iteration (full batch) as a
subtask. ``ProgressBar`` draws a live bar per fit — also for the fits inside
a ``Pipeline`` or a ``GridSearchCV``, when set on the outer estimator — and
``ScoringMonitor`` scores the model as it stands after each epoch.

Here a classifier learns digits in mini-batches. The monitor records the
training accuracy after every epoch; ``X_val``/``y_val`` given to ``fit``
record the validation accuracy of the same epochs in ``history_``, so the
two curves are on the same axis (the validation evaluations are not counted
in the training time). ``ProgressBar`` needs the optional ``rich`` package;
without scikit-learn ≥ 1.9 the estimators simply fit without callbacks.
"""

import os
import warnings

from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ggn import GGNScoreClassifier

QUICK = os.environ.get("SKLEARN_GGN_QUICK") == "1"  # smoke-test scale
X, y = load_digits(return_X_y=True)
X_train, X_val, y_train, y_val = train_test_split(X, y, random_state=0,
                                                  stratify=y)
scaler = StandardScaler().fit(X_train)
X_train, X_val = scaler.transform(X_train), scaler.transform(X_val)

try:
    from sklearn.callback import ProgressBar, ScoringMonitor
except ImportError:  # scikit-learn < 1.9: no callbacks
    ProgressBar = ScoringMonitor = None

# %%
# A validation curve from the monitor
# -----------------------------------
# batch_size=64 gives mini-batch epochs; the fit ends by itself when the
# adaptive damping's stall rule says it has converged.
clf = GGNScoreClassifier(batch_size=64, max_iter=3 if QUICK else 30,
                         random_state=0)
monitor = None
if ScoringMonitor is not None:
    monitor = ScoringMonitor(scoring="accuracy")
    clf.set_callbacks(monitor)
with warnings.catch_warnings():
    if QUICK:  # the smoke test stops after 3 epochs on purpose
        warnings.filterwarnings("ignore", message="Maximum iterations")
    clf.fit(X_train, y_train, X_val=X_val, y_val=y_val)
print(f"{clf.n_iter_} epochs, validation accuracy "
      f"{clf.history_['validation_score'][-1]:.4f}")

train_curve = None
if monitor is not None:
    rows = [r for r in monitor.get_logs().data if r["task_name"] == "epoch"]
    train_curve = [r["accuracy"] for r in rows]

try:
    import matplotlib.pyplot as plt
except ImportError:  # plotting is optional
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(5, 3.5))
    epochs = range(1, clf.n_iter_ + 1)
    if train_curve is not None:
        ax.plot(epochs, train_curve, "o-", label="training (ScoringMonitor)")
    ax.plot(epochs, clf.history_["validation_score"], "s-",
            label="validation (history_)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy")
    ax.set_title("GGN-SCORE on digits, batches of 64")
    ax.legend()
    fig.tight_layout()

# %%
# A progress bar through a pipeline and a grid search
# ---------------------------------------------------
# Set on the outermost estimator, the bar follows every fit inside it:
# the search, each candidate's pipeline, and the network's epochs.
if ProgressBar is not None:
    try:
        bar = ProgressBar(max_propagation_depth=None)
    except ImportError:  # rich is not installed
        bar = None
    if bar is not None:
        search = GridSearchCV(
            make_pipeline(StandardScaler(),
                          GGNScoreClassifier(batch_size=64,
                                             max_iter=2 if QUICK else 10,
                                             random_state=0)),
            {"ggnscoreclassifier__tau": [1e-3, 1e-2]}, cv=2)
        search.set_callbacks(bar)
        with warnings.catch_warnings():
            # a short search to show the bars: its fits may stop at max_iter
            warnings.filterwarnings("ignore", message="Maximum iterations")
            search.fit(X, y)
        print("best:", search.best_params_)
