"""early_stopping="auto": the overfitting watch of a fresh mini-batch fit.

Each outcome is checked against the fits it is defined by: after
overfitting, the same estimator with ``early_stopping=False`` and
``max_iter`` = the best epoch on all rows; without, the watch's fit on the
split continued on all rows by a warm start.
"""
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import make_scorer
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state

from sklearn_ggn import (
    GGNScoreClassifier,
    GGNScoreRegressor,
    _advice,
    _base,
    _plan,
    paper_params,
)
from sklearn_ggn.engine import OverfittingRule, StepFailure


def _one_hot(rng, n, n_features, levels):
    """Categorical columns one-hot encoded, and an additive effect of them."""
    codes = rng.randint(levels, size=(n, n_features))
    X = np.zeros((n, n_features * levels))
    X[np.arange(n)[:, None], codes + levels * np.arange(n_features)] = 1.0
    effect = rng.normal(size=(n_features, levels))
    return X, effect[np.arange(n_features), codes].sum(axis=1)


def _one_hot_noisy(n=800, n_features=8, levels=10, flip=0.35, seed=0):
    """Categorical columns one-hot encoded, labels from a few of them and
    flipped at random: a 100-unit network memorizes the flips."""
    rng = np.random.RandomState(seed)
    X, z = _one_hot(rng, n, n_features, levels)
    y = (z > np.median(z)).astype(int)
    flipped = rng.rand(n) < flip
    y[flipped] = 1 - y[flipped]
    return X, y


def _one_hot_regression(n=1500, n_features=8, levels=10, noise=0.35, seed=0):
    """One-hot columns, an additive target with a mild curvature and noise:
    a 100-unit network memorizes the rows slowly (the squared error's
    held-out risk creeps up while the training risk keeps falling)."""
    rng = np.random.RandomState(seed)
    X, z = _one_hot(rng, n, n_features, levels)
    return X, z + 0.3 * z ** 2 / n_features + noise * rng.normal(size=n)


def _smooth_regression(n=1500, seed=0):
    """Low noise, smooth target: the held-out risk keeps falling."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 4))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + 0.05 * rng.normal(size=n)
    return X, y


def _split(estimator, X, y):
    """The watch's split, as the estimator draws it."""
    n_val = min(_plan.WATCH_MAX_ROWS,
                int(np.ceil(estimator.validation_fraction * X.shape[0])))
    stratify = y if isinstance(estimator, GGNScoreClassifier) else None
    return train_test_split(np.arange(X.shape[0]), test_size=n_val,
                            random_state=check_random_state(estimator.random_state),
                            stratify=stratify)


def _tau(X):
    """τ of ``tau="auto"`` for a mini-batch fit of all of X's rows, which
    the watch's fit on the split keeps (a fit of the split alone would take
    its own rows' count)."""
    return max(1e-4, 1.0 / X.shape[0])


def _weights(est):
    return [est.hidden_weights_, est.output_weights_, est.hidden_intercept_,
            est.output_intercept_]


def _watched_curves(est, X, y, epochs):
    """The watch's fit on its split for ``epochs`` epochs: (training risks,
    held-out risks) per epoch, and the fit."""
    tr, va = (np.sort(i) for i in _split(est, X, y))
    ref = clone(est).set_params(early_stopping=False, max_iter=epochs,
                                tau=_tau(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(X[tr], y[tr], X_val=X[va], y_val=y[va])
    return (np.array(ref.history_["risk"]), np.array(ref.validation_loss_curve_),
            ref)


def _assert_refit_is_the_best_epochs(est, X, y):
    """After overfitting, ``est`` is exactly the fit on all rows, without
    the watch, for the best epochs."""
    ref = clone(est).set_params(early_stopping=False,
                                max_iter=est.overfitting_watch_["best_epoch"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(X, y)
    for a, b in zip(_weights(est), _weights(ref)):
        np.testing.assert_array_equal(a, b)


def _continued_on_all_rows(ref, X, y, epochs, max_iter=100):
    """``ref``, the watch's ``epochs`` on the split, warm-started on all
    rows as the watch continues it (the objective over all rows is another
    function: its epochs are not judged against the watch's best and last
    ones)."""
    ref._solver_state.best_objective = np.inf
    ref._solver_state.damping.last_epoch_objective = None
    ref._solver_state.damping.stalls = 0
    ref.set_params(warm_start=True, max_iter=max_iter - epochs)
    return ref.fit(X, y)


def _fires(risks, scores, rise=0.1, patience=3):
    """The epoch (1-based) at which the watch's rule fires on its held-out
    curves, or None; replayed from the curves (the gap to the training
    risk, the rule's third condition, is not)."""
    best, best_score, above = np.inf, -np.inf, 0
    for t, risk in enumerate(risks):
        if risk < best:
            best, best_score = risk, max(scores[:t + 1])
        above = above + 1 if risk > (1 + rise) * best else 0
        if above >= patience and np.mean(scores[t + 1 - patience:t + 1]) <= best_score:
            return t + 1
    return None


def test_overfitting_refits_all_rows_for_the_best_epochs():
    X, y = _one_hot_noisy()
    clf = GGNScoreClassifier(random_state=0).fit(X, y)
    watch = clf.overfitting_watch_
    assert watch["overfitting"]
    assert watch["validation_rows"] == 80
    risks = np.array(watch["validation_loss_curve"])
    scores = watch["validation_scores"]
    assert len(risks) == len(scores) == watch["epochs"]
    # the rule: the last three risks above 1.1 × the running minimum, their
    # scores on average no better than the best by the minimum, and not so
    # before
    assert _fires(risks, scores) == watch["epochs"]
    assert watch["best_epoch"] == int(np.argmax(scores)) + 1
    # the refit is the plain fit of all rows, ended at the best epoch
    ref = GGNScoreClassifier(random_state=0, early_stopping=False,
                             max_iter=watch["best_epoch"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(X, y)
    assert clf.n_iter_ == ref.n_iter_ <= watch["best_epoch"]
    for a, b in zip(_weights(clf), _weights(ref)):
        np.testing.assert_array_equal(a, b)
    assert clf.loss_curve_ == ref.loss_curve_
    # the held-out scores are those of the split's rows at the watch's epochs
    tr, va = _split(clf, X, y)
    assert clf.tau_ == _tau(X)
    watch_fit = GGNScoreClassifier(random_state=0, early_stopping=False,
                                   max_iter=watch["epochs"], tau=_tau(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        watch_fit.fit(X[np.sort(tr)], y[np.sort(tr)], X_val=X[np.sort(va)],
                      y_val=y[np.sort(va)])
    np.testing.assert_allclose(watch_fit.history_["validation_score"], scores)
    np.testing.assert_allclose(watch_fit.validation_loss_curve_, risks)


def test_overfitting_stops_sooner_and_scores_higher_than_running_on():
    # what the watch is for: on memorizable noise the refit at the best
    # epoch beats the fit that runs until its training objective stalls
    X, y = _one_hot_noisy(n=1400, seed=1)
    X, y, X_test, y_test = X[:700], y[:700], X[700:], y[700:]
    auto = GGNScoreClassifier(random_state=0).fit(X, y)
    off = GGNScoreClassifier(random_state=0, early_stopping=False).fit(X, y)
    assert auto.overfitting_watch_["overfitting"]
    assert auto.n_iter_ + auto.overfitting_watch_["epochs"] < off.n_iter_
    assert auto.score(X_test, y_test) > off.score(X_test, y_test)


def test_a_rising_risk_with_a_rising_score_is_not_overfitting():
    # ten noisy classes: the held-out log-loss grows with the confidence of
    # the wrong predictions while the held-out accuracy still improves;
    # running on scores higher than the refit at the watch's best epoch
    # (what the risk alone decided before 0.9.1)
    from sklearn.datasets import make_classification

    X, y = make_classification(6000, 100, n_informative=30, n_classes=10,
                               n_clusters_per_class=2, random_state=0)
    X, y, X_test, y_test = X[:3000], y[:3000], X[3000:], y[3000:]
    clf = GGNScoreClassifier(random_state=0).fit(X, y)
    watch = clf.overfitting_watch_
    risks = np.array(watch["validation_loss_curve"])
    scores = np.array(watch["validation_scores"])
    assert not watch["overfitting"] and watch["epochs"] == 15
    # the risk rose above 1.1 × its minimum for three epochs in a row, far
    # above the training objective (≥ the training risk) ...
    above = risks > 1.1 * np.minimum.accumulate(risks)
    objective = np.array(clf.loss_curve_[:15])
    rise = [t for t in range(2, 15) if above[t - 2:t + 1].all()
            and (risks[t - 2:t + 1] > 1.5 * objective[t - 2:t + 1]).all()]
    assert rise
    # ... while the score of those epochs beat its best by the minimum
    assert _fires(risks, scores) is None
    assert scores[rise[0] - 2:rise[0] + 1].mean() > scores[:np.argmin(risks) + 1].max()
    assert clf.n_iter_ > 15
    refit = GGNScoreClassifier(random_state=0, early_stopping=False,
                               max_iter=int(np.argmax(scores[:rise[0] + 1])) + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        refit.fit(X, y)
    assert clf.score(X_test, y_test) > refit.score(X_test, y_test) + 0.01


def test_no_overfitting_continues_on_all_rows():
    X, y = _smooth_regression()
    # (the plain map: "auto" may choose the encodings here, whose fit is
    # that of their own map, tests/test_input_auto.py)
    reg = GGNScoreRegressor(random_state=0, input_transform="robust_clip").fit(X, y)
    watch = reg.overfitting_watch_
    assert not watch["overfitting"] and watch["best_epoch"] is None
    assert watch["epochs"] == 15 and watch["validation_rows"] == 150
    # = the watch's 15 epochs on the split, warm-started on all rows
    assert reg.tau_ == _tau(X)
    _, held_out, ref = _watched_curves(reg, X, y, 15)
    np.testing.assert_allclose(held_out, watch["validation_loss_curve"])
    _continued_on_all_rows(ref, X, y, 15)
    for a, b in zip(_weights(reg), _weights(ref)):
        np.testing.assert_array_equal(a, b)
    assert reg.n_iter_ == len(reg.loss_curve_) == len(ref.loss_curve_)
    assert reg.n_iter_ > 15
    assert reg.validation_loss_curve_ is None and reg.validation_scores_ is None
    assert "validation_risk" not in reg.history_


@pytest.mark.parametrize("case", ["full_batch", "few_rows", "false", "true",
                                  "X_val", "small_max_iter", "paper",
                                  "singleton_class"])
def test_no_watch(case):
    X, y = _one_hot_noisy()
    params = {"random_state": 0}
    fit_params = {}
    if case == "full_batch":
        X, y = X[:400], y[:400]  # the structured step's full batch
    elif case == "few_rows":
        params["batch_size"] = 64
        X, y = X[:450], y[:450]  # 45 held-out rows < 50
    elif case == "false":
        params["early_stopping"] = False
    elif case == "true":
        params["early_stopping"] = True
    elif case == "X_val":
        fit_params = {"X_val": X[:100], "y_val": y[:100]}
    elif case == "small_max_iter":
        params["max_iter"] = 9
    elif case == "paper":
        params.update(paper_params(batch_size=64))
    elif case == "singleton_class":
        y = y.copy()
        y[0] = 2
    clf = GGNScoreClassifier(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y, **fit_params)
    assert clf.overfitting_watch_ is None
    ref = clone(clf).set_params(early_stopping=False if case != "true" else True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(X, y, **fit_params)
    for a, b in zip(_weights(clf), _weights(ref)):
        np.testing.assert_array_equal(a, b)


def test_partial_fit_and_warm_start_do_not_watch():
    X, y = _one_hot_noisy()
    clf = GGNScoreClassifier(random_state=0).partial_fit(X, y, classes=[0, 1])
    assert clf.overfitting_watch_ is None
    clf = GGNScoreClassifier(random_state=0, warm_start=True).fit(X, y)
    first = clf.overfitting_watch_
    assert first["overfitting"]
    n_curve = len(clf.loss_curve_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.set_params(max_iter=3).fit(X, y)  # continues: no second watch
    assert clf.overfitting_watch_ is first
    assert len(clf.loss_curve_) == n_curve + clf.n_iter_


def test_watch_warns_once():
    # the watch's own fit is internal: the input's advice comes once
    X, y = _one_hot_noisy()
    X = X.copy()
    X[:, 0] *= 500.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GGNScoreClassifier(random_state=0, input_transform=None).fit(X, y)
    extreme = [w for w in caught if "X has values up to" in str(w.message)]
    assert len(extreme) == 1


def test_interrupted_watch_leaves_estimator_unchanged(monkeypatch):
    import sklearn_ggn._monitor as monitor

    X, y = _one_hot_noisy()
    clf = GGNScoreClassifier(random_state=0, max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X[:300], y[:300])
    before = {k: v for k, v in clf.__dict__.items()}
    calls = {"n": 0}
    original = monitor.Monitor.__call__

    def interrupt(self, record, theta):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, record, theta)

    monkeypatch.setattr(monitor.Monitor, "__call__", interrupt)
    with pytest.raises(KeyboardInterrupt):
        clf.fit(X, y)
    assert set(clf.__dict__) == set(before)
    for k, v in before.items():
        assert clf.__dict__[k] is v


def test_first_fit_with_warm_start_and_dataframe_input_same_as_plain():
    # rows are taken by position (a DataFrame's X[idx] would take columns),
    # and warm_start=True's first fit starts the refit afresh too
    pd = pytest.importorskip("pandas")
    X, y = _one_hot_noisy()
    plain = GGNScoreClassifier(random_state=0).fit(X, y)
    assert plain.overfitting_watch_["overfitting"]
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])],
                         index=np.arange(X.shape[0])[::-1] * 7)
    labels = pd.Series(y, index=frame.index)
    for est in (GGNScoreClassifier(random_state=0).fit(frame, labels),
                GGNScoreClassifier(random_state=0, warm_start=True).fit(X, y)):
        assert est.overfitting_watch_["best_epoch"] == plain.overfitting_watch_["best_epoch"]
        for a, b in zip(_weights(est), _weights(plain)):
            np.testing.assert_array_equal(a, b)


def test_sparse_input_is_watched_and_refit_by_rows():
    # CSR rows are split by position as dense rows are (the sparse input
    # map does not center, so its fit is not the dense one)
    import scipy.sparse as sp

    X, y = _one_hot_noisy()
    clf = GGNScoreClassifier(random_state=0).fit(sp.csr_matrix(X), y)
    watch = clf.overfitting_watch_
    assert watch["overfitting"]
    tr, va = _split(clf, X, y)
    watch_fit = GGNScoreClassifier(random_state=0, early_stopping=False,
                                   max_iter=watch["epochs"], tau=_tau(X))
    ref = GGNScoreClassifier(random_state=0, early_stopping=False,
                             max_iter=watch["best_epoch"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        watch_fit.fit(sp.csr_matrix(X[np.sort(tr)]), y[np.sort(tr)],
                      X_val=sp.csr_matrix(X[np.sort(va)]), y_val=y[np.sort(va)])
        ref.fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(watch_fit.validation_loss_curve_,
                               watch["validation_loss_curve"])
    for a, b in zip(_weights(clf), _weights(ref)):
        np.testing.assert_array_equal(a, b)


def test_numpy_booleans_are_early_stopping_on_and_off():
    X, y = _one_hot_noisy()
    for flag in (True, False):
        ref = GGNScoreClassifier(random_state=0, early_stopping=flag).fit(X, y)
        est = GGNScoreClassifier(random_state=0, early_stopping=np.bool_(flag)).fit(X, y)
        assert est.overfitting_watch_ is None
        assert (est.validation_scores_ is None) == (not flag)
        for a, b in zip(_weights(est), _weights(ref)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fmt", ["coo", "dia", "bsr", "lil"])
def test_every_sparse_format_is_watched_as_csr(fmt):
    import scipy.sparse as sp

    X, y = _one_hot_noisy()
    ref = GGNScoreClassifier(random_state=0).fit(sp.csr_matrix(X), y)
    est = GGNScoreClassifier(random_state=0).fit(sp.csr_matrix(X).asformat(fmt), y)
    assert est.overfitting_watch_["epochs"] == ref.overfitting_watch_["epochs"]
    for a, b in zip(_weights(est), _weights(ref)):
        np.testing.assert_array_equal(a, b)


def test_sample_weight_is_checked_before_the_split():
    X, y = _one_hot_noisy()
    with pytest.raises(ValueError, match="sample_weight.shape"):
        GGNScoreClassifier(random_state=0).fit(X, y, sample_weight=np.ones(700))
    # a scalar weight is every row's, as without the watch
    a = GGNScoreClassifier(random_state=0).fit(X, y, sample_weight=2.0)
    b = GGNScoreClassifier(random_state=0).fit(X, y)
    assert a.overfitting_watch_["best_epoch"] == b.overfitting_watch_["best_epoch"]


def test_no_watch_without_weight_on_either_side_or_rows_for_every_class():
    X, y = _one_hot_noisy(n=1000)
    clf = GGNScoreClassifier(random_state=0)
    tr, va = _split(clf, X, y)
    weight = np.zeros(len(y))
    weight[tr[:300]] = 1.0  # the held-out rows weigh nothing
    est = clf.fit(X, y, sample_weight=weight)
    assert est.overfitting_watch_ is None
    rng = np.random.RandomState(0)
    Xm, ym = rng.normal(size=(550, 5)), np.repeat(np.arange(110), 5)
    est = GGNScoreClassifier(validation_fraction=0.9, max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(Xm, ym)  # 55 rows left to train on, 110 classes: no watch
    assert est.overfitting_watch_ is None


def test_watch_and_fit_on_all_rows_both_take_mini_batches():
    # 560 rows take mini-batches, the watch's 504 would take a full batch
    # (another τ, a line search): no watch then
    X, y = _one_hot_noisy(n=560, seed=3)
    clf = GGNScoreClassifier(random_state=0).fit(X, y)
    assert clf.overfitting_watch_ is None
    assert clf.batch_size_ == 128


def test_class_weight_weighs_the_held_out_rows():
    X, y = _one_hot_noisy()
    y = (np.arange(len(y)) % 6 == 0).astype(int)  # classes of 134 and 666 rows
    clf = GGNScoreClassifier(random_state=0, class_weight="balanced").fit(X, y)
    watch = clf.overfitting_watch_
    tr, va = _split(clf, X, y)
    tr, va = np.sort(tr), np.sort(va)
    counts = np.bincount(y)
    factor = len(y) / (2 * counts)
    ref = GGNScoreClassifier(random_state=0, class_weight="balanced",
                             early_stopping=False, max_iter=watch["epochs"],
                             tau=_tau(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(X[tr], y[tr], X_val=X[va], y_val=y[va],
                sample_weight_val=factor[y[va]])
    np.testing.assert_allclose(ref.validation_loss_curve_,
                               watch["validation_loss_curve"])


def test_a_random_state_instance_fits_as_the_seed_it_draws():
    # one seed for the split, the watch and the refit: the refit starts from
    # the watch's initial weights whatever random_state is
    X, y = _one_hot_noisy()
    seed = np.random.RandomState(7).randint(np.iinfo(np.int32).max)
    est = GGNScoreClassifier(random_state=np.random.RandomState(7)).fit(X, y)
    ref = GGNScoreClassifier(random_state=int(seed)).fit(X, y)
    assert est.overfitting_watch_["overfitting"]
    assert est.overfitting_watch_["best_epoch"] == ref.overfitting_watch_["best_epoch"]
    for a, b in zip(_weights(est), _weights(ref)):
        np.testing.assert_array_equal(a, b)


def test_a_fit_that_does_not_learn_still_says_so():
    X, y = _smooth_regression()
    labels = (y > np.median(y)).astype(int)
    with pytest.warns(ConvergenceWarning, match="did not learn"):
        clf = GGNScoreClassifier(tau=30.0, random_state=0).fit(X, labels)
    assert clf.overfitting_watch_ is not None


def test_conversion_warning_once():
    from sklearn.exceptions import DataConversionWarning

    X, y = _one_hot_noisy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        GGNScoreClassifier(random_state=0).fit(X, y.reshape(-1, 1))
    assert sum(issubclass(w.category, DataConversionWarning) for w in caught) == 1


def test_squared_error_rule_and_refit():
    # the squared error's risk rises slowly: its rule asks 7 %, not 10 %
    from sklearn.datasets import make_regression

    # (a case of benchmarks/watch_check.py that 10 % would let run on)
    X, y = make_regression(n_samples=4000, n_features=40, n_informative=8,
                           noise=30.0, random_state=0)
    X, y = X[:2000], y[:2000]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = (y - y.mean()) / y.std()
    reg = GGNScoreRegressor(random_state=0).fit(X, y)
    watch = reg.overfitting_watch_
    assert watch["overfitting"]
    risks = np.array(watch["validation_loss_curve"])
    above = risks > (1 + _plan.WATCH_RISE_SQUARED) * np.minimum.accumulate(risks)
    # (the rise holds for the last three epochs; it may have held before,
    # while the held-out risk was not yet 1.5 × the training risk)
    assert above[-3:].all()
    # (10 % would not have seen it)
    above_10 = risks > (1 + _plan.WATCH_RISE) * np.minimum.accumulate(risks)
    assert not any(above_10[i:i + 3].all() for i in range(len(above_10) - 2))
    _assert_refit_is_the_best_epochs(reg, X, y)


def test_verbose_says_what_the_watch_decided(capsys):
    X, y = _one_hot_noisy()
    GGNScoreClassifier(random_state=0, verbose=True).fit(X, y)
    out = capsys.readouterr().out
    assert "Stopping: the held-out risk of the overfitting watch" in out
    assert "Overfitting watch: the held-out risk rose for 3 epochs" in out
    assert "the callback asked to stop" not in out
    Xr, yr = _smooth_regression()
    GGNScoreRegressor(random_state=0, verbose=True).fit(Xr, yr)
    assert "the held-out rows join the training rows" in capsys.readouterr().out


def test_rule_on_given_curves():
    # the rule itself, on curves made up to pin each of its conditions
    def fires_at(risks, scores, training=None, rise=0.1):
        rule = OverfittingRule(rise, _plan.WATCH_GAP, _plan.WATCH_PATIENCE)
        training = [0.0] * len(risks) if training is None else training
        for t, (r, s, tr) in enumerate(zip(risks, scores, training, strict=True)):
            if rule(r, s, tr):
                return t + 1
        return None

    risks = [1.0, 0.8, 0.85, 0.9, 0.95, 1.0]
    # the risk three epochs above 1.1 × 0.8 (epochs 4-6), the scores no
    # better than the best by the minimum (0.7, at epoch 1)
    assert fires_at(risks, [0.7, 0.6, 0.6, 0.65, 0.7, 0.7]) == 6
    # a tie with that best fires (no better), one row more does not
    assert fires_at(risks, [0.7, 0.6, 0.6, 0.7, 0.7, 0.7]) == 6
    assert fires_at(risks, [0.7, 0.6, 0.6, 0.7, 0.7, 0.71]) is None
    # the mean of the three, not the last: a last epoch below the best
    # after two above it does not fire
    assert fires_at(risks, [0.7, 0.6, 0.6, 0.75, 0.75, 0.65]) is None
    # the count goes on while the risk stays up: fires once the scores fall
    assert fires_at(risks + [1.1, 1.1], [0.7, 0.6, 0.6, 0.8, 0.8, 0.8, 0.6, 0.5]) == 8
    # the held-out risk must also be 1.5 × the training risk
    assert fires_at(risks, [0.5] * 6, training=[0.7] * 6) is None
    assert fires_at(risks, [0.5] * 6, training=[0.5] * 6) == 6
    # scores that are not finite (a failing scorer): the risk decides alone
    assert fires_at(risks, [np.nan] * 6) == 6
    assert fires_at(risks, [0.7, 0.6, 0.6, np.nan, 0.9, 0.9]) == 6
    # ... and a NaN before the minimum is skipped in its best
    assert fires_at(risks, [np.nan, 0.6, 0.6, 0.65, 0.7, 0.7]) is None
    assert fires_at(risks, [np.nan, 0.7, 0.6, 0.65, 0.7, 0.7]) == 6


def test_a_scorer_without_finite_scores_leaves_the_watch_to_the_risk(capsys):
    # a failing scorer: the risk decides alone, and the refit runs the
    # epochs of the least held-out risk (not the first epoch)
    X, y = _one_hot_noisy()
    clf = GGNScoreClassifier(random_state=0, verbose=True,
                             scoring=lambda est, X, y: np.nan).fit(X, y)
    watch = clf.overfitting_watch_
    risks = np.array(watch["validation_loss_curve"])
    assert np.isnan(watch["validation_scores"]).all()
    assert watch["overfitting"]
    # the risk rule alone: the first three epochs in a row above 1.1 × the
    # running minimum
    above = risks > 1.1 * np.minimum.accumulate(risks)
    first = next(t for t in range(2, len(risks)) if above[t - 2:t + 1].all())
    assert watch["epochs"] == first + 1
    assert watch["best_epoch"] == int(np.argmin(risks)) + 1 > 1
    assert clf.n_iter_ <= watch["best_epoch"]
    out = capsys.readouterr().out
    assert "epochs of its least risk (no finite held-out score)" in out
    assert "its score no better" not in out


def test_no_watch_from_weights_set_by_hand():
    """warm_start with weights set by hand starts from them, with the watch
    as without it (the watch's phases drew new weights)."""
    X, y = make_classification(1500, 8, random_state=0)
    rng = np.random.default_rng(0)
    init = {"hidden_weights_": rng.standard_normal((6, 8)),
            "output_weights_": rng.standard_normal((6, 1)),
            "hidden_intercept_": np.zeros(6), "output_intercept_": np.zeros(1)}
    clf = GGNScoreClassifier(n_hidden=6, warm_start=True, max_iter=20,
                             store_initial_weights=True, random_state=0)
    for name, value in init.items():
        setattr(clf, name, value.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    assert clf.overfitting_watch_ is None
    np.testing.assert_array_equal(clf.initial_weights_["hidden_weights"],
                                  init["hidden_weights_"])


def test_class_weights_that_empty_the_held_out_side_skip_the_watch():
    """Held-out rows that carry weight only in a class of class weight 0:
    the watch steps aside, as for held-out rows of no sample weight (it
    raised an error about sample_weight_val, a parameter never passed)."""
    rng = np.random.RandomState(0)
    n = 1200
    X = rng.randn(n, 4)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    # the watch's split (its documented rule, the seed random_state=0)
    idx_train, idx_val = train_test_split(
        np.arange(n), test_size=min(500, int(np.ceil(0.1 * n))),
        random_state=check_random_state(0), stratify=y)
    weights = np.zeros(n)
    weights[idx_train] = 1.0
    weights[idx_val[y[idx_val] == 0]] = 1.0
    clf = GGNScoreClassifier(class_weight={0: 0.0, 1: 1.0}, max_iter=20,
                             random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y, sample_weight=weights)
    assert clf.overfitting_watch_ is None


def test_a_scorer_of_three_arguments_runs_on_class_weighted_rows():
    """class_weight weighs the watch's held-out rows; a documented
    ``scorer(estimator, X, y)`` without sample_weight scores them unweighted
    (it raised TypeError)."""
    X, y = make_classification(1500, 8, weights=[0.8], random_state=0)

    def accuracy(estimator, X, y):
        return float(np.mean(estimator.predict(X) == y))

    def hits(y_true, y_pred):  # a metric without sample_weight
        return float(np.mean(y_true == y_pred))

    for scoring in (accuracy, make_scorer(hits)):
        clf = GGNScoreClassifier(class_weight="balanced", scoring=scoring,
                                 max_iter=20, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(X, y)
        assert clf.overfitting_watch_ is not None
        assert np.all(np.isfinite(clf.overfitting_watch_["validation_scores"]))


def test_regressor_watch_goes_on_while_it_may_memorize_and_the_rule_decides():
    # past 15 epochs a regressor's watch goes on while the held-out risk is
    # more than 1.5 x the training risk and above its minimum, and its rule
    # can still fire
    X, y = _one_hot_regression(noise=0.5, seed=4)
    reg = GGNScoreRegressor(random_state=4).fit(X, y)
    watch = reg.overfitting_watch_
    epochs = watch["epochs"]
    assert watch["overfitting"] and epochs > _plan.WATCH_EPOCHS
    training, held_out, _ = _watched_curves(reg, X, y, epochs)
    np.testing.assert_allclose(held_out, watch["validation_loss_curve"])
    # (epochs 15 .. the last but one: the gap held and the risk stood above
    # its minimum, so the watch went on)
    beyond = slice(_plan.WATCH_EPOCHS - 1, epochs - 1)
    assert np.all(held_out[beyond] > _plan.WATCH_GAP * training[beyond])
    assert np.all(held_out[beyond] > np.minimum.accumulate(held_out)[beyond])
    # the rule fires at the last watched epoch, and not before
    rule = OverfittingRule(_plan.WATCH_RISE_SQUARED, _plan.WATCH_GAP,
                           _plan.WATCH_PATIENCE)
    fired = [rule(r, -r, t) for r, t in zip(held_out, training, strict=True)]
    assert fired.index(True) == epochs - 1
    # (what a watch of 15 epochs alone would have missed)
    assert not any(fired[:_plan.WATCH_EPOCHS])
    # the refit: the best epochs on all rows
    _assert_refit_is_the_best_epochs(reg, X, y)


@pytest.mark.parametrize("noise, seed, why", [(0.2, 1, "gap"),
                                              (0.35, 2, "minimum")])
def test_regressor_watch_ends_when_the_gap_closes_or_the_risk_falls(noise, seed,
                                                                  why):
    X, y = _one_hot_regression(noise=noise, seed=seed)
    reg = GGNScoreRegressor(random_state=seed).fit(X, y)
    watch = reg.overfitting_watch_
    epochs = watch["epochs"]
    assert not watch["overfitting"]
    assert _plan.WATCH_EPOCHS < epochs < _plan.WATCH_MAX_EPOCHS
    training, held_out, ref = _watched_curves(reg, X, y, epochs)
    beyond = slice(_plan.WATCH_EPOCHS - 1, epochs - 1)
    assert np.all(held_out[beyond] > _plan.WATCH_GAP * training[beyond])
    assert np.all(held_out[beyond] > np.minimum.accumulate(held_out)[beyond])
    gap_closed = not held_out[-1] > _plan.WATCH_GAP * training[-1]
    at_minimum = held_out[-1] <= held_out[:-1].min()
    assert (gap_closed, at_minimum) == (why == "gap", why == "minimum")
    # = the watch's epochs on the split, warm-started on all rows
    _continued_on_all_rows(ref, X, y, epochs)
    for a, b in zip(_weights(reg), _weights(ref)):
        np.testing.assert_array_equal(a, b)
    assert reg.n_iter_ == len(ref.loss_curve_) > epochs
    if why == "minimum":
        # at most half of max_iter
        short = GGNScoreRegressor(random_state=seed,
                                  max_iter=2 * (epochs - 3)).fit(X, y)
        assert short.overfitting_watch_["epochs"] == epochs - 3


def _interrupt_watch_at(monkeypatch, epoch, how):
    """Make the watch's fit (the first solve of a fit) diverge or converge
    at ``epoch``."""
    seen = {"solves": 0, "epochs": 0}
    solve, run_epoch = _base.GGNScoreSolver.solve, _base.GGNScoreSolver._epoch

    def counted_solve(self, *args, **kwargs):
        seen["solves"] += 1
        seen["epochs"] = 0
        return solve(self, *args, **kwargs)

    def interrupted_epoch(self, *args, **kwargs):
        seen["epochs"] += 1
        if seen["solves"] == 1 and seen["epochs"] == epoch and how == "diverge":
            raise StepFailure("diverged here")
        return run_epoch(self, *args, **kwargs)

    class Converging(_base.NoImprovement):
        def __call__(self, objective, previous_best):
            stop = super().__call__(objective, previous_best)
            return stop or (seen["solves"] == 1 and seen["epochs"] == epoch)

    monkeypatch.setattr(_base.GGNScoreSolver, "solve", counted_solve)
    monkeypatch.setattr(_base.GGNScoreSolver, "_epoch", interrupted_epoch)
    if how == "converge":
        monkeypatch.setattr(_base, "NoImprovement", Converging)


def test_a_watch_that_diverges_past_15_epochs_refits_all_rows(monkeypatch, capsys):
    # (this watch fires at epoch 20 when left alone)
    X, y = _one_hot_regression(noise=0.5, seed=4)
    _interrupt_watch_at(monkeypatch, 18, "diverge")
    reg = GGNScoreRegressor(random_state=4, verbose=True).fit(X, y)
    assert ("Overfitting watch: the watch's fit diverged; fitting on all rows."
            in capsys.readouterr().out)
    watch = reg.overfitting_watch_
    assert watch["epochs"] == 17 and not watch["overfitting"]
    ref = GGNScoreRegressor(random_state=4, early_stopping=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref.fit(X, y)
    for a, b in zip(_weights(reg), _weights(ref)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("ending", ["converges", "cap"])
def test_a_watch_that_converges_or_reaches_its_cap_lets_the_rows_join(monkeypatch,
                                                                      ending):
    # past 15 epochs, a watch fit that converges (its stopping rule) or
    # reaches _WATCH_MAX_EPOCHS (here 17, at most half of max_iter) joins
    X, y = _one_hot_regression(noise=0.5, seed=4)
    if ending == "converges":
        _interrupt_watch_at(monkeypatch, 18, "converge")
    else:
        monkeypatch.setattr(_plan, "WATCH_MAX_EPOCHS", 17)
    reg = GGNScoreRegressor(random_state=4, max_iter=200).fit(X, y)
    watch = reg.overfitting_watch_
    epochs = 18 if ending == "converges" else 17
    assert watch["epochs"] == epochs and not watch["overfitting"]
    assert len(watch["validation_loss_curve"]) == epochs
    # (joined: the loss curve goes on from the watch's epochs)
    assert reg.n_iter_ == len(reg.loss_curve_) > epochs
    assert reg.validation_loss_curve_ is None


def test_classifier_watch_keeps_its_epochs_whatever_the_log_loss_gap():
    # a log-loss far above the training one while the accuracy improves is
    # no sign of memorizing: 15 epochs, then the rows join
    X, y = make_classification(n_samples=2000, n_features=200, n_informative=10,
                               n_classes=5, flip_y=0.1, random_state=0)
    clf = GGNScoreClassifier(random_state=0).fit(X, y)
    watch = clf.overfitting_watch_
    assert not watch["overfitting"] and watch["epochs"] == _plan.WATCH_EPOCHS
    training = clf.loss_curve_[_plan.WATCH_EPOCHS - 1]  # (objective >= risk)
    assert watch["validation_loss_curve"][-1] > 10 * _plan.WATCH_GAP * training


def test_verbose_says_why_a_regressors_watch_ended(capsys):
    X, y = _one_hot_regression(noise=0.2, seed=1)
    GGNScoreRegressor(random_state=1, verbose=True).fit(X, y)
    out = capsys.readouterr().out
    assert ("Stopping: the held-out risk of the overfitting watch is at its "
            f"minimum or within {_plan.WATCH_GAP:g} times the training "
            "risk.") in out
    assert "the callback asked to stop" not in out
    assert "the held-out rows join the training rows" in out


@pytest.mark.parametrize("branch", ["overfitting", "continues", "diverged"])
def test_each_warning_of_a_watched_fit_reaches_the_user_once(monkeypatch, branch):
    # the data warning and the width advice (their thresholds lowered so
    # that these fits, whose branches the tests above pin, give them), the
    # max_iter warning of the fit on all rows (a refit to the best epoch
    # ends at its max_iter by design), and a warning that only the watch's
    # fit on the split gives
    monkeypatch.setattr(_advice, "EXTREME_INPUT", 0.5)
    monkeypatch.setattr(_advice, "ABSURD_PARAMS_PER_SAMPLE", 0)
    monkeypatch.setattr(_advice, "ABSURD_FIT_FLOPS", 0)
    calls = []
    check_width = _advice.check_width

    def first_call_warns(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            warnings.warn("the watch's fit alone says this", UserWarning)
        return check_width(*args, **kwargs)

    monkeypatch.setattr(_advice, "check_width", first_call_warns)
    # (the plain map: one watch phase, then the fit on all rows)
    if branch == "overfitting":
        X, y = _one_hot_noisy()
        est = GGNScoreClassifier(random_state=0, input_transform="robust_clip")
    elif branch == "continues":
        X, y = _smooth_regression()
        est = GGNScoreRegressor(random_state=0, max_iter=20,
                                input_transform="robust_clip")
    else:
        X, y = _one_hot_regression(noise=0.5, seed=4)
        _interrupt_watch_at(monkeypatch, 8, "diverge")
        est = GGNScoreRegressor(random_state=4, max_iter=20,
                                input_transform="robust_clip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    watch = est.overfitting_watch_
    assert watch["overfitting"] == (branch == "overfitting")
    assert (watch["epochs"] < 10) == (branch == "diverged")
    assert len(calls) == 2  # the watch's fit and the fit on all rows
    messages = [str(w.message) for w in caught]
    expected = {"X has values up to": 1, "gives": 1,
                "the watch's fit alone says this": 1,
                "Maximum iterations": 0 if branch == "overfitting" else 1}
    for start, count in expected.items():
        assert sum(m.startswith(start) or m.startswith(f"n_hidden=100 {start}")
                   for m in messages) == count, (start, messages)
    assert len(messages) == sum(expected.values()), messages
    # the width advice is the fit on all rows' (its rows), not the watch's
    width = [m for m in messages if m.startswith("n_hidden=")]
    assert f"for {X.shape[0]} training samples" in width[0]


def test_a_watched_fit_that_raises_still_gives_its_warnings(monkeypatch):
    monkeypatch.setattr(_advice, "EXTREME_INPUT", 0.5)
    X, y = _smooth_regression()
    fit_phase = GGNScoreRegressor._fit_phase
    phases = []

    def second_phase_raises(self, *args, **kwargs):
        phases.append(1)
        if len(phases) == 2:
            raise KeyboardInterrupt
        return fit_phase(self, *args, **kwargs)

    monkeypatch.setattr(GGNScoreRegressor, "_fit_phase", second_phase_raises)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt):
            GGNScoreRegressor(random_state=0, max_iter=20).fit(X, y)
    assert [str(w.message)[:18] for w in caught] == ["X has values up to"]
