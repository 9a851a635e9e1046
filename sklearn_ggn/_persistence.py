"""Persistence of the estimators: pickle and ``skops.io`` store the
solver's state and the input map as plain numbers, strings and arrays,
and the Laplace posterior only when ``store_posterior=True`` (computed
then); never the training rows it is computed from."""

import copy
import warnings

import numpy as np

from ._inputs import (
    InputMap,
    input_map_from_dict,
    input_map_from_statistics,
    input_map_to_dict,
)
from ._posterior import not_stored
from .engine import AdaptiveDamping, FixedDamping, SolverState, TrustDamping

# The damping strategies a fitted estimator may carry in its solver state,
# by the name its plain-dict form records.
_DAMPING_STRATEGIES = {cls.__name__: cls for cls in
                       (AdaptiveDamping, FixedDamping, TrustDamping)}


def _plain(value):
    """A NumPy scalar as the Python number it holds (other values as they
    are)."""
    return value.item() if isinstance(value, np.generic) else value


def solver_state_to_dict(state):
    """:class:`SolverState` as a dict of numbers, strings and None (the
    damping strategy as its class name and attributes)."""
    plain = {name: _plain(getattr(state, name)) for name in
             ("initial_objective", "best_objective", "n_iter", "n_steps",
              "step_to")}
    # (partial_fit's last step, judged by the next call: an array, which
    # skops and pickle store as such)
    plain["step_from"] = (None if state.step_from is None
                          else np.array(state.step_from))
    damping = state.damping
    if damping is not None:
        if type(damping).__name__ not in _DAMPING_STRATEGIES:
            raise TypeError(f"cannot store the damping strategy "
                            f"{type(damping).__name__} as a plain dict")
        damping = {"strategy": type(damping).__name__,
                   "attributes": {k: _plain(v) for k, v in vars(damping).items()}}
    plain["damping"] = damping
    return plain


def solver_state_from_dict(plain):
    """The :class:`SolverState` stored by :func:`solver_state_to_dict`."""
    plain = dict(plain)
    damping = plain.pop("damping", None)
    if damping is not None:
        strategy = _DAMPING_STRATEGIES[damping["strategy"]]
        restored = strategy.__new__(strategy)
        restored.__dict__.update(damping["attributes"])
        damping = restored
    return SolverState(damping=damping, **plain)


class PersistenceMixin:
    """``__getstate__`` / ``__setstate__`` and copies of the estimators."""

    def __getstate__(self):
        """The state for pickle and ``skops.io``: the solver's state carried
        to the next warm start or ``partial_fit`` (``_solver_state``) as a
        plain dict of numbers and strings, so that a ``skops`` file of a
        fitted estimator names no type but the estimator's own class.

        The Laplace posterior as ``store_posterior`` says when the state is
        taken: True, computed (if not yet) and stored; False, neither the
        posterior nor the training rows it would be computed from (the
        estimator loaded from it raises ``PosteriorNotStoredError``
        when asked for it). A fit without a posterior keeps its reason."""
        cache = self.__dict__.get("_posterior_cache")
        store = getattr(self, "store_posterior", False)
        if store and cache is not None:
            if cache["inputs"] is not None:
                self._posterior()
            elif cache["state"] is None:
                warnings.warn(
                    f"store_posterior=True, but this {type(self).__name__} has "
                    "no posterior to store: it was loaded from a file saved "
                    "without it, and only a refit on the training rows "
                    "computes it again.", UserWarning)
        state = super().__getstate__()
        if not store and cache is not None and (
                cache["inputs"] is not None
                or (cache["state"] or {}).get("_laplace") is not None):
            state = dict(state, _posterior_cache=not_stored())
        solver_state = state.get("_solver_state")
        if isinstance(solver_state, SolverState):
            state = dict(state, _solver_state=solver_state_to_dict(solver_state))
        # (the fitted input map as a plain dict, as the solver's state)
        input_map = state.get("input_map_")
        if isinstance(input_map, InputMap):
            state = dict(state, input_map_=input_map_to_dict(input_map))
        return state

    # Copies take the state as it is (a posterior not yet computed stays so):
    # __getstate__ is for pickle and skops.
    def __copy__(self):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new

    def __setstate__(self, state):
        solver_state = state.get("_solver_state")
        if isinstance(solver_state, dict):
            state = dict(state, _solver_state=solver_state_from_dict(solver_state))
        if "_posterior_state" in state:  # the posterior as older files store it
            state = dict(state)
            state["_posterior_cache"] = {"state": state.pop("_posterior_state"),
                                         "inputs": None}
            state.pop("_posterior_inputs", None)
        if "compute_dtype" not in state:  # files written before the parameter
            state = dict(state, compute_dtype="auto")
        if "store_posterior" not in state:
            # files written before the parameter hold the posterior computed:
            # saved again, they keep it
            posterior = (state.get("_posterior_cache") or {}).get("state") or {}
            state = dict(state, store_posterior=posterior.get("_laplace")
                         is not None)
        input_map = state.get("input_map_")
        if isinstance(input_map, dict):
            state = dict(state, input_map_=input_map_from_dict(input_map))
        elif "input_center_" in state:  # the map as its statistics alone
            state = dict(state)
            state["input_map_"] = input_map_from_statistics(
                state.pop("input_center_"), state.pop("input_scale_", None),
                state.get("n_features_in_"))
        super().__setstate__(state)
