"""Conversion of fitted estimators to ONNX through ``skl2onnx``.

The graph is the prediction of ``_raw_output`` and the estimators' ``predict``
written in ONNX operators, for the network's own parameterization
(no ``coefs_``/``intercepts_`` of scikit-learn's MLP are needed):

    Φ(X) = κ ρ(X Uᵀ + b_h) V + b_o

with κ folded into V. The regressor maps Φ back to the units of y,
``Φ · target_scale_ + target_mean_`` (``exp(Φ)`` first for the Poisson
loss); the classifier gives labels and the probabilities of its loss (the
sigmoid of the one logit for two classes, the softmax for several, one
sigmoid per label for multilabel targets).

``skl2onnx`` and ``onnx`` are imported only when the converters are
registered: the package does not depend on them.
"""

import numpy as np

from ._posterior import PosteriorNotStoredError

# the ONNX operator of each activation ρ; silu is a·σ(a) (two operators)
_ACTIVATION_OPS = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid",
                   "softplus": "Softplus", "identity": "Identity"}

_CLASSIFIER_ALIAS = "SklearnGGNScoreClassifier"
# the Clip of the input map takes its bounds as inputs from opset 11 on
MIN_OPSET = 11
_REGRESSOR_ALIAS = "SklearnGGNScoreRegressor"


def register_onnx_converters():
    """Register the estimators' converters with ``skl2onnx``.

    After this call, ``skl2onnx.to_onnx`` converts a fitted
    :class:`~sklearn_ggn.GGNScoreClassifier` or
    :class:`~sklearn_ggn.GGNScoreRegressor`, alone or as a step of a
    :class:`~sklearn.pipeline.Pipeline`. Calling it again does nothing more.
    Needs ``skl2onnx`` (``pip install sklearn_ggn[onnx]``, which also
    installs ``onnxruntime`` to run the converted models).

    The converted regressor has one output, ``variable`` of shape
    (n_samples, n_outputs), the predictions. The classifier has two, as
    scikit-learn's classifiers converted by ``skl2onnx``: ``label`` (the
    predicted class, or for multilabel targets the predicted indicator
    matrix) and ``probabilities`` (a list of dicts by default, a matrix
    with the option ``zipmap=False``). With the option
    ``raw_scores=True`` the second output holds the decision values instead
    of the probabilities: :meth:`~sklearn_ggn.GGNScoreClassifier.decision_function`
    for several classes or labels, ``[-d, d]`` for two classes (``d`` the
    one-dimensional decision value). With ``loss="squared_error"``, which
    has no probabilities, it always holds the decision values.

    The graph computes in the precision of its input (float32 for a
    ``FloatTensorType``, float64 for a ``DoubleTensorType``); in float32,
    predictions agree with the estimator's to float32 round-off.

    Raises
    ------
    ImportError
        When ``skl2onnx`` is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ggn import GGNScoreRegressor, register_onnx_converters
    >>> X = np.random.RandomState(0).standard_normal((50, 3))
    >>> reg = GGNScoreRegressor(n_hidden=8, random_state=0).fit(X, X.sum(axis=1))
    >>> register_onnx_converters()  # doctest: +SKIP
    >>> from skl2onnx import to_onnx  # doctest: +SKIP
    >>> onx = to_onnx(reg, X[:1].astype(np.float32))  # doctest: +SKIP
    """
    try:
        from skl2onnx import update_registered_converter
    except ImportError as exc:
        raise ImportError(
            "Converting sklearn_ggn estimators to ONNX needs skl2onnx: "
            "pip install sklearn_ggn[onnx] (or skl2onnx onnxruntime).") from exc
    from ._estimators import GGNScoreClassifier, GGNScoreRegressor

    update_registered_converter(
        GGNScoreClassifier, _CLASSIFIER_ALIAS, _classifier_shapes,
        _convert_classifier,
        options={"zipmap": [True, False, "columns"], "nocl": [False, True],
                 "output_class_labels": [False, True],
                 "raw_scores": [False, True]})
    update_registered_converter(
        GGNScoreRegressor, _REGRESSOR_ALIAS, _regressor_shapes,
        _convert_regressor)


# ------------------------------------------------------------------ shapes
def _tensor_type(operator):
    """The input's tensor type class (float32 unless the input is float64)."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    return (DoubleTensorType if isinstance(operator.inputs[0].type, DoubleTensorType)
            else FloatTensorType)


def _label_kind(classes):
    """``"int64"`` or ``"string"``: how the labels appear in the graph."""
    classes = np.asarray(classes)
    if classes.dtype.kind in "iub":
        return "int64"
    if classes.dtype.kind == "f" and np.all(classes == np.round(classes)):
        return "int64"
    if classes.dtype.kind in "OUS":
        return "string"
    raise NotImplementedError(
        f"classes_ of dtype {classes.dtype} (non-integral floats) cannot be "
        "ONNX labels: encode the labels as integers or strings.")


def _classifier_shapes(operator):
    from skl2onnx.common.data_types import Int64TensorType, StringTensorType

    est = operator.raw_operator
    N = operator.inputs[0].get_first_dimension()
    n_classes = len(est.classes_)
    label_shape = [N, n_classes] if est._multilabel else [N]
    if est._multilabel or _label_kind(est.classes_) == "int64":
        operator.outputs[0].type = Int64TensorType(shape=label_shape)
    else:
        operator.outputs[0].type = StringTensorType(shape=label_shape)
    operator.outputs[1].type = _tensor_type(operator)(shape=[N, n_classes])


def _regressor_shapes(operator):
    est = operator.raw_operator
    N = operator.inputs[0].get_first_dimension()
    operator.outputs[0].type = _tensor_type(operator)(shape=[N, est.n_outputs_])


# -------------------------------------------------------------- converters
class _Graph:
    """Adds nodes and constants of one dtype to a skl2onnx container."""

    def __init__(self, scope, container, dtype):
        from onnx import TensorProto

        opset = getattr(container, "target_opset", None)
        if opset is not None and opset < MIN_OPSET:
            raise NotImplementedError(
                f"sklearn_ggn's ONNX graphs need opset {MIN_OPSET} or newer (the "
                f"input map's Clip takes its bounds as inputs); got "
                f"target_opset={opset}.")
        self.scope, self.container = scope, container
        self.dtype = np.dtype(dtype)
        self.proto = (TensorProto.DOUBLE if self.dtype == np.float64
                      else TensorProto.FLOAT)

    def name(self, hint):
        return self.scope.get_unique_variable_name(hint)

    def constant(self, hint, value, proto=None, dtype=None):
        value = np.asarray(value, dtype=dtype or self.dtype)
        name = self.name(hint)
        self.container.add_initializer(name, proto or self.proto,
                                       list(value.shape), value.ravel().tolist())
        return name

    def node(self, op_type, inputs, output=None, **attributes):
        output = output or self.name(op_type.lower())
        self.container.add_node(op_type, inputs, output,
                                name=self.scope.get_unique_operator_name(op_type),
                                **attributes)
        return output


def _network_outputs(graph, est, X):
    """Φ(X) of shape (N, K): ``κ ρ(X Uᵀ + b_h) V + b_o``."""
    X = graph.node("Cast", [X], to=graph.proto)
    # the fitted input map writes its own nodes
    X = est._fitted_input_map(est.hidden_weights_.shape[1]).onnx_nodes(graph, X)
    # (the fitted network: its width, activation, κ and biases as fitted)
    network = est._fitted_network(est.hidden_weights_.shape[1],
                                  est.output_weights_.shape[1])
    pre = graph.node("MatMul", [X, graph.constant("U_t", est.hidden_weights_.T)])
    if network.fit_intercept:
        pre = graph.node("Add", [pre, graph.constant("b_h", est.hidden_intercept_)])
    if network.activation == "silu":
        hidden = graph.node("Mul", [pre, graph.node("Sigmoid", [pre])])
    else:
        hidden = graph.node(_ACTIVATION_OPS[network.activation], [pre])
    outputs = graph.node("MatMul", [hidden, graph.constant(
        "kappa_V", network.kappa * est.output_weights_.astype(np.float64))])
    if network.fit_intercept:
        outputs = graph.node("Add", [outputs, graph.constant(
            "b_o", est.output_intercept_)])
    return outputs


def _input_dtype(operator):
    from skl2onnx.common.data_types import DoubleTensorType

    return (np.float64 if isinstance(operator.inputs[0].type, DoubleTensorType)
            else np.float32)


def _convert_regressor(scope, operator, container):
    est = operator.raw_operator
    graph = _Graph(scope, container, _input_dtype(operator))
    outputs = _network_outputs(graph, est, operator.inputs[0].full_name)
    if est._loss_of_fit() == "poisson":
        outputs = graph.node("Exp", [outputs])
    scale = np.asarray(getattr(est, "target_scale_", np.ones(est.n_outputs_)))
    mean = np.asarray(getattr(est, "target_mean_", np.zeros(est.n_outputs_)))
    outputs = graph.node("Mul", [outputs, graph.constant("scale", scale)])
    graph.node("Add", [outputs, graph.constant("mean", mean)],
               output=operator.outputs[0].full_name)


def _has_posterior(est):
    """Whether ``est``'s probit predictive has a posterior to shrink the
    logits by: it has one, or it was loaded from a file saved without it
    (whose ``predict_proba`` then raises rather than give other
    probabilities)."""
    try:
        return est.uncertainty_ is not None
    except PosteriorNotStoredError:
        return True


def _convert_classifier(scope, operator, container):
    from onnx import TensorProto

    est = operator.raw_operator
    graph = _Graph(scope, container, _input_dtype(operator))
    options = scope.get_options(est, dict(raw_scores=False, nocl=False))
    raw_scores = options["raw_scores"]
    if options["nocl"]:
        raise NotImplementedError(
            "The option nocl=True (class indices instead of labels) is not "
            "supported for GGNScoreClassifier: its graph outputs the labels.")
    if (not raw_scores and est.predictive == "probit"
            and _has_posterior(est)):
        raise NotImplementedError(
            "The ONNX graph computes the fitted logits' probabilities; this "
            "classifier's predict_proba is the probit predictive of its "
            "Laplace posterior, which the graph does not hold. Convert it with "
            "predictive='map' (set_params; its predictions are the same) or "
            "with options={'raw_scores': True}.")
    outputs = _network_outputs(graph, est, operator.inputs[0].full_name)
    label_name, scores_name = (operator.outputs[0].full_name,
                               operator.outputs[1].full_name)
    log_loss = est._loss_of_fit() == "log_loss"
    if est._multilabel:
        # predict: the indicator matrix of the outputs above the threshold
        threshold = graph.constant("threshold", 0.0 if log_loss else 0.5)
        above = graph.node("Greater", [outputs, threshold])
        graph.node("Cast", [above], output=label_name, to=TensorProto.INT64)
        if log_loss and not raw_scores:
            graph.node("Sigmoid", [outputs], output=scores_name)
        else:
            graph.node("Identity", [outputs], output=scores_name)
        return

    if len(est.classes_) == 2:
        # the one-dimensional decision value d, as the columns [-d, d]
        if est.output_weights_.shape[1] == 1:
            decision = outputs
        else:  # the squared error's two outputs: d = Φ_1 − Φ_0
            first, second = (graph.node("Slice", [outputs] + [graph.constant(
                hint, value, TensorProto.INT64, np.int64) for hint, value in
                (("start", [c]), ("end", [c + 1]), ("axis", [1]))])
                for c in (0, 1))
            decision = graph.node("Sub", [second, first])
        scores = graph.node("Concat", [graph.node("Neg", [decision]), decision],
                            axis=1)
        probabilities = graph.node("Sigmoid", [scores]) if log_loss else None
    else:
        scores = outputs
        probabilities = graph.node("Softmax", [scores], axis=1) if log_loss else None
    if probabilities is None or raw_scores:
        graph.node("Identity", [scores], output=scores_name)
    else:
        graph.node("Identity", [probabilities], output=scores_name)

    # predict: the class of the largest score (the first of equal ones, as
    # np.argmax; for two classes the second class exactly when d > 0)
    index = graph.node("ArgMax", [scores], axis=1, keepdims=0)
    if _label_kind(est.classes_) == "int64":
        classes = graph.constant("classes", np.asarray(est.classes_).astype(np.int64),
                                 TensorProto.INT64, np.int64)
    else:
        classes = graph.name("classes")
        values = np.array([str(c).encode("utf-8") for c in est.classes_])
        container.add_initializer(classes, TensorProto.STRING, [len(values)],
                                  values.tolist())
    graph.node("Gather", [classes, index], output=label_name, axis=0)
