"""Test configuration: hypothesis profiles for tests/test_fuzz.py, and the
local dask cluster of the distributed tests.

``default`` keeps the fuzz test inside the CI budget; run longer with
``python -m pytest tests/test_fuzz.py --hypothesis-profile=long``.
"""

import pytest

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the fuzz test skips itself without hypothesis
    settings = None
else:
    _common = dict(deadline=None, print_blob=True,
                   suppress_health_check=[HealthCheck.too_slow,
                                          HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])
    # (the suite's profile draws the same examples on every run: a run
    # fails for the code, not for the draw; "long" explores)
    settings.register_profile("ci", max_examples=25, derandomize=True, **_common)
    settings.register_profile("long", max_examples=1000, **_common)


def pytest_configure(config):
    if settings is None:
        return
    try:
        chosen = config.getoption("--hypothesis-profile")
    except ValueError:
        chosen = None
    settings.load_profile(chosen or "ci")


@pytest.fixture(scope="module")
def client():
    """A client of a two-process, one-thread-per-worker local dask cluster
    (tests/test_dask.py, tests/test_incremental.py)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client
