"""Test configuration: hypothesis profiles for tests/test_fuzz.py.

``default`` keeps the fuzz test inside the CI budget; run longer with
``python -m pytest tests/test_fuzz.py --hypothesis-profile=long``.
"""

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the fuzz test skips itself without hypothesis
    settings = None
else:
    _common = dict(deadline=None, print_blob=True,
                   suppress_health_check=[HealthCheck.too_slow,
                                          HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])
    settings.register_profile("ci", max_examples=25, **_common)
    settings.register_profile("long", max_examples=1000, **_common)


def pytest_configure(config):
    if settings is None:
        return
    try:
        chosen = config.getoption("--hypothesis-profile")
    except ValueError:
        chosen = None
    settings.load_profile(chosen or "ci")
