"""The training engine behind the estimators.

The estimators validate data and hyperparameters, then hand the engine a
:class:`Problem` (network, loss, regularizer, data) and a solver configured
once from the hyperparameters; :meth:`Solver.solve` owns the loop and returns
a :class:`SolverResult`. Everything numerical happens here and in the
network's kernels::

    fit → validate → Problem + GGNScoreSolver.solve → Linearization → kernels

This module is a documented seam for research and benchmarks (the
estimators are the stable interface): a step can be reproduced, timed or
varied without an estimator. A :class:`Problem` needs a loss and a
regularizer object; :data:`LOSSES` and :data:`REGULARIZERS` map the
estimators' ``loss`` and ``regularizer`` names to their classes (a
regularizer is built with its μ, a loss without arguments). A new loss is
one numba function of a row of the batch made a loss by
:func:`register_loss`; both the NumPy route and the compiled step then run
it. For profiling,
the public methods of the classes exported here (``Problem.evaluate``,
``Problem.linearize``, ``Linearization.direction``, ``.gram``,
``.factorize``, ``.triangular_solve``, the strategies' ``__call__``,
``TwoLayerNetwork.forward``, ...) are the places a timer may wrap; the
numba kernels below them are private and may change without notice.
"""

from .._losses import LOSSES, register_loss
from .._network import ForwardCache, TwoLayerNetwork
from .._regularizers import REGULARIZERS
from ._linearization import Linearization, StepFailure, cholesky
from ._problem import Batch, Evaluation, Problem
from ._stopping import EarlyStopping, OverfittingRule, OverfittingWatch
from ._solver import (
    GGNScoreSolver,
    GradientDescentSolver,
    Solver,
    SolverResult,
    SolverState,
    choose_linear_solver,
    step_structure,
)
from ._strategies import (
    AdaptiveDamping,
    AdaptiveStepSize,
    ArmijoLineSearch,
    Batching,
    FixedDamping,
    NoImprovement,
    TrustDamping,
    resolve_damping,
)

__all__ = [
    "AdaptiveDamping",
    "AdaptiveStepSize",
    "ArmijoLineSearch",
    "Batch",
    "Batching",
    "EarlyStopping",
    "Evaluation",
    "FixedDamping",
    "ForwardCache",
    "GGNScoreSolver",
    "GradientDescentSolver",
    "LOSSES",
    "Linearization",
    "NoImprovement",
    "OverfittingRule",
    "OverfittingWatch",
    "Problem",
    "REGULARIZERS",
    "Solver",
    "SolverResult",
    "SolverState",
    "StepFailure",
    "TrustDamping",
    "TwoLayerNetwork",
    "choose_linear_solver",
    "cholesky",
    "register_loss",
    "resolve_damping",
    "step_structure",
]
