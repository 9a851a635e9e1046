"""The plan of a fit as a function: a table of data summaries and parameters
against the plans they give (``sklearn_ggn._plan.plan_fit``), and the
estimators following the plan."""

import numpy as np
import pytest

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, _plan

STRUCTURED = {"rank": 1, "per_unit": True}  # the default step, one kernel row
EXACT = {}  # hessian="diagonal" with the exact curvature


def _summary(n, K=1, structure=STRUCTURED, regressor=False, **kw):
    weight = float(n)
    return _plan.DataSummary(
        n_samples=n, n_features=8, n_outputs=K, rows_weight=kw.pop("rows", weight),
        train_weight=(weight, weight), structure=structure,
        full_batch_rows=(_plan.AUTO_FULL_BATCH_ROWS if regressor
                         else _plan.AUTO_STRUCTURED_FULL_BATCH_ROWS),
        selects_tau=regressor, squared_error=regressor, watch_extends=regressor,
        watchable=kw.pop("watchable", True), **kw)


def _params(cls=GGNScoreClassifier, **overrides):
    return cls(**overrides).get_params(deep=False)


# (name, params, summary, expected fields of the plan)
TABLE = [
    ("small classification: full batch, float64, tau min(0.01, 10/n), "
     "line search", _params(), _summary(400),
     dict(batch_size=400, full_batch=True, work_dtype=np.float64, tau_rule="samples",
          tau=0.01, damping_start=0.01, line_search=True, watch=None,
          structured=True)),
    ("larger classification: mini-batches of 128 in float32, tau 1/n, no "
     "line search", _params(), _summary(5000),
     dict(batch_size=128, full_batch=False, work_dtype=np.float32,
          tau_rule="mini_batch", tau=1 / 5000, line_search=False,
          merge_short=True)),
    ("tall data: the mini-batch tau's floor", _params(), _summary(50_000),
     dict(tau=1e-4, batch_size=128)),
    ("compute_dtype='float64': mini-batches in float64",
     _params(compute_dtype="float64"), _summary(5000),
     dict(batch_size=128, work_dtype=np.float64)),
    ("compute_dtype='float32': a small full batch in float32",
     _params(compute_dtype="float32"), _summary(400),
     dict(full_batch=True, work_dtype=np.float32)),
    ("tiny data: tau capped at 0.01", _params(), _summary(60),
     dict(tau=0.01, full_batch=True)),
    ("regressor: full batch to 1024 rows, tau chosen by GCV from 10/n",
     _params(GGNScoreRegressor), _summary(1020, regressor=True),
     dict(batch_size=1020, tau_rule="select", tau_criterion="gcv", tau=10 / 1020,
          damping_start=10 / 1020, evidence_path=True)),
    ("regressor, tau='gcv': the criterion alone", _params(GGNScoreRegressor, tau="gcv"),
     _summary(900, regressor=True), dict(tau_rule="select", tau_criterion="gcv",
                                         evidence_path=False)),
    ("regressor, tau='evidence'", _params(GGNScoreRegressor, tau="evidence"),
     _summary(900, regressor=True), dict(tau_rule="select", tau_criterion="gcv",
                                         evidence_path=True)),
    ("exact step, 10 outputs: 25 rows a batch, line search",
     _params(hessian="diagonal", curvature="exact"), _summary(3000, K=10,
                                                               structure=EXACT),
     dict(batch_size=25, structured=False, line_search=True)),
    ("exact step in full batch while n·K <= 1024",
     _params(hessian="diagonal"), _summary(100, K=10, structure=EXACT),
     dict(batch_size=100, full_batch=True)),
    ("given tau and batch size", _params(tau=1e-3, batch_size=64), _summary(5000),
     dict(tau_rule="given", tau=1e-3, batch_size=64, merge_short=False)),
    ("partial_fit: mini-batches, tau's floor, one pass, no objective stop",
     _params(), _summary(300, incremental=True),
     dict(batch_size=128, full_batch=False, tau=1e-4, max_iter=1,
          stops_on_objective=False, watch=None)),
    ("early_stopping=True with validation rows", _params(early_stopping=True),
     _summary(5000, early_stopping=True),
     dict(early_stopping=True, stops_on_objective=False, damping_ends_fit=False,
          watch=None)),
    ("n_iter_no_change=inf never stops on a stall",
     _params(n_iter_no_change=np.inf), _summary(5000),
     dict(stop_when_stalled=False)),
    ("mu='auto' is 1/kappa(n)", _params(n_hidden=400), _summary(5000),
     dict(mu=20.0)),
    ("a given mu", _params(mu=3.0), _summary(5000), dict(mu=3.0)),
]


@pytest.mark.parametrize("name, params, summary, expected", TABLE,
                         ids=[row[0] for row in TABLE])
def test_plan_table(name, params, summary, expected):
    plan = _plan.plan_fit(params, summary)
    for field, value in expected.items():
        got = getattr(plan, field)
        if isinstance(value, float):
            assert got == pytest.approx(value, rel=1e-12), field
        else:
            assert got == value, field


# (name, params, summary, the watch's (n_val, epochs, longest, rise) or None)
WATCHES = [
    ("classifier: 15 epochs, 10 % rise", _params(), _summary(5000),
     (500, 15, 15, _plan.WATCH_RISE)),
    ("regressor: on up to 50 epochs, 7 % rise", _params(GGNScoreRegressor),
     _summary(5000, regressor=True), (500, 15, 50, _plan.WATCH_RISE_SQUARED)),
    ("held-out rows: a tenth", _params(), _summary(2000), (200, 15, 15, 0.1)),
    ("half of max_iter", _params(GGNScoreRegressor, max_iter=40),
     _summary(5000, regressor=True), (500, 15, 20, 0.07)),
    ("too few epochs", _params(max_iter=9), _summary(5000), None),
    ("too few held-out rows", _params(), _summary(400), None),
    ("full batch on all rows", _params(GGNScoreRegressor),
     _summary(1000, regressor=True), None),
    ("full batch on the watch's rows", _params(), _summary(560), None),
    ("not watchable (X_val, a warm start, callbacks)", _params(),
     _summary(5000, watchable=False), None),
    ("early_stopping=False", _params(early_stopping=False), _summary(5000), None),
]


@pytest.mark.parametrize("name, params, summary, expected", WATCHES,
                         ids=[row[0] for row in WATCHES])
def test_watch_table(name, params, summary, expected):
    watch = _plan.plan_fit(params, summary).watch
    if expected is None:
        assert watch is None
    else:
        assert (watch.n_val, watch.epochs, watch.longest, watch.rise) == expected
        assert (watch.gap, watch.patience) == (_plan.WATCH_GAP,
                                               _plan.WATCH_PATIENCE)


def test_plan_is_pure():
    params, summary = _params(), _summary(5000)
    before = dict(params)
    assert _plan.plan_fit(params, summary) == _plan.plan_fit(params, summary)
    assert params == before


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n, cls", [(300, GGNScoreClassifier),
                                    (3000, GGNScoreClassifier),
                                    (700, GGNScoreRegressor),
                                    (3000, GGNScoreRegressor)])
def test_estimators_follow_the_plan(n, cls):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 4))
    y = X[:, 0] + 0.1 * rng.standard_normal(n)
    if cls is GGNScoreClassifier:
        y = (y > 0).astype(int)
    est = cls(n_hidden=8, max_iter=3, early_stopping=False, random_state=0)
    est.fit(X, y)
    summary = _summary(n, regressor=cls is GGNScoreRegressor, watchable=False)
    plan = _plan.plan_fit(est.get_params(deep=False), summary)
    assert est.batch_size_ == plan.batch_size
    if plan.tau_rule != "select":
        assert est.tau_ == pytest.approx(plan.tau, rel=1e-12)
