"""Shapes the panel does not have: GGN-SCORE's defaults against the MLP's.

``python -m benchmarks.shapes`` fits both estimators with their defaults in
``make_pipeline(StandardScaler(), model)`` (regressors inside
``TransformedTargetRegressor(transformer=StandardScaler())``: the panel's
models, ``benchmarks/panel.py``) on generated data of shapes the panel does
not have, 30 % test:

* ``tall_7class``: 100 000 rows, 54 features (20 informative), 7 classes of
  3 clusters, 5 % flipped labels (the shape of covertype);
* ``wide_20class``: 20 000 rows, 300 features (60 informative), 20 classes
  of 2 clusters (many noisy classes: the held-out log-loss rises while the
  accuracy improves, what 0.9.1's watch rule is about: this task was seen
  when it was chosen);
* ``imbalanced``: 20 000 rows, 30 features, 95 % / 5 % classes;
* ``classes_100``: 30 000 rows, 64 features (40 informative), 100 classes;
* ``scaled_target``: ``make_regression`` with 50 000 rows, 100 features
  and y = 10⁴ + 10³ · y (R²);
* ``sparse_onehot``: 10 000 rows of 5 categorical codes of 100 levels,
  one-hot encoded (a sparse matrix of 500 columns; ``StandardScaler(
  with_mean=False)``), a linear label with noise.

One BLAS thread, the two models alternating, after the panel's untimed
warm-up of the package's kernels for every kind of fit. ``results/shapes.md``
(``shapes_<label>.md`` with ``--label``) keeps the table.

    python -m benchmarks.shapes [--seeds 0 1] [--label v090]
"""
import argparse
import time
import warnings

import numpy as np

from ._common import (
    geometric_mean,
    machine_stamp,
    md_table,
    stamp_markdown,
    write_page,
)


def tasks(seed):
    """``(name, X, y, regression)`` for every shape."""
    import scipy.sparse as sp
    from sklearn.datasets import make_classification, make_regression
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.RandomState(seed)
    X, y = make_classification(100_000, 54, n_informative=20, n_classes=7,
                               n_clusters_per_class=3, flip_y=0.05,
                               random_state=seed)
    yield "tall_7class", X, y, False
    X, y = make_classification(20_000, 300, n_informative=60, n_classes=20,
                               n_clusters_per_class=2, random_state=seed)
    yield "wide_20class", X, y, False
    X, y = make_classification(20_000, 30, n_informative=10, weights=[0.95],
                               flip_y=0.01, random_state=seed)
    yield "imbalanced", X, y, False
    X, y = make_classification(30_000, 64, n_informative=40, n_classes=100,
                               n_clusters_per_class=1, random_state=seed)
    yield "classes_100", X, y, False
    X, y = make_regression(50_000, 100, n_informative=30, noise=50,
                           random_state=seed)
    yield "scaled_target", X, 1e4 + 1e3 * y, True
    codes = rng.randint(0, 100, (10_000, 5))
    X = OneHotEncoder().fit_transform(codes)
    w = rng.normal(size=X.shape[1])
    y = (X @ w + 0.5 * rng.normal(size=X.shape[0]) > 0).astype(int)
    yield "sparse_onehot", sp.csr_matrix(X), y, False


def make_model(kind, regression, sparse, seed):
    """The panel's model ``kind`` behind a ``StandardScaler`` (without
    centering for sparse inputs)."""
    from sklearn.preprocessing import StandardScaler

    from .panel import make_model as panel_model

    return panel_model(kind, regression, seed, {},
                       preprocessor=StandardScaler(with_mean=not sparse))


def run(seeds):
    import scipy.sparse as sp
    from sklearn.model_selection import train_test_split
    from threadpoolctl import threadpool_limits

    from .panel import _final_estimator, warm_up

    rows, ratios, misses = [], [], 0
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm_up({})  # the panel's: the kernels of every kind of fit, untimed
        for seed in seeds:
            for name, X, y, regression in tasks(seed):
                split = train_test_split(X, y, test_size=0.3, random_state=seed)
                X_tr, X_te, y_tr, y_te = split
                result = {}
                for kind in ("ggn", "mlp"):
                    model = make_model(kind, regression, sp.issparse(X), seed)
                    t0 = time.perf_counter()
                    model.fit(X_tr, y_tr)
                    elapsed = time.perf_counter() - t0
                    result[kind] = (model.score(X_te, y_te), elapsed,
                                    int(_final_estimator(model).n_iter_))
                (g, tg, eg), (m, tm, em) = result["ggn"], result["mlp"]
                ratios.append(tg / tm)
                misses += (g - m) < -(0.01 if regression else 0.005)
                rows.append([name, X_tr.shape[0], X.shape[1], seed, f"{g:.4f}",
                             f"{m:.4f}", f"{g - m:+.4f}", f"{tg:.2f}", f"{tm:.2f}",
                             f"{tg / tm:.2f}", eg, em])
                print(*rows[-1], flush=True)
    return rows, ratios, misses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--label", default=None)
    args = parser.parse_args(argv)
    rows, ratios, misses = run(args.seeds)
    summary = (f"Geometric mean of the time ratios: {geometric_mean(ratios):.2f}; "
               f"fits more than 0.005 accuracy / 0.01 R² below the MLP: "
               f"{misses} of {len(rows)}.")
    print(summary)
    table = md_table(["task", "train rows", "features", "seed", "GGN-SCORE",
                      "MLP", "GGN − MLP", "GGN s", "MLP s", "time GGN / MLP",
                      "GGN epochs", "MLP epochs"], rows)
    text = (f"# Shapes the panel does not have\n\n"
            f"{stamp_markdown(machine_stamp())}\n\n{__doc__.strip()}\n\n"
            f"{table}\n\n{summary}\n")
    name = f"shapes_{args.label}.md" if args.label else "shapes.md"
    write_page(name, text)


if __name__ == "__main__":
    main()
