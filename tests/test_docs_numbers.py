"""The numbers the documentation quotes are the code's: the ``damping`` and
``batch_size`` docstrings and the quickstart against the constants the
engine and the estimators use. A change of a constant fails here until the
text says the new value."""

import re
from pathlib import Path

import pytest

import sklearn_ggn
from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, _base
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
def test_damping_docstring_quotes_the_rules(cls):
    text = _parameter_text(cls, "damping")
    d = AdaptiveDamping(unit=1.0)
    trust = TrustDamping(1e-4, 0.01)
    quoted = [
        f"more than {d.reject_ratio:g}× worse",
        "λ tripled" if d.increase == 3.0 else f"λ × {d.increase:g}",
        f"decay by {_percent(1 - d.decay)}",
        f"by less than {_percent(d.stall)}",
        f"less than {_percent(d.stall_first)} of the first",
        f"floor {d.stall_increase:g}-fold",
        f"λ starts at {d.lam:g}",
        f"λ starts at {_strategies.STRUCTURED_INITIAL:g}",
        f"per {_strategies.REFERENCE_ROWS} rows seen",
        f"s/{_strategies.WORK_STEPS}",
        f"floor {_strategies.STRUCTURED_STALL_INCREASE:g}-fold",
        f"τ₀ = min({_base._AUTO_TAU_MAX:g}, {_base._AUTO_TAU_SAMPLES:g}/n)",
        "shortens doubles λ" if trust.increase == 2.0 else "λ ×",
        f"divides it by {1 / trust.decrease:g}",
    ]
    five = {5: "five"}[d.patience] if d.patience == 5 else str(d.patience)
    quoted += [f"{five} such stalled epochs",
               f"floor raised {d.stall_increase ** d.patience:.1f}-fold"]
    for phrase in quoted:
        assert phrase in text, phrase


@pytest.mark.parametrize("cls", [GGNScoreClassifier, GGNScoreRegressor])
def test_batch_size_docstring_quotes_the_rule(cls):
    text = _parameter_text(cls, "batch_size")
    for phrase in [f"full batch up to {_base._AUTO_STRUCTURED_FULL_BATCH_ROWS} "
                   "samples",
                   f"({_base._AUTO_FULL_BATCH_ROWS} for the squared-error",
                   f"else {_base._AUTO_STRUCTURED_ROWS} samples per batch",
                   f"n_outputs ≤ {_base._AUTO_FULL_BATCH_ROWS}",
                   f"``{_base._AUTO_BATCH_ROWS} // K`` samples for",
                   f"({_base._AUTO_BATCH_ROWS} for one output)"]:
        assert phrase in text, phrase


def test_line_search_docstring_quotes_armijo():
    text = _parameter_text(GGNScoreClassifier, "line_search")
    assert f"c = {ArmijoLineSearch().c:.0e}".replace("e-0", "e-") in text
    assert ("halving" in text) == (ArmijoLineSearch().shrink == 0.5)


@pytest.mark.skipif(not DOCS.is_dir(), reason="needs the source tree")
def test_quickstart_quotes_the_batch_rule():
    text = " ".join((DOCS / "quickstart.rst").read_text().split())
    assert (f"more than the {_base._AUTO_STRUCTURED_FULL_BATCH_ROWS} up to which "
            '``batch_size="auto"`` trains in full batch') in text
    assert f"mini-batches of {_base._AUTO_STRUCTURED_ROWS} samples" in text
    assert f"at max(τ, {_base._AUTO_TAU_MAX:g})" in text


@pytest.mark.parametrize("cls", [GGNScoreClassifier, GGNScoreRegressor])
def test_early_stopping_docstring_and_guide_quote_the_watch(cls):
    text = _parameter_text(cls, "early_stopping")
    guide = " ".join((DOCS / "user_guide.rst").read_text(encoding="utf-8").split())
    quoted = [f"at most {_base._WATCH_MAX_ROWS:,}".replace(",", " "),
              f"at least {_base._WATCH_MIN_ROWS}",
              f"first {_base._WATCH_EPOCHS} epochs",
              f"more than {_percent(_base._WATCH_RISE)}",
              f"({_percent(_base._WATCH_RISE_SQUARED)}",
              f"more than {_base._WATCH_GAP:g} times the",
              f"for {_base._WATCH_PATIENCE} epochs in"]
    for phrase in quoted:
        assert phrase in text, phrase
    guide_quoted = quoted[:2] + [f"up to {_base._WATCH_EPOCHS} epochs"] + quoted[3:]
    # the regressor's watch goes on while the held-out risk stands the
    # rule's gap above the training risk (quoted in the docstring's own
    # words: the rule's sentence after it has the gap's too)
    longer = [f"{_base._WATCH_GAP:g} times the training risk (the fit may be "
              "memorizing its rows) and above its minimum, up to "
              f"{_base._WATCH_MAX_EPOCHS} epochs"]
    for phrase in longer:
        assert phrase in text, phrase
    longer_guide = [f"more than {_base._WATCH_GAP:g} times the training risk "
                    "and above its minimum",
                    f"up to {_base._WATCH_MAX_EPOCHS} epochs"]
    for phrase in guide_quoted + longer_guide:
        assert phrase in guide, phrase


@pytest.mark.parametrize("cls", [GGNScoreClassifier, GGNScoreRegressor])
def test_tau_docstring_and_guide_quote_the_mini_batch_rule(cls):
    floor, c = _base._AUTO_TAU_MINI_BATCH, _base._AUTO_TAU_MINI_BATCH_SAMPLES
    text = _parameter_text(cls, "tau")
    assert floor == 1e-4  # (written 1e-4 in the text)
    assert f"``max(1e-4, {c:g} / n_samples)`` for mini-batch" in text
    assert f"from {round(c / floor):,} rows on 1e-4".replace(",", " ") in text
    assert "1e-4 for ``partial_fit``" in text
    guide = " ".join((DOCS / "user_guide.rst").read_text().split())
    assert f":math:`\\tau = \\max(10^{{-4}}, {c:g}/n)`" in guide


@pytest.mark.skipif(not DOCS.is_dir(), reason="needs the source tree")
def test_defaults_page_quotes_the_rules():
    # docs/defaults.rst states each default's rule (the docstrings point to
    # its sections): its numbers are the code's.
    text = " ".join((DOCS / "defaults.rst").read_text(encoding="utf-8").split())
    d = AdaptiveDamping(unit=1.0)
    trust = TrustDamping(1e-4, 0.01)
    five = {5: "five"}.get(d.patience, str(d.patience))
    quoted = [
        # damping="adaptive"
        f"more than {d.reject_ratio:g}× worse is undone and λ "
        + ("tripled" if d.increase == 3.0 else f"× {d.increase:g}"),
        f"by less than {_percent(d.stall)} (*slow*)",
        f"by less than {_percent(d.stall_first)} of the first epoch's",
        f"{five} small stalled epochs in a row end the fit",
        f"λ starts at {_strategies.STRUCTURED_INITIAL:g}, decays by "
        f"{_percent(1 - d.decay)} per {_strategies.REFERENCE_ROWS} rows seen",
        f"s/{_strategies.WORK_STEPS} of the stall thresholds",
        f"floor {_strategies.STRUCTURED_STALL_INCREASE:g}-fold",
        f"with the exact step λ starts at {d.lam:g}",
        f"the floor rises {d.stall_increase:g}-fold",
        f"\\tau_0 = \\min({_base._AUTO_TAU_MAX:g}, "
        f"{_base._AUTO_TAU_SAMPLES:g}/n)",
        "shortened (without" if trust.increase == 2.0 else "λ ×",
        f"is divided by {1 / trust.decrease:g} after a step taken as proposed",
        # line_search="auto"
        f"halving, c = {ArmijoLineSearch().c:.0e}".replace("e-0", "e-"),
        # batch_size="auto"
        f"full batch up to {_base._AUTO_STRUCTURED_FULL_BATCH_ROWS} samples "
        f"({_base._AUTO_FULL_BATCH_ROWS} for the squared-error",
        f"else batches of {_base._AUTO_STRUCTURED_ROWS}",
        f"n_outputs ≤ {_base._AUTO_FULL_BATCH_ROWS}``",
        f"``{_base._AUTO_BATCH_ROWS} // K`` samples",
        # tau="auto"
        f"\\tau = \\min({_base._AUTO_TAU_SAMPLES:g}/n, {_base._AUTO_TAU_MAX:g})",
        f"\\tau = \\min({_base._AUTO_TAU_MAX:g}, \\max(10^{{-4}}, "
        f"{_base._AUTO_TAU_MINI_BATCH_SAMPLES:g}/n))",
        # early_stopping="auto"
        f"(at most {_base._WATCH_MAX_ROWS}, at least {_base._WATCH_MIN_ROWS},",
        f"for its first {_base._WATCH_EPOCHS} epochs",
        f"for {_base._WATCH_PATIENCE} epochs in a row",
        f"more than {_percent(_base._WATCH_RISE)} above its minimum "
        f"({_percent(_base._WATCH_RISE_SQUARED)} for the squared error)",
        f"more than {_base._WATCH_GAP:g} times the training risk",
        f"up to {_base._WATCH_MAX_EPOCHS} epochs",
    ]
    assert _base._AUTO_TAU_MINI_BATCH == 1e-4  # (written 10^{-4} above)
    missing = [phrase for phrase in quoted if phrase not in text]
    assert not missing, missing
