"""GGN-SCORE: regularized Gauss-Newton training of two-layer networks,
as scikit-learn estimators."""

from ._estimators import GGNScoreClassifier, GGNScoreRegressor
from ._presets import paper_params

__version__ = "0.2.0"

__all__ = ["GGNScoreClassifier", "GGNScoreRegressor", "paper_params", "__version__"]
