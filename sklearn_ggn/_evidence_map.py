"""``input_transform="auto"`` in a full batch: the Laplace evidence chooses.

A fresh full-batch fit that climbs the evidence (``tau="auto"`` or
``"evidence"``: the regressors of up to ``AUTO_FULL_BATCH_ROWS`` rows) has
no held-out rows to compare maps on, but it has the log evidence of its
fitted network, the quantity its τ was chosen by. Both maps are fitted, each
as a fit of its own (the same seed, its own τ path), and the map whose
chosen fit has the higher log evidence is kept: bit for bit the fit that
``input_transform`` set to that map gives. The plain map wins ties and is
kept alone when the encoded one adds no column or too many
(``AUTO_MAP_MAX_WIDTH``), or when its evidence path did not run.
"""

import numpy as np

from . import _plan
from ._inputs import AUTO_MAP_CANDIDATES
from ._plan import Phase
from ._watch import _caught, _raise, phase_seed, richer_map


def fit_chosen(est, data, incremental, validation):
    """Fit ``est`` by :func:`fit_by_evidence` and return True when its
    ``input_transform="auto"`` is chosen by the evidence: a fresh
    full-batch ``fit`` without validation rows whose τ climbs the evidence;
    else return False (nothing fitted)."""
    if (est.input_transform != "auto" or incremental or validation is not None
            or (est.warm_start and hasattr(est, "hidden_weights_"))
            or est.__dict__.get("_skl_callbacks")):
        return False
    summary = est._summary(data.X, data.Y.shape[1], data.sample_weight, 1.0, False)
    plan = _plan.plan_fit(est.get_params(deep=False), summary, warn=False)
    if not (plan.full_batch and plan.evidence_path
            and (_plan.watches(est.early_stopping) or not est.early_stopping)):
        return False
    fit_by_evidence(est, data)
    return True


def fit_by_evidence(est, data):
    """Fit ``est`` on ``data`` (:class:`TrainingData`) with each candidate
    map and keep the fit of higher log evidence; records the choice in
    ``tau_path_["input_transform"]``."""
    plain, richer = AUTO_MAP_CANDIDATES
    phase = Phase(seed=phase_seed(est), continues=False)
    plain_warnings, richer_warnings = [], []
    kept = plain_warnings
    # (the kept fit's warnings are raised once it is kept; a fit left by an
    # exception, a Ctrl-C, raises none)
    try:
        est._map_candidate = plain
        with _caught(plain_warnings):
            est._fit_phase(data, False, None, phase)
        values = {plain: _log_evidence(est)}
        if np.isfinite(values[plain]) and richer_map(est, data) is not None:
            state = est.__dict__.copy()
            est._map_candidate = richer
            with _caught(richer_warnings):
                est._fit_phase(data, False, None, phase)
            values[richer] = _log_evidence(est)
            if values[richer] > values[plain]:
                kept = richer_warnings
            else:
                est.__dict__.clear()
                est.__dict__.update(state)
        if est.verbose:
            print("input_transform='auto': log evidence "
                  + ", ".join(f"{k} {v:.6g}" for k, v in values.items())
                  + f"; keeping {est.input_transform_!r}.")
    finally:
        est.__dict__.pop("_map_candidate", None)
    for w in kept:
        _raise(w)
    est.tau_path_["input_transform"] = {"chosen": est.input_transform_,
                                        "log_evidence": values}


def _log_evidence(est):
    """The log evidence of the fit kept by the evidence path (units of the
    trained network), ``-inf`` when the path did not run."""
    climb = (est.tau_path_ or {}).get("evidence_path")
    if climb is None:
        return -np.inf
    return float(climb["log_evidence"][climb["chosen"]])
