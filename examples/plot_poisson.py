"""
Count targets: the Poisson loss on a teacher-student problem
============================================================

The counts are drawn from a Poisson generalized teacher-student model: the
paper's 5-unit SiLU teacher Φ* on the unit sphere in d = 5 dimensions
(:func:`~sklearn_ggn.datasets.make_teacher_student`) gives the log of the
mean, ``y ~ Poisson(exp(2 Φ*(x)))``, with m = 500 training points.

``GGNScoreRegressor(loss="poisson")`` fits the network output Φ as the log of
the mean (``predict`` returns ``exp(Φ)``), with the Gauss-Newton curvature of
the Poisson deviance, ``Q = diag(s exp(Φ))``. It is compared with the same
network trained by Adam (``MLPRegressor(loss="poisson")``) and with the
log-linear Poisson GLM (``PoissonRegressor``), which cannot represent the
teacher. The score is the mean Poisson deviance of each model's predicted
mean from the *true* test means (0 for a perfect model), and the
deviance from the observed test counts, which also contains the noise.

τ = 1e-2 regularizes the fit: with the exact curvature of a tiny τ
(``damping="tau"``, full batch) a network this large interpolates the noisy
counts (training deviance near 0, test deviance far above the GLM's).
``MLPRegressor`` runs its default 200 Adam epochs (it stops before
converging, which here acts as regularization: with ``max_iter=2000`` its
deviance from the true means was 0.145 instead of 0.036). Both networks
land near each other, about a third of the GLM's deviance.
"""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import PoissonRegressor
from sklearn.metrics import mean_poisson_deviance
from sklearn.neural_network import MLPRegressor

from sklearn_ggn import GGNScoreRegressor
from sklearn_ggn.datasets import make_teacher_student

X, f, X_test, f_test = make_teacher_student(n_train=500, n_test=2000,
                                            n_features=5, random_state=0)
rng = np.random.default_rng(0)
y = rng.poisson(np.exp(2 * f)).astype(float)
mean_test = np.exp(2 * f_test)
y_test = rng.poisson(mean_test).astype(float)
print(f"training counts: mean {y.mean():.2f}, max {y.max():.0f}, "
      f"{np.mean(y == 0):.0%} zeros")

models = {
    "GGN-SCORE (poisson)": GGNScoreRegressor(loss="poisson", n_hidden=100,
                                             tau=1e-2, random_state=0),
    "MLPRegressor (poisson)": MLPRegressor(loss="poisson",
                                           hidden_layer_sizes=(100,),
                                           random_state=0),
    "PoissonRegressor": PoissonRegressor(alpha=1e-4),
}
results = {}
for name, model in models.items():
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        model.fit(X, y)
    elapsed = time.perf_counter() - start
    pred = model.predict(X_test)
    results[name] = pred
    print(f"{name:24s} time={elapsed:5.2f}s  "
          f"deviance from true means={mean_poisson_deviance(mean_test, pred):.4f}  "
          f"from test counts={mean_poisson_deviance(y_test, pred):.4f}")

try:
    import matplotlib.pyplot as plt
except ImportError:  # plots are optional
    plt = None
if plt is not None:
    order = np.argsort(mean_test)[::20]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(mean_test[order], mean_test[order], "k-", lw=1, label="true mean")
    for name, pred in results.items():
        ax.plot(mean_test[order], pred[order], ".", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("true mean exp(2 Φ*(x))")
    ax.set_ylabel("predicted mean")
    ax.set_title("Poisson teacher-student, test points")
    ax.legend()
    fig.tight_layout()
    plt.show()
