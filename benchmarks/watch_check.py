"""The overfitting watch on data no default was chosen on.

``python -m benchmarks.watch_check`` fits ``GGNScoreClassifier()`` with its
default ``early_stopping="auto"`` and with ``early_stopping=False`` on
``make_classification`` data (20 features of which 2 informative, 2
redundant, 1 % flipped labels: scikit-learn's defaults) of 620, 1 000 and
2 000 training rows, seeds 0-5, each tested on 2 000 further rows, and
prints per fit whether the watch saw overfitting, the test accuracies and
the epochs; ``results/watch_check.md`` keeps the table. The rule of the
watch was chosen on the panel's trajectories; this checks it elsewhere.
One BLAS thread; the scores, not the times, are the point.
"""
import argparse
import warnings

import numpy as np

from ._common import RESULTS_DIR, machine_stamp, md_table, stamp_markdown


def run(sizes=(620, 1000, 2000), seeds=range(6)):
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    from sklearn_ggn import GGNScoreClassifier

    rows = []
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in sizes:
            for seed in seeds:
                X, y = make_classification(n_samples=n + 2000, n_features=20,
                                           random_state=seed)
                X = StandardScaler().fit(X[:n]).transform(X)
                X_tr, y_tr, X_te, y_te = X[:n], y[:n], X[n:], y[n:]
                auto = GGNScoreClassifier(random_state=seed).fit(X_tr, y_tr)
                off = GGNScoreClassifier(random_state=seed,
                                         early_stopping=False).fit(X_tr, y_tr)
                watch = auto.overfitting_watch_
                outcome = ("-" if watch is None else
                           f"refit ({watch['best_epoch']})" if watch["overfitting"]
                           else "joined")
                a, o = auto.score(X_te, y_te), off.score(X_te, y_te)
                rows.append([n, seed, outcome, f"{a:.4f}", f"{o:.4f}",
                             f"{a - o:+.4f}", auto.n_iter_, off.n_iter_])
                print(*rows[-1], flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    rows = run()
    diffs = np.array([float(r[5]) for r in rows])
    refit = [r for r in rows if r[2].startswith("refit")]
    summary = (f"{len(refit)} of {len(rows)} fits refit; accuracy auto − off: "
               f"mean {diffs.mean():+.4f}, min {diffs.min():+.4f}, max "
               f"{diffs.max():+.4f}; on the refits mean "
               f"{np.mean([float(r[5]) for r in refit]) if refit else 0:+.4f}.")
    print(summary)
    table = md_table(["train rows", "seed", "watch", "accuracy auto",
                      "accuracy False", "auto − False", "epochs auto",
                      "epochs False"], rows)
    text = (f"# The overfitting watch on make_classification\n\n"
            f"{stamp_markdown(machine_stamp())}\n\n{__doc__.strip()}\n\n"
            f"{table}\n\n{summary}\n")
    path = RESULTS_DIR / "watch_check.md"
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
