"""GGN-SCORE: regularized Gauss-Newton training of two-layer networks,
as scikit-learn estimators."""

# before the imports: _config names the cache of compiled kernels after it
__version__ = "0.20.0"

from ._estimators import GGNScoreClassifier, GGNScoreRegressor  # noqa: E402
from ._onnx import register_onnx_converters  # noqa: E402
from ._presets import paper_params  # noqa: E402

__all__ = ["GGNScoreClassifier", "GGNScoreRegressor", "paper_params",
           "register_onnx_converters", "__version__"]
