"""
Sparse input: text classification with a HashingVectorizer
==========================================================

``GGNScoreClassifier`` accepts SciPy sparse matrices (CSR, CSC) as
``MLPClassifier`` does, and never densifies them: X enters the network only
through its first layer, whose products are sparse matrix products and whose
contribution to the Gauss-Newton system is computed from the CSR arrays.

The documents are generated here (no download): each of 2 000 documents
mixes words of a Zipf-distributed common vocabulary of 5 000 words with a
few words of its topic (four topics of 200 words each, some shared by two
topics). A ``HashingVectorizer`` with 2¹⁵ features and a
``TfidfTransformer`` turn them into a CSR matrix with about 20 stored
entries a row (0.05 % density); a dense copy would take 2 000 × 2¹⁵ × 8
bytes = 0.5 GiB. The pipeline is compared with ``MLPClassifier`` (Adam) and
``LogisticRegression`` on held-out documents.
"""

import os
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline

from sklearn_ggn import GGNScoreClassifier

rng = np.random.default_rng(0)
common = np.array([f"word{i}" for i in range(5000)])
zipf = 1.0 / np.arange(1, 5001)
zipf /= zipf.sum()
topics = [[f"topic{c}_{i}" for i in range(200)] for c in range(4)]
for c in range(4):  # neighbouring topics share a quarter of their words
    topics[c][:50] = topics[(c + 1) % 4][150:]


def make_documents(n_docs):
    labels = rng.integers(0, 4, n_docs)
    docs = []
    for c in labels:
        words = list(rng.choice(common, rng.integers(10, 25), p=zipf))
        words += list(rng.choice(topics[c], rng.integers(1, 5)))
        rng.shuffle(words)
        docs.append(" ".join(words))
    return docs, labels


# SKLEARN_GGN_QUICK=1 (the test suite's gallery build): a smoke test
n_docs = 300 if os.environ.get("SKLEARN_GGN_QUICK") == "1" else 2000
docs, labels = make_documents(n_docs)
docs_test, labels_test = make_documents(n_docs)
vectorize = [HashingVectorizer(n_features=2**15, alternate_sign=False),
             TfidfTransformer()]
X = make_pipeline(*vectorize).fit_transform(docs)
print(f"X: {type(X).__name__} of shape {X.shape}, {X.nnz / X.shape[0]:.1f} stored "
      f"entries a row ({X.nnz / np.prod(X.shape):.4%} density)")

models = {
    "GGN-SCORE": GGNScoreClassifier(n_hidden=32, max_iter=10, random_state=0),
    "MLPClassifier (adam)": MLPClassifier(hidden_layer_sizes=(32,), max_iter=20,
                                          random_state=0),
    "LogisticRegression": LogisticRegression(max_iter=1000),
}
scores = {}
for name, model in models.items():
    pipeline = make_pipeline(HashingVectorizer(n_features=2**15,
                                               alternate_sign=False),
                             TfidfTransformer(), model)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        pipeline.fit(docs, labels)
    elapsed = time.perf_counter() - start
    scores[name] = pipeline.score(docs_test, labels_test)
    print(f"{name:22s} fit {elapsed:5.2f}s  test accuracy {scores[name]:.3f}")

try:
    import matplotlib.pyplot as plt
except ImportError:  # plots are optional
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.barh(list(scores), list(scores.values()), color=["C0", "C1", "C2"])
    ax.set_xlabel("test accuracy")
    ax.set_xlim(0, 1)
    ax.set_title("Hashed tf-idf features (2¹⁵ columns, sparse)")
    fig.tight_layout()
    plt.show()
