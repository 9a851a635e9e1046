"""The overfitting watch on data no default was chosen on.

``python -m benchmarks.watch_check`` fits the estimators with their default
``early_stopping="auto"`` and with ``early_stopping=False`` on generated
data, each tested on 2 000 further rows:

* ``GGNScoreClassifier`` on ``make_classification`` (20 features of which
  2 informative, 2 redundant, 1 % flipped labels: scikit-learn's defaults)
  at 620, 1 000 and 2 000 training rows, seeds 0-5;
* ``GGNScoreClassifier`` on ten noisy classes (``make_classification``
  with 100 features of which 30 informative, 2 clusters per class), at
  1 200 and 3 000 training rows, seeds 0-2: the held-out log-loss rises
  while the held-out accuracy still improves (looked at when 0.9.1 added
  the score to the watch's rule, so not out of sample for it);
* ``GGNScoreRegressor`` on ``make_regression`` (40 features of which 8
  informative, noise 30) and on ``make_friedman1`` (10 features, noise 2)
  at 1 200, 2 000 and 4 000 training rows, seeds 0-3 (X standardized, y
  standardized on the training rows; the score is R²).

It prints per fit whether the watch saw overfitting, the test scores and
the epochs; ``results/watch_check.md`` keeps the table. The rule of the
watch was chosen on the panel's trajectories; this checks it elsewhere.
One BLAS thread; the scores, not the times, are the point.
"""
import argparse
import warnings

import numpy as np

from ._common import machine_stamp, md_table, stamp_markdown, write_page


def _cases():
    from sklearn.datasets import make_classification, make_friedman1, make_regression

    for n in (620, 1000, 2000):
        for seed in range(6):
            yield ("make_classification", n, seed, "classifier",
                   make_classification(n_samples=n + 2000, n_features=20,
                                       random_state=seed))
    for n in (1200, 3000):
        for seed in range(3):
            yield ("ten_classes", n, seed, "classifier",
                   make_classification(n_samples=n + 2000, n_features=100,
                                       n_informative=30, n_classes=10,
                                       n_clusters_per_class=2,
                                       random_state=seed))
    for n in (1200, 2000, 4000):
        for seed in range(4):
            yield ("make_regression", n, seed, "regressor",
                   make_regression(n_samples=n + 2000, n_features=40,
                                   n_informative=8, noise=30.0,
                                   random_state=seed))
            yield ("make_friedman1", n, seed, "regressor",
                   make_friedman1(n_samples=n + 2000, n_features=10, noise=2.0,
                                  random_state=seed))


def run():
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    rows = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, n, seed, kind, (X, y) in _cases():
            X = StandardScaler().fit(X[:n]).transform(X)
            if kind == "regressor":
                y = (y - y[:n].mean()) / y[:n].std()
            Est = GGNScoreClassifier if kind == "classifier" else GGNScoreRegressor
            X_tr, y_tr, X_te, y_te = X[:n], y[:n], X[n:], y[n:]
            auto = Est(random_state=seed).fit(X_tr, y_tr)
            off = Est(random_state=seed, early_stopping=False).fit(X_tr, y_tr)
            watch = auto.overfitting_watch_
            outcome = ("-" if watch is None else
                       f"refit ({watch['best_epoch']})" if watch["overfitting"]
                       else "joined")
            a, o = auto.score(X_te, y_te), off.score(X_te, y_te)
            rows.append([name, n, seed, outcome, f"{a:.4f}", f"{o:.4f}",
                         f"{a - o:+.4f}", auto.n_iter_, off.n_iter_])
            print(*rows[-1], flush=True)
    return rows


def _summary(rows, name):
    mine = [r for r in rows if r[0] == name]
    diffs = np.array([float(r[6]) for r in mine])
    refit = [float(r[6]) for r in mine if r[3].startswith("refit")]
    return (f"{name}: {len(refit)} of {len(mine)} fits refit; auto − False: "
            f"mean {diffs.mean():+.4f}, min {diffs.min():+.4f}, max "
            f"{diffs.max():+.4f}" + (f"; on the refits mean {np.mean(refit):+.4f}"
                                     if refit else "") + ".")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    rows = run()
    summary = "\n".join(f"* {_summary(rows, name)}" for name in
                        ("make_classification", "ten_classes", "make_regression",
                         "make_friedman1"))
    print(summary)
    table = md_table(["data", "train rows", "seed", "watch", "score auto",
                      "score False", "auto − False", "epochs auto",
                      "epochs False"], rows)
    text = (f"# The overfitting watch on generated data\n\n"
            f"{stamp_markdown(machine_stamp())}\n\n{__doc__.strip()}\n\n"
            f"{table}\n\n{summary}\n")
    write_page("watch_check.md", text)


if __name__ == "__main__":
    main()
