"""Data generators of the paper."""

import numpy as np
from sklearn.utils import check_random_state

from ._activations import activate

__all__ = ["make_teacher_student"]


def _unit_sphere(rng, n_samples, n_features):
    X = rng.standard_normal((n_samples, n_features))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def make_teacher_student(n_train=500, n_test=1000, n_features=5, n_teacher=5,
                         activation="silu", random_state=None):
    """Teacher-student regression data of the paper (SPEC section 9).

    Inputs are uniform on the unit sphere ``S^{d-1}`` (normalised Gaussians).
    The targets are ``y = Φ*(x) = Σ_{i ≤ n*} v*_i ρ(u*_i · x)`` with unit-norm
    rows ``u*_i`` and ``v*_i = sign(N(0, 1))``, so ``‖v*_i u*_i‖ = 1``.

    Parameters
    ----------
    n_train : int, default=500
        Number of training samples m.
    n_test : int, default=1000
        Number of test samples.
    n_features : int, default=5
        Input dimension d.
    n_teacher : int, default=5
        Hidden units n* of the teacher.
    activation : str, default="silu"
        Teacher activation ρ.
    random_state : int, RandomState instance or None, default=None
        Seed for the teacher and the inputs.

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features)
    y_train : ndarray of shape (n_train,)
    X_test : ndarray of shape (n_test, n_features)
    y_test : ndarray of shape (n_test,)

    Examples
    --------
    >>> from sklearn_ggn.datasets import make_teacher_student
    >>> X, y, X_test, y_test = make_teacher_student(n_train=50, n_test=20,
    ...                                             random_state=0)
    >>> X.shape, y_test.shape
    ((50, 5), (20,))
    """
    rng = check_random_state(random_state)
    teacher_u = _unit_sphere(rng, n_teacher, n_features)
    teacher_v = np.sign(rng.standard_normal(n_teacher))
    teacher_v[teacher_v == 0] = 1.0

    def teacher(X):
        rho, _ = activate(np.ascontiguousarray(X @ teacher_u.T), activation,
                          with_deriv=False)
        return rho @ teacher_v

    X_train = _unit_sphere(rng, n_train, n_features)
    X_test = _unit_sphere(rng, n_test, n_features)
    return X_train, teacher(X_train), X_test, teacher(X_test)
