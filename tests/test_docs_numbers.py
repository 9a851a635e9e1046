"""The numbers the documentation quotes are the code's: the parameter
docstrings, the quickstart and the user guide against the constants of the
plan (``sklearn_ggn._plan``). A change of a constant fails here until the
text says the new value."""

import re
from pathlib import Path

import pytest

import sklearn_ggn
from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, _plan
from sklearn_ggn.engine import (
    AdaptiveDamping,
    ArmijoLineSearch,
    TrustDamping,
    _strategies,
)

DOCS = Path(sklearn_ggn.__file__).resolve().parent.parent / "docs"


def _parameter_text(cls, name):
    """The numpydoc entry of parameter ``name`` in ``cls``'s docstring."""
    doc = cls.__doc__
    start = re.search(rf"^    {name} : ", doc, re.M).start()
    end = re.search(r"^    \w+ : ", doc[start + 1:], re.M).start() + start + 1
    return " ".join(doc[start:end].split())


def _percent(fraction):
    return f"{100 * fraction:g} %"


@pytest.mark.parametrize("cls", [GGNScoreClassifier, GGNScoreRegressor])
def test_damping_docstring_quotes_the_full_batch_start(cls):
    text = _parameter_text(cls, "damping")
    assert (f"``max(τ, min({_plan.AUTO_TAU_MAX:g}, "
            f"{_plan.AUTO_TAU_SAMPLES:g}/n))``") in text


@pytest.mark.parametrize("cls", [GGNScoreClassifier, GGNScoreRegressor])
def test_batch_size_docstring_quotes_the_rule(cls):
    text = _parameter_text(cls, "batch_size")
    for phrase in [f"full batch up to {_plan.AUTO_STRUCTURED_FULL_BATCH_ROWS} "
                   "samples",
                   f"({_plan.AUTO_FULL_BATCH_ROWS} for the squared-error",
                   f"else {_plan.AUTO_STRUCTURED_ROWS} per batch",
                   f"n_outputs ≤ {_plan.AUTO_FULL_BATCH_ROWS}",
                   f"``{_plan.AUTO_BATCH_ROWS} // n_outputs``"]:
        assert phrase in text, phrase


def test_line_search_docstring_quotes_armijo():
    text = _parameter_text(GGNScoreClassifier, "line_search")
    assert f"c = {ArmijoLineSearch().c:.0e}".replace("e-0", "e-") in text
    assert ("halving" in text) == (ArmijoLineSearch().shrink == 0.5)


@pytest.mark.skipif(not DOCS.is_dir(), reason="needs the source tree")
def test_user_guide_quotes_the_batch_rule_and_the_damping_start():
    text = " ".join((DOCS / "user_guide.rst").read_text().split())
    for phrase in [
            f"trains in full batch up to {_plan.AUTO_STRUCTURED_FULL_BATCH_ROWS}"
            f" rows ({_plan.AUTO_FULL_BATCH_ROWS} for the squared-error and "
            "Huber regressors",
            f"in batches of {_plan.AUTO_STRUCTURED_ROWS} rows beyond",
            f"``n_samples · n_outputs ≤ {_plan.AUTO_FULL_BATCH_ROWS}``",
            f"``{_plan.AUTO_BATCH_ROWS} // n_outputs``",
            f"at ``max(τ, min({_plan.AUTO_TAU_MAX:g}, "
            f"{_plan.AUTO_TAU_SAMPLES:g}/n))``"]:
        assert phrase in text, phrase


@pytest.mark.parametrize("cls", [GGNScoreClassifier, GGNScoreRegressor])
def test_early_stopping_docstring_and_guide_quote_the_watch(cls):
    text = _parameter_text(cls, "early_stopping")
    quoted = [f"at most {_plan.WATCH_MAX_ROWS}, at least {_plan.WATCH_MIN_ROWS}",
              f"first {_plan.WATCH_EPOCHS} epochs",
              f"up to {_plan.WATCH_MAX_EPOCHS})",
              f"for {_plan.WATCH_PATIENCE} epochs"]
    for phrase in quoted:
        assert phrase in text, phrase
    guide = " ".join((DOCS / "user_guide.rst").read_text(encoding="utf-8").split())
    guide_quoted = [f"at most {_plan.WATCH_MAX_ROWS:,}".replace(",", " "),
                    f"at least {_plan.WATCH_MIN_ROWS}",
                    f"up to {_plan.WATCH_EPOCHS} epochs",
                    f"more than {_percent(_plan.WATCH_RISE)}",
                    f"({_percent(_plan.WATCH_RISE_SQUARED)}",
                    f"more than {_plan.WATCH_GAP:g} times the",
                    f"for {_plan.WATCH_PATIENCE} epochs in",
                    f"more than {_plan.WATCH_GAP:g} times the training risk "
                    "and above its minimum",
                    f"up to {_plan.WATCH_MAX_EPOCHS} epochs"]
    for phrase in guide_quoted:
        assert phrase in guide, phrase


@pytest.mark.parametrize("cls", [GGNScoreClassifier, GGNScoreRegressor])
def test_tau_docstring_and_guide_quote_the_rules(cls):
    floor, c = _plan.AUTO_TAU_MINI_BATCH, _plan.AUTO_TAU_MINI_BATCH_SAMPLES
    text = _parameter_text(cls, "tau")
    assert floor == 1e-4  # (written 1e-4 in the text)
    assert f"``max(1e-4, {c:g}/n_samples)`` on mini-batches" in text
    assert "(1e-4 for ``partial_fit``)" in text
    assert (f"``min({_plan.AUTO_TAU_MAX:g}, {_plan.AUTO_TAU_SAMPLES:g}"
            "/n_samples)``") in text
    guide = " ".join((DOCS / "user_guide.rst").read_text().split())
    assert f":math:`\\tau = \\max(10^{{-4}}, {c:g}/n)`" in guide


@pytest.mark.skipif(not DOCS.is_dir(), reason="needs the source tree")
def test_defaults_page_quotes_the_rules():
    # docs/defaults.rst states each default's rule (the docstrings point to
    # its sections): its numbers are the code's.
    text = " ".join((DOCS / "defaults.rst").read_text(encoding="utf-8").split())
    d = AdaptiveDamping(unit=1.0)
    trust = TrustDamping(1e-4, 0.01)
    five = {3: "three", 5: "five"}.get(d.patience, str(d.patience))
    quoted = [
        # damping="adaptive"
        f"more than {d.reject_ratio:g}× worse is undone and λ "
        + ("tripled" if d.increase == 3.0 else f"× {d.increase:g}"),
        f"stands more than {d.screen:g}× above the last batch's or the "
        f"running mean of the batch objectives (weight "
        f"{_strategies.SCREEN_WEIGHT:g})",
        f"by less than {_percent(d.stall)} (*slow*)",
        f"by less than {_percent(d.stall_first)} of the first epoch's",
        f"{five} small stalled epochs in a row end the fit",
        f"λ starts at {_strategies.STRUCTURED_INITIAL:g}, decays by "
        f"{_percent(1 - d.decay)} per {_strategies.REFERENCE_ROWS} rows seen",
        f"s/{_strategies.WORK_STEPS} of the stall thresholds",
        f"floor {_strategies.STRUCTURED_STALL_INCREASE:g}-fold",
        f"with the exact step λ starts at {d.lam:g}",
        f"the floor rises {d.stall_increase:g}-fold",
        f"\\tau_0 = \\min({_plan.AUTO_TAU_MAX:g}, "
        f"{_plan.AUTO_TAU_SAMPLES:g}/n)",
        "shortened (without" if trust.increase == 2.0 else "λ ×",
        f"is divided by {1 / trust.decrease:g} after a step taken as proposed",
        # line_search="auto"
        f"halving, c = {ArmijoLineSearch().c:.0e}".replace("e-0", "e-"),
        # batch_size="auto"
        f"full batch up to {_plan.AUTO_STRUCTURED_FULL_BATCH_ROWS} samples "
        f"({_plan.AUTO_FULL_BATCH_ROWS} for the squared-error",
        f"else batches of {_plan.AUTO_STRUCTURED_ROWS}",
        f"n_outputs ≤ {_plan.AUTO_FULL_BATCH_ROWS}``",
        f"``{_plan.AUTO_BATCH_ROWS} // K`` samples",
        # tau="auto"
        f"\\tau = \\min({_plan.AUTO_TAU_SAMPLES:g}/n, {_plan.AUTO_TAU_MAX:g})",
        f"\\tau = \\min({_plan.AUTO_TAU_MAX:g}, \\max(10^{{-4}}, "
        f"{_plan.AUTO_TAU_MINI_BATCH_SAMPLES:g}/n))",
        # early_stopping="auto"
        f"(at most {_plan.WATCH_MAX_ROWS}, at least {_plan.WATCH_MIN_ROWS},",
        f"for its first {_plan.WATCH_EPOCHS} epochs",
        f"for {_plan.WATCH_PATIENCE} epochs in a row",
        f"more than {_percent(_plan.WATCH_RISE)} above its minimum "
        f"({_percent(_plan.WATCH_RISE_SQUARED)} for the squared error)",
        f"more than {_plan.WATCH_GAP:g} times the training risk",
        f"up to {_plan.WATCH_MAX_EPOCHS} epochs",
    ]
    assert _plan.AUTO_TAU_MINI_BATCH == 1e-4  # (written 10^{-4} above)
    missing = [phrase for phrase in quoted if phrase not in text]
    assert not missing, missing
