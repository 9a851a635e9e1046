"""GGN-SCORE: regularized Gauss-Newton training of two-layer networks,
as scikit-learn estimators."""

from ._estimators import GGNScoreClassifier, GGNScoreRegressor

__version__ = "0.1.0"

__all__ = ["GGNScoreClassifier", "GGNScoreRegressor", "__version__"]
