"""A grid search on a real dask.distributed cluster gives the sequential result.

Needs ``distributed`` (in the ``test`` extra); skipped otherwise. The cluster
is a ``LocalCluster`` of two worker processes with one thread each on
localhost, without dashboard; it is closed after the module. Its workers
run with one BLAS thread (distributed sets ``OPENBLAS_NUM_THREADS=1`` etc.),
and so does the sequential reference search. The workers import
sklearn_ggn and load the numba cache on their first fit (the sequential
search in this process runs first and writes it, if needed).
"""

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV
from threadpoolctl import threadpool_limits

from sklearn_ggn import GGNScoreClassifier

distributed = pytest.importorskip("distributed")


# max_iter=2 is a budget: the fits stop before converging
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_grid_search_on_dask_cluster_matches_sequential(client):
    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16.0, y[:300]
    grid = {"mu": [1.0, 4.0], "tau": [1e-5, 1e-3]}
    est = GGNScoreClassifier(n_hidden=16, max_iter=2, random_state=0)
    search = GridSearchCV(est, grid, cv=2, n_jobs=-1)
    # One BLAS thread here too, like the workers (the refits run in this
    # process): fits are reproducible bit for bit for a given number of BLAS
    # threads, not across numbers.
    with threadpool_limits(limits=1, user_api="blas"):
        sequential = GridSearchCV(est, grid, cv=2, n_jobs=1).fit(X, y)
        with distributed.get_task_stream(client) as stream:
            with joblib.parallel_config(backend="dask"):
                search.fit(X, y)
    # the 2 x 2 x 2 fits ran as tasks on the cluster's worker processes
    workers = client.scheduler_info()["workers"]
    assert len(workers) == 2
    assert len(stream.data) >= 8
    assert {task["worker"] for task in stream.data} <= set(workers)

    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               sequential.cv_results_["mean_test_score"],
                               rtol=0, atol=1e-12)
    assert search.best_params_ == sequential.best_params_
    pred = search.best_estimator_.predict(X[:50])
    assert pred.shape == (50,)
    np.testing.assert_array_equal(pred, sequential.best_estimator_.predict(X[:50]))
