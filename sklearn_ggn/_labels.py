"""The classifier's labels: class weights per row, and labels checked
against the fitted classes."""

import numpy as np
from sklearn.utils.class_weight import compute_class_weight, compute_sample_weight
from sklearn.utils.multiclass import unique_labels


def class_sample_weight(class_weight, Y, classes, multilabel):
    """The rows' factors of ``class_weight`` (None when it is None), for the
    encoded targets ``Y`` (one column of 0/1 for one logit, one-hot rows, or
    a multilabel indicator matrix) of the fitted ``classes``."""
    if class_weight is None:
        return None
    if multilabel:
        if isinstance(class_weight, dict):
            raise ValueError(
                "class_weight for multilabel targets must be 'balanced' or a "
                "list of one dict per label (keys 0 and 1), as for "
                f"RandomForestClassifier; got a dict: {class_weight!r}.")
        if isinstance(class_weight, list) and len(class_weight) != Y.shape[1]:
            raise ValueError(
                f"class_weight has {len(class_weight)} dicts but y has "
                f"{Y.shape[1]} labels: give one dict per label.")
        return _checked(compute_sample_weight(class_weight, Y.astype(np.int64)),
                        class_weight)
    if isinstance(class_weight, list):
        raise ValueError(
            "class_weight as a list of dicts is for multilabel targets; for "
            "one label per sample, give a dict {class label: weight} or "
            "'balanced'.")
    codes = (Y[:, 0] > 0.5).astype(np.intp) if Y.shape[1] == 1 \
        else Y.argmax(axis=1)
    if class_weight == "balanced":
        # the classes present in this call (compute_sample_weight's)
        present = np.unique(codes)
        table = np.zeros(len(classes))
        table[present] = compute_class_weight("balanced", classes=present,
                                              y=codes)
    else:
        # scikit-learn's rule (compute_class_weight): labels that are not
        # classes are allowed when every class has its weight (a class
        # missing from one cross-validation fold)
        names = classes.tolist()
        unknown = [c for c in class_weight if c not in set(names)]
        unweighted = [c for c in names if c not in class_weight]
        if unknown and unweighted:
            raise ValueError(
                f"class_weight has labels that are not classes: {unknown}, "
                f"and no weight for the classes {unweighted} (the classes "
                f"are {names}).")
        table = compute_class_weight(class_weight, classes=classes,
                                     y=classes[codes])
    return _checked(table[codes], class_weight)


def _checked(factor, class_weight):
    """The rows' class-weight factors, or a ValueError naming
    ``class_weight`` when one is negative or not finite."""
    factor = np.asarray(factor, dtype=np.float64)
    if not (np.all(np.isfinite(factor)) and np.all(factor >= 0)):
        raise ValueError(
            "class_weight must give every class a finite, non-negative "
            f"weight; got {class_weight!r}.")
    return factor


def check_labels_known(y, labels, name, present=None):
    """Raise when y has labels not in ``labels`` (``present``: y's own
    labels when already found)."""
    new = np.setdiff1d(unique_labels(y) if present is None else present, labels)
    if len(new):
        raise ValueError(
            f"y has labels not in {name} = {labels}: {new} (each new label "
            "needs its own output; pass all classes to the first call of "
            "partial_fit, or refit).")
