"""Model files: the bytes of a fitted estimator saved by pickle and skops.

``python -m benchmarks.model_files`` fits three default estimators with
``random_state=0``:

* ``GGNScoreClassifier()`` on scikit-learn's digits (1 797 rows, 64
  features, 10 classes; the posterior's ``"last_layer"`` form);
* ``GGNScoreRegressor()`` on 800 rows of ``make_friedman1`` (10 features,
  noise 1; the ``"dual"`` form);
* ``GGNScoreRegressor()`` on scikit-learn's diabetes (442 rows, 10
  features; the ``"dual"`` form);

each three ways: the default (``store_posterior=False``), asked for its
posterior before saving (``predict(X, return_std=True)`` for the
regressors, ``log_marginal_likelihood_`` for the classifier);
``store_posterior=True``; and ``uncertainty=None`` (no posterior). It
reports the length of ``pickle.dumps`` and of ``skops.io.dumps`` (when
skops is installed), and each file's size relative to the
``uncertainty=None`` one. The weights of the three fits are the same;
only what the file holds differs. ``results/model_files.md`` keeps the
table. Sizes only: nothing is timed.
"""
import argparse
import importlib.util
import pickle
import warnings

from ._common import machine_stamp, md_table, stamp_markdown, write_page

WAYS = (("default", {}), ("store_posterior=True", {"store_posterior": True}),
        ("uncertainty=None", {"uncertainty": None}))


def _cases():
    from sklearn.datasets import load_diabetes, load_digits, make_friedman1

    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    yield "digits classifier", GGNScoreClassifier, load_digits(return_X_y=True)
    yield ("friedman1 regressor, 800 rows", GGNScoreRegressor,
           make_friedman1(n_samples=800, noise=1.0, random_state=0))
    yield "diabetes regressor", GGNScoreRegressor, load_diabetes(return_X_y=True)


def _sizes(est):
    sizes = {"pickle": len(pickle.dumps(est))}
    if importlib.util.find_spec("skops"):
        import skops.io as sio

        sizes["skops"] = len(sio.dumps(est))
    return sizes


def run():
    from sklearn_ggn import GGNScoreRegressor

    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, cls, (X, y) in _cases():
            row = {"estimator": name, "rows": X.shape[0]}
            for way, params in WAYS:
                est = cls(random_state=0, **params).fit(X, y)
                if params.get("uncertainty", "auto") is not None:
                    # (the posterior asked for before saving)
                    if cls is GGNScoreRegressor:
                        est.predict(X, return_std=True)
                    else:
                        est.log_marginal_likelihood_  # noqa: B018
                    row["posterior"] = est.uncertainty_
                row[way] = _sizes(est)
            results.append(row)
            print(row, flush=True)
    return results


def _kb(size):
    return f"{size / 1000:,.0f} KB" if size < 1e6 else f"{size / 1e6:.2f} MB"


def table(results):
    formats = [f for f in ("pickle", "skops") if f in results[0]["default"]]
    headers = ["estimator", "posterior", "file"] + [
        way for way, _ in WAYS] + ["default / None", "stored / None"]
    rows = []
    for r in results:
        for f in formats:
            sizes = [r[way][f] for way, _ in WAYS]
            rows.append([r["estimator"], r["posterior"], f]
                        + [_kb(s) for s in sizes]
                        + [f"{sizes[0] / sizes[2]:.2f}",
                           f"{sizes[1] / sizes[2]:.0f}"])
    return md_table(headers, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    text = table(run())
    print(text)
    page = (f"# Model files: bytes of a saved estimator\n\n"
            f"{stamp_markdown(machine_stamp())}\n\n{__doc__.strip()}\n\n"
            f"{text}\n")
    write_page("model_files.md", page)


if __name__ == "__main__":
    main()
