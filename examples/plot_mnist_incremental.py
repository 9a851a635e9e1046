"""
Out-of-core training: streaming MNIST through dask-ml's Incremental
===================================================================

Data larger than memory can be trained on chunk by chunk:
``dask_ml.wrappers.Incremental(GGNScoreClassifier(...))`` takes a chunked
``dask.array`` and calls the estimator's ``partial_fit`` on one chunk after
another. Each call runs the mini-batch loop of GGN-SCORE over its chunk
(``batch_size="auto"``: 20 rows for ten classes and 784 features), and the
adaptive damping carries over from one call to the next in the estimator's
solver state, so that a pass over the chunks is an epoch of an ordinary
mini-batch fit (exactly so with ``shuffle=False`` and a fixed damping: see
``tests/test_incremental.py``).

Here the chunks are read lazily from the original IDX files: each task of
the dask graph reads its 6 000 rows (36 MiB as float64) straight from the
file and hands them to ``partial_fit``; the 60 000 training images (360 MiB
as float64) are never in memory at once. The chunks are visited in a random
order each pass (``shuffle_blocks=True``), and the rows of a chunk are
shuffled by the estimator. Prediction on a dask array is chunked too.
Install the ``dask`` extra (``pip install sklearn_ggn[dask]``) for dask-ml.
The synchronous scheduler runs the chain here, one task at a time, so that
a chunk is read only when its ``partial_fit`` runs; with a
``dask.distributed`` client the same code runs on a cluster (the estimator
travels between workers pickled, its solver state with it).

**Data.** As in the MNIST example: ``SKLEARN_GGN_DATA`` names a folder whose
``mnist/`` holds the four IDX files (gzip allowed). Without it the script
streams scikit-learn's bundled 8×8 digits in chunks instead (a stand-in:
the same workflow, numbers not comparable). ``SKLEARN_GGN_QUICK=1`` shrinks
the run to a smoke test.
"""

import gzip
import os
import resource
import struct
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from dask_ml.wrappers import Incremental
from sklearn.datasets import load_digits

from sklearn_ggn import GGNScoreClassifier

QUICK = os.environ.get("SKLEARN_GGN_QUICK") == "1"
folder = Path(os.environ.get("SKLEARN_GGN_DATA", "")) / "mnist"


def idx_path(name):
    for candidate in (folder / name, folder / (name + ".gz")):
        if os.environ.get("SKLEARN_GGN_DATA") and candidate.is_file():
            return candidate
    return None


def read_idx_rows(path, start, stop):
    """Rows ``start:stop`` of an IDX file, reading only those bytes (a
    gzip file is decompressed up to them, in a bounded buffer)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        magic = struct.unpack(">i", handle.read(4))[0]
        n_dims = magic & 0xFF
        shape = struct.unpack(f">{n_dims}i", handle.read(4 * n_dims))
        row = int(np.prod(shape[1:]))
        handle.seek(4 * (1 + n_dims) + start * row)
        data = handle.read((stop - start) * row)
    return np.frombuffer(data, dtype=np.uint8).reshape((stop - start,) + (row,))


@dask.delayed
def load_images(path, start, stop):
    return read_idx_rows(path, start, stop).reshape(stop - start, -1) / 255.0


@dask.delayed
def load_labels(path, start, stop):
    return read_idx_rows(path, start, stop).reshape(-1).astype(np.int64)


def stream(images, labels, n_rows, chunk):
    """Lazy (X, y) dask arrays whose chunks are read from the files."""
    bounds = [(a, min(a + chunk, n_rows)) for a in range(0, n_rows, chunk)]
    X = da.concatenate([da.from_delayed(load_images(images, a, b), (b - a, 784),
                                        dtype=np.float64) for a, b in bounds])
    y = da.concatenate([da.from_delayed(load_labels(labels, a, b), (b - a,),
                                        dtype=np.int64) for a, b in bounds])
    return X, y


files = [idx_path(name) for name in ("train-images-idx3-ubyte",
                                     "train-labels-idx1-ubyte",
                                     "t10k-images-idx3-ubyte",
                                     "t10k-labels-idx1-ubyte")]
if all(files):
    n_train, n_test, chunk = (6000, 2000, 2000) if QUICK else (60000, 10000, 6000)
    X, y = stream(files[0], files[1], n_train, chunk)
    X_test, y_test = stream(files[2], files[3], n_test, chunk)
    n_hidden, n_passes = 128, (1 if QUICK else 2)
else:
    print("MNIST files not found (set SKLEARN_GGN_DATA): streaming the bundled "
          "8x8 digits instead, numbers not comparable.")
    digits_X, digits_y = load_digits(return_X_y=True)
    digits_X = digits_X / 16.0
    X = da.from_array(digits_X[:1400], chunks=(280, 64))
    y = da.from_array(digits_y[:1400], chunks=280)
    X_test, y_test = digits_X[1400:], digits_y[1400:]
    n_hidden, n_passes = 64, (1 if QUICK else 3)
print(f"training data: {X.shape[0]} rows in {X.numblocks[0]} chunks of "
      f"{X.chunks[0][0]} ({X.chunks[0][0] * X.shape[1] * 8 / 2**20:.1f} MiB each; "
      f"{X.nbytes / 2**20:.0f} MiB in all)")

# One task at a time, in the graph's order: read chunk i, partial_fit on it,
# release it. (The threaded default would read chunks ahead on its idle
# thread while partial_fit runs, up to all of them.)
dask.config.set(scheduler="synchronous")
model = Incremental(GGNScoreClassifier(n_hidden=n_hidden, activation="relu",
                                       damping="adaptive", random_state=0),
                    shuffle_blocks=True, random_state=0)
rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
accuracy = []
start = time.perf_counter()
for n in range(n_passes):
    model.partial_fit(X, y, classes=np.arange(10))
    score = float(np.mean(np.asarray(model.predict(X_test)) == np.asarray(y_test)))
    accuracy.append(score)
    est = model.estimator_
    print(f"pass {n + 1}: {est.t_} steps, curvature scale λ_H = "
          f"{est.history_['damping'][-1]:.3g}, test accuracy {score:.4f} "
          f"({time.perf_counter() - start:.1f} s)")
rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - rss_before
print(f"peak resident memory grew by {rss_growth:.0f} MiB during training")

try:
    import matplotlib.pyplot as plt
except ImportError:  # plots are optional
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(np.arange(1, n_passes + 1), accuracy, "o-")
    ax.set_xlabel("pass over the chunks")
    ax.set_ylabel("test accuracy")
    ax.set_title("GGN-SCORE through dask-ml Incremental")
    fig.tight_layout()
    plt.show()
