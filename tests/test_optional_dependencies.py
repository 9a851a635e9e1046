"""Everything optional stays optional: with skl2onnx, onnx, onnxruntime and
skops made unimportable, the package imports, fits, predicts, pickles and
continues a fit; only register_onnx_converters says what to install."""

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import importlib.abc
    import sys

    BLOCKED = ("skl2onnx", "onnx", "onnxruntime", "skops")

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"No module named {name!r} (blocked)")
            return None

    sys.meta_path.insert(0, Block())

    import pickle
    import warnings

    import numpy as np
    from sklearn.datasets import make_classification

    import sklearn_ggn
    from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor

    warnings.simplefilter("ignore")
    X, y = make_classification(n_samples=120, n_features=5, random_state=0)
    clf = GGNScoreClassifier(n_hidden=6, max_iter=5, random_state=0,
                             class_weight="balanced", early_stopping=True,
                             scoring="loss").fit(X, y)
    clf = pickle.loads(pickle.dumps(clf))
    clf.set_params(warm_start=True).fit(X, y)
    reg = GGNScoreRegressor(loss="huber", n_hidden=6, max_iter=5).fit(X, X[:, 0])
    reg.predict(X)
    try:
        sklearn_ggn.register_onnx_converters()
    except ImportError as exc:
        assert "sklearn_ggn[onnx]" in str(exc), exc
    else:
        raise AssertionError("register_onnx_converters needs skl2onnx")
    assert not any(name.split(".")[0] in BLOCKED for name in sys.modules)
    print("ok")
""")


def test_package_works_without_the_optional_packages():
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")
