"""Data of the paper: the teacher-student generator and the real benchmarks.

The real-data loaders (:func:`load_uci`, :func:`load_mnist`) read local
copies of the original files from ``data_home``, which defaults to the folder
named by the environment variable ``SKLEARN_GGN_DATA``; only without either
do they download from OpenML, and never with ``download_if_missing=False``.
"""

import gzip
import os
import struct
import warnings
from pathlib import Path

import numpy as np
from sklearn.utils import check_random_state

from ._activations import activate

__all__ = ["load_mnist", "load_uci", "make_teacher_student"]


def _unit_sphere(rng, n_samples, n_features):
    X = rng.standard_normal((n_samples, n_features))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def make_teacher_student(n_train=500, n_test=1000, n_features=5, n_teacher=5,
                         activation="silu", random_state=None):
    """Teacher-student regression data of the paper.

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
        Training inputs on the unit sphere.
    y_train : ndarray of shape (n_train,)
        The teacher's outputs on ``X_train`` (noise-free).
    X_test : ndarray of shape (n_test, n_features)
        Test inputs, drawn as ``X_train``.
    y_test : ndarray of shape (n_test,)
        The teacher's outputs on ``X_test``.

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


# --------------------------------------------------------------------------
# Real benchmark data: the UCI sets of the paper's appendix and MNIST.
# --------------------------------------------------------------------------

DATA_ENV_VAR = "SKLEARN_GGN_DATA"

# Per dataset: the local files (in a subfolder named like the dataset, plain
# or with ".gz"), the reference train / test sizes (the paper's Table of UCI
# datasets, the data README) and the OpenML fallback.
_LOCAL_FILES = {
    "pendigits": ["pendigits.tra", "pendigits.tes"],
    "letter": ["letter.scale.tr", "letter.scale.t"],
    "avila": ["avila-tr.txt", "avila-ts.txt"],
    "mnist": ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
              "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"],
}
# letter may instead be rebuilt from the raw UCI file and the split indices.
_LETTER_RAW_FILES = ["letter-recognition.data", "letter_split_train_idx.txt",
                     "letter_split_test_idx.txt"]
_SPLIT_SIZES = {"pendigits": (7494, 3498), "letter": (10500, 5000),
                "avila": (10430, 10437), "mnist": (60000, 10000)}
_OPENML = {"pendigits": ("pendigits", 1), "letter": ("letter", 1),
           "avila": ("avila", 1), "mnist": ("mnist_784", 1)}
_LETTERS = np.array([chr(ord("A") + i) for i in range(26)])


def _find(folder, filename):
    """``folder/filename`` or ``folder/filename.gz``, whichever exists."""
    for candidate in (folder / filename, folder / (filename + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def _open_text(path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="ascii")
    return open(path, encoding="ascii")


def _open_binary(path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _numbered_lines(path):
    """``(line number, stripped line)`` of the non-blank lines of a text file."""
    with _open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.strip()
            if line:
                yield line_number, line


def _read_csv_rows(path, n_features):
    """Comma-separated rows: ``n_features`` numbers, then the label."""
    features, labels = [], []
    for line_number, line in _numbered_lines(path):
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != n_features + 1:
            raise ValueError(
                f"{path}, line {line_number}: expected {n_features + 1} "
                f"comma-separated fields, found {len(fields)}."
            )
        features.append([float(field) for field in fields[:-1]])
        labels.append(fields[-1])
    return np.asarray(features, dtype=np.float64).reshape(-1, n_features), labels


def _read_libsvm(path, n_features):
    """Dense rows of a LIBSVM file (``label idx:value ...``, 1-based idx)."""
    X, labels = [], []
    for line_number, line in _numbered_lines(path):
        fields = line.split()
        row = np.zeros(n_features)
        for item in fields[1:]:
            index, _, value = item.partition(":")
            index = int(index)
            if not 1 <= index <= n_features:
                raise ValueError(f"{path}, line {line_number}: feature index "
                                 f"{index} outside 1..{n_features}.")
            row[index - 1] = float(value)
        X.append(row)
        labels.append(int(float(fields[0])))
    return np.asarray(X, dtype=np.float64).reshape(-1, n_features), np.asarray(labels)


def _read_idx(path, expected_magic):
    """An IDX file (big-endian header, uint8 payload) as an array."""
    with _open_binary(path) as handle:
        data = handle.read()
    n_dims = {2049: 1, 2051: 3}[expected_magic]
    header_size = 4 * (1 + n_dims)
    if len(data) < header_size:
        raise ValueError(f"{path} is too short for an IDX header.")
    magic, *shape = struct.unpack(f">{1 + n_dims}i", data[:header_size])
    if magic != expected_magic:
        raise ValueError(f"{path}: IDX magic number {magic}, expected "
                         f"{expected_magic}.")
    payload = np.frombuffer(data, dtype=np.uint8, offset=header_size)
    if payload.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header announces shape {tuple(shape)} but the "
                         f"file holds {payload.size} values.")
    return payload.reshape(shape)


def _read_letter(folder):
    tr, te = (_find(folder, name) for name in _LOCAL_FILES["letter"])
    if tr is not None and te is not None:
        X_train, y_train = _read_libsvm(tr, 16)
        X_test, y_test = _read_libsvm(te, 16)
        if y_train.min() < 1 or max(y_train.max(), y_test.max()) > 26:
            raise ValueError("letter labels must be 1..26 (A..Z).")
        return X_train, _LETTERS[y_train - 1], X_test, _LETTERS[y_test - 1]
    raw, train_idx, test_idx = (_find(folder, name) for name in _LETTER_RAW_FILES)
    # The raw UCI file has the label first, then 16 integers in 0..15.
    features, labels = [], []
    with _open_text(raw) as handle:
        for line in handle:
            fields = line.strip().split(",")
            if len(fields) == 17:
                labels.append(fields[0])
                features.append([float(field) for field in fields[1:]])
    # LIBSVM's letter.scale is raw / 7.5 - 1 (into [-1, 1]): same numbers as
    # the LIBSVM files the paper's code reads.
    X = np.asarray(features) / 7.5 - 1.0
    y = np.asarray(labels)
    with _open_text(train_idx) as handle:
        train = np.loadtxt(handle, dtype=int, ndmin=1)
    with _open_text(test_idx) as handle:
        test = np.loadtxt(handle, dtype=int, ndmin=1)
    return X[train], y[train], X[test], y[test]


def _read_local(name, folder):
    if name == "pendigits":
        paths = [_find(folder, f) for f in _LOCAL_FILES[name]]
        X_train, y_train = _read_csv_rows(paths[0], 16)
        X_test, y_test = _read_csv_rows(paths[1], 16)
        return (X_train, np.asarray(y_train, dtype=np.int64),
                X_test, np.asarray(y_test, dtype=np.int64))
    if name == "avila":
        paths = [_find(folder, f) for f in _LOCAL_FILES[name]]
        X_train, y_train = _read_csv_rows(paths[0], 10)
        X_test, y_test = _read_csv_rows(paths[1], 10)
        return X_train, np.asarray(y_train), X_test, np.asarray(y_test)
    if name == "letter":
        return _read_letter(folder)
    images_tr, labels_tr, images_te, labels_te = (
        _find(folder, f) for f in _LOCAL_FILES["mnist"])
    X_train = _read_idx(images_tr, 2051)
    X_test = _read_idx(images_te, 2051)
    y_train = _read_idx(labels_tr, 2049).astype(np.int64)
    y_test = _read_idx(labels_te, 2049).astype(np.int64)
    for X, y, kind in ((X_train, y_train, "train"), (X_test, y_test, "test")):
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"MNIST {kind}: {X.shape[0]} images but "
                             f"{y.shape[0]} labels.")
    return (X_train.reshape(X_train.shape[0], -1), y_train,
            X_test.reshape(X_test.shape[0], -1), y_test)


def _has_local_files(name, folder):
    if all(_find(folder, f) is not None for f in _LOCAL_FILES[name]):
        return True
    return name == "letter" and all(_find(folder, f) is not None
                                    for f in _LETTER_RAW_FILES)


def _expected_files_message(name):
    files = " and ".join(f"'{f}[.gz]'" for f in _LOCAL_FILES[name])
    message = f"'{name}/' holding {files}"
    if name == "letter":
        message += (" (or the raw UCI '" + "', '".join(_LETTER_RAW_FILES)
                    + "' to rebuild the same split)")
    return message


def _fetch_openml_split(name):
    """The OpenML copy, cut into the paper's train / test split if possible."""
    from sklearn.datasets import fetch_openml

    openml_name, version = _OPENML[name]
    bunch = fetch_openml(openml_name, version=version, as_frame=False,
                         parser="liac-arff" if name == "mnist" else "auto")
    X = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target)
    n_train, n_test = _SPLIT_SIZES[name]
    if name == "letter":
        # The LIBSVM 10500 / 5000 split cannot be recovered without its index
        # files; use the split of the UCI documentation instead.
        warnings.warn(
            "OpenML's letter has no train/test split; using the UCI "
            "documentation's split (first 16000 rows / last 4000), not the "
            "LIBSVM 10500 / 5000 split of the paper. Set "
            f"{DATA_ENV_VAR} to a folder with the LIBSVM files for the "
            "paper's split.", UserWarning)
        X = X / 7.5 - 1.0  # the LIBSVM scaling of the paper's code
        return X[:16000], y[:16000].astype(str), X[16000:], y[16000:].astype(str)
    if X.shape[0] != n_train + n_test:
        raise ValueError(
            f"OpenML's {openml_name} (version {version}) has {X.shape[0]} rows, "
            f"not the {n_train} + {n_test} of the original train and test files; "
            f"set {DATA_ENV_VAR} to a folder with the original files instead."
        )
    if name != "mnist":
        warnings.warn(
            f"OpenML's {openml_name} is one table: assuming its rows are the "
            f"original training file followed by the test file and splitting "
            f"at row {n_train}. Set {DATA_ENV_VAR} to a folder with the original "
            f"files to be sure of the paper's split.", UserWarning)
    if name == "mnist":
        X = X.astype(np.uint8)
        y = y.astype(np.int64)
    elif name == "pendigits":
        y = y.astype(np.int64)
    else:
        y = y.astype(str)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _load(name, data_home, download_if_missing):
    source = None
    if data_home is not None:
        source = f"data_home={str(data_home)!r}"
    elif os.environ.get(DATA_ENV_VAR):
        data_home = os.environ[DATA_ENV_VAR]
        source = f"the environment variable {DATA_ENV_VAR}={data_home!r}"
    if data_home is not None:
        folder = Path(data_home).expanduser() / name
        if not _has_local_files(name, folder):
            raise FileNotFoundError(
                f"No {name} data in {folder} (from {source}). Expected a "
                f"subfolder {_expected_files_message(name)}."
            )
        return _read_local(name, folder)
    if download_if_missing:
        return _fetch_openml_split(name)
    raise FileNotFoundError(
        f"No local {name} data: pass data_home or set the environment variable "
        f"{DATA_ENV_VAR} to a folder containing "
        f"{_expected_files_message(name)}, or allow download_if_missing=True "
        f"to fetch OpenML's {_OPENML[name][0]!r}."
    )


def load_uci(name, data_home=None, *, download_if_missing=True):
    """Load a UCI benchmark of the paper's appendix with the paper's split.

    The paper compares GGN-SCORE with gradient descent on pendigits, letter
    and avila (its Table of UCI datasets). The data are read from local
    copies of the original files, looked up in this order:

    1. ``data_home``, when given;
    2. else the folder named by the environment variable ``SKLEARN_GGN_DATA``;
    3. else, with ``download_if_missing=True``, scikit-learn's
       :func:`sklearn.datasets.fetch_openml` (``pendigits`` version 1,
       ``letter`` version 1, ``avila`` version 1);
    4. else a :class:`FileNotFoundError`.

    A local folder holds one subfolder per dataset with the original file
    names, each plain or gzip-compressed (``.gz``):

    - ``pendigits/pendigits.tra``, ``pendigits/pendigits.tes`` (UCI);
    - ``letter/letter.scale.tr``, ``letter/letter.scale.t`` (the LIBSVM
      split the paper's code reads), or instead
      ``letter/letter-recognition.data`` (UCI) with the index files
      ``letter_split_train_idx.txt`` and ``letter_split_test_idx.txt``
      (0-based rows of the UCI file, one per line), from which the same
      split and scaling are rebuilt;
    - ``avila/avila-tr.txt``, ``avila/avila-ts.txt`` (UCI).

    A local folder that lacks the files is an error, not a reason to
    download.

    Parameters
    ----------
    name : {"pendigits", "letter", "avila"}
        The dataset.
    data_home : str or path-like, default=None
        Folder with one subfolder per dataset, see above. ``None``: the
        folder named by ``SKLEARN_GGN_DATA`` when it is set (and not empty).
    download_if_missing : bool, default=True
        Without ``data_home`` and ``SKLEARN_GGN_DATA``, fetch the dataset from
        OpenML (and cache it in scikit-learn's data home). With ``False`` the
        loader never touches the network: no local data is a
        :class:`FileNotFoundError`, which code that must run offline can
        catch to fall back to other data.

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features)
        Training inputs, float64, as stored in the files: pendigits integers
        in 0..100, letter scaled to [-1, 1] (``raw / 7.5 - 1``, as LIBSVM's
        ``letter.scale``), avila already z-normalized.
    y_train : ndarray of shape (n_train,)
        Training labels: int 0..9 (pendigits), str ``"A"``..``"Z"`` (letter),
        str copyist ``"A"``..``"Y"`` (avila).
    X_test : ndarray of shape (n_test, n_features)
        Test inputs.
    y_test : ndarray of shape (n_test,)
        Test labels.

    Notes
    -----
    Sizes (train / test / features / classes): pendigits 7494 / 3498 / 16 /
    10, letter 10500 / 5000 / 16 / 26, avila 10430 / 10437 / 10 / 12 (the
    paper lists 11 inputs for avila: the files' 10 features and the label).

    OpenML holds each dataset as one table: pendigits and avila are cut
    after their first 7494 / 10430 rows (the paper's split if OpenML kept
    the files' order), letter into the UCI documentation's first 16000 /
    last 4000 rows; a warning says so.

    Examples
    --------
    >>> from sklearn_ggn.datasets import load_uci
    >>> X_train, y_train, X_test, y_test = load_uci(
    ...     "pendigits", data_home="path/to/data")  # doctest: +SKIP
    >>> X_train.shape, X_test.shape  # doctest: +SKIP
    ((7494, 16), (3498, 16))
    """
    if name not in ("pendigits", "letter", "avila"):
        raise ValueError(f"name must be one of 'pendigits', 'letter', 'avila'; "
                         f"got {name!r}.")
    return _load(name, data_home, download_if_missing)


def load_mnist(data_home=None, *, download_if_missing=True):
    """Load MNIST with its original 60000 / 10000 train / test split.

    The files are looked up as in :func:`load_uci`: ``data_home``, else the
    environment variable ``SKLEARN_GGN_DATA``, else (with
    ``download_if_missing=True``) OpenML's ``mnist_784`` version 1, whose
    first 60000 rows are the original training set and last 10000 the test
    set, else a :class:`FileNotFoundError`. A local folder holds ``mnist/``
    with the original IDX files ``train-images-idx3-ubyte``,
    ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte`` and
    ``t10k-labels-idx1-ubyte``, each plain or gzip-compressed (``.gz``).

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder holding the ``mnist/`` subfolder; ``None`` means the folder
        named by the environment variable ``SKLEARN_GGN_DATA`` when it is set.
    download_if_missing : bool, default=True
        Without ``data_home`` and ``SKLEARN_GGN_DATA``, fetch from OpenML.
        With ``False`` the loader never touches the network (no local data
        is a :class:`FileNotFoundError`).

    Returns
    -------
    X_train : ndarray of shape (60000, 784), dtype uint8
        Training images, row-major 28 × 28 pixels in 0..255 (0 is background).
        Divide by 255 for the [0, 1] scaling of the paper's code.
    y_train : ndarray of shape (60000,), dtype int64
        Training digits 0..9.
    X_test : ndarray of shape (10000, 784), dtype uint8
        Test images.
    y_test : ndarray of shape (10000,), dtype int64
        Test digits.

    Examples
    --------
    >>> from sklearn_ggn.datasets import load_mnist
    >>> X_train, y_train, X_test, y_test = load_mnist(
    ...     data_home="path/to/data")  # doctest: +SKIP
    >>> X_train.shape, X_test.shape  # doctest: +SKIP
    ((60000, 784), (10000, 784))
    >>> X_train = X_train / 255.0  # doctest: +SKIP
    """
    return _load("mnist", data_home, download_if_missing)
