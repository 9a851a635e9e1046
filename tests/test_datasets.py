"""The real-data loaders: tiny files in the original formats, errors, real data."""

import gzip
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from sklearn_ggn.datasets import load_mnist, load_uci

ROOT = Path(__file__).resolve().parents[1]


def _write(path, text, compress):
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress:
        with gzip.open(str(path) + ".gz", "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)


def _idx_bytes(array):
    """IDX file: magic 2049 (labels) or 2051 (images), big-endian dims."""
    magic = 2051 if array.ndim == 3 else 2049
    header = struct.pack(f">{1 + array.ndim}i", magic, *array.shape)
    return header + array.astype(np.uint8).tobytes()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("SKLEARN_GGN_DATA", raising=False)


@pytest.mark.parametrize("compress", [False, True])
def test_load_pendigits_tiny(tmp_path, compress):
    # Right-aligned integers as in the original files.
    tra = "  0, 89, 27,100" + ", 50" * 12 + ",  8\n" + " 99" + ",  1" * 15 + ",  3\n"
    tes = " 10" + ", 20" * 15 + ",  0\n"
    _write(tmp_path / "pendigits" / "pendigits.tra", tra, compress)
    _write(tmp_path / "pendigits" / "pendigits.tes", tes, compress)
    X, y, X_test, y_test = load_uci("pendigits", tmp_path)
    assert X.shape == (2, 16) and X_test.shape == (1, 16)
    assert X.dtype == np.float64
    np.testing.assert_array_equal(X[0, :4], [0, 89, 27, 100])
    np.testing.assert_array_equal(y, [8, 3])
    np.testing.assert_array_equal(y_test, [0])
    assert y.dtype.kind == "i"


def test_load_avila_tiny(tmp_path):
    row = ",".join(f"{v:.6f}" for v in np.linspace(-1, 1, 10))
    _write(tmp_path / "avila" / "avila-tr.txt", f"{row},A\n{row},Y\n", False)
    _write(tmp_path / "avila" / "avila-ts.txt", f"{row},W\n", True)
    X, y, X_test, y_test = load_uci("avila", data_home=str(tmp_path))
    assert X.shape == (2, 10) and X_test.shape == (1, 10)
    np.testing.assert_allclose(X[1], np.linspace(-1, 1, 10), atol=1e-6)
    assert list(y) == ["A", "Y"] and list(y_test) == ["W"]


def test_load_letter_libsvm_and_raw_give_the_same_split(tmp_path):
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 16, size=(6, 16))
    labels = np.array(list("QAZBMC"))
    raw_text = "".join(f"{lab}," + ",".join(map(str, row)) + "\n"
                       for lab, row in zip(labels, raw, strict=True))
    train_idx, test_idx = [4, 0, 2], [5, 1]

    def libsvm(rows):
        return "".join(
            f"{ord(labels[i]) - ord('A') + 1} "
            + " ".join(f"{j + 1}:{raw[i, j] / 7.5 - 1:.6g}" for j in range(16)
                       if raw[i, j] / 7.5 - 1 != 0)  # LIBSVM omits zeros
            + "\n" for i in rows)

    libsvm_home, raw_home = tmp_path / "a", tmp_path / "b"
    _write(libsvm_home / "letter" / "letter.scale.tr", libsvm(train_idx), True)
    _write(libsvm_home / "letter" / "letter.scale.t", libsvm(test_idx), False)
    _write(raw_home / "letter" / "letter-recognition.data", raw_text, True)
    _write(raw_home / "letter" / "letter_split_train_idx.txt",
           "\n".join(map(str, train_idx)) + "\n", False)
    _write(raw_home / "letter" / "letter_split_test_idx.txt",
           "\n".join(map(str, test_idx)) + "\n", False)
    from_libsvm = load_uci("letter", libsvm_home)
    from_raw = load_uci("letter", raw_home)
    assert from_libsvm[0].shape == (3, 16) and from_libsvm[2].shape == (2, 16)
    for a, b in zip(from_libsvm, from_raw, strict=True):
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, atol=1e-5)
        else:
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(from_libsvm[1], labels[train_idx])
    assert from_libsvm[0].min() >= -1 and from_libsvm[0].max() <= 1


@pytest.mark.parametrize("compress", [False, True])
def test_load_mnist_tiny(tmp_path, compress):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(3, 28, 28))
    test_images = rng.integers(0, 256, size=(2, 28, 28))
    folder = tmp_path / "mnist"
    folder.mkdir()
    files = {"train-images-idx3-ubyte": images,
             "train-labels-idx1-ubyte": np.array([5, 0, 4]),
             "t10k-images-idx3-ubyte": test_images,
             "t10k-labels-idx1-ubyte": np.array([7, 2])}
    for name, array in files.items():
        if compress:
            with gzip.open(folder / (name + ".gz"), "wb") as handle:
                handle.write(_idx_bytes(array))
        else:
            (folder / name).write_bytes(_idx_bytes(array))
    X, y, X_test, y_test = load_mnist(tmp_path)
    assert X.shape == (3, 784) and X_test.shape == (2, 784)
    assert X.dtype == np.uint8
    np.testing.assert_array_equal(X, images.reshape(3, -1))
    np.testing.assert_array_equal(y, [5, 0, 4])
    np.testing.assert_array_equal(y_test, [7, 2])


def test_mnist_bad_magic_is_reported(tmp_path):
    folder = tmp_path / "mnist"
    folder.mkdir()
    for name in ("train-images-idx3-ubyte", "t10k-images-idx3-ubyte"):
        (folder / name).write_bytes(_idx_bytes(np.zeros((1, 28, 28))))
    for name in ("train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"):
        # an image header where a label header belongs
        (folder / name).write_bytes(_idx_bytes(np.zeros((1, 28, 28))))
    with pytest.raises(ValueError, match="magic number 2051, expected 2049"):
        load_mnist(tmp_path)


def test_environment_variable_is_used(tmp_path, monkeypatch):
    row = ",".join(["0.5"] * 10)
    _write(tmp_path / "avila" / "avila-tr.txt", f"{row},A\n", False)
    _write(tmp_path / "avila" / "avila-ts.txt", f"{row},B\n", False)
    monkeypatch.setenv("SKLEARN_GGN_DATA", str(tmp_path))
    X, y, _, y_test = load_uci("avila", download_if_missing=False)
    assert X.shape == (1, 10) and list(y_test) == ["B"]


def test_explicit_data_home_wins_over_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SKLEARN_GGN_DATA", str(tmp_path / "elsewhere"))
    with pytest.raises(FileNotFoundError, match="data_home="):
        load_uci("pendigits", tmp_path)


def test_missing_files_name_the_folder_and_the_files(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        load_uci("avila", tmp_path, download_if_missing=False)
    message = str(info.value)
    assert str(tmp_path / "avila") in message
    assert "avila-tr.txt" in message and "avila-ts.txt" in message
    with pytest.raises(FileNotFoundError, match="letter_split_train_idx.txt"):
        load_uci("letter", tmp_path)
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte"):
        load_mnist(tmp_path)


def test_no_data_and_no_download_names_the_environment_variable():
    with pytest.raises(FileNotFoundError, match="SKLEARN_GGN_DATA") as info:
        load_uci("pendigits", download_if_missing=False)
    assert "pendigits.tra" in str(info.value)
    with pytest.raises(FileNotFoundError, match="SKLEARN_GGN_DATA"):
        load_mnist(download_if_missing=False)


def test_local_folder_without_files_does_not_download(tmp_path, monkeypatch):
    import sklearn.datasets

    def no_download(*args, **kwargs):
        raise AssertionError("fetch_openml must not be called")

    monkeypatch.setattr(sklearn.datasets, "fetch_openml", no_download)
    with pytest.raises(FileNotFoundError):
        load_uci("pendigits", tmp_path, download_if_missing=True)


def test_download_uses_openml_and_the_paper_split(monkeypatch):
    import sklearn.datasets
    from sklearn.utils import Bunch

    calls = []

    def fake_fetch_openml(name, version, **kwargs):
        calls.append((name, version))
        n = 7494 + 3498
        return Bunch(data=np.arange(n * 16, dtype=float).reshape(n, 16),
                     target=np.array([str(i % 10) for i in range(n)]))

    monkeypatch.setattr(sklearn.datasets, "fetch_openml", fake_fetch_openml)
    with pytest.warns(UserWarning, match="splitting at row 7494"):
        X, y, X_test, y_test = load_uci("pendigits")
    assert calls == [("pendigits", 1)]
    assert X.shape == (7494, 16) and X_test.shape == (3498, 16)
    assert y.dtype.kind == "i" and X_test[0, 0] == 7494 * 16


def test_unknown_dataset():
    with pytest.raises(ValueError, match="pendigits"):
        load_uci("iris")


# ---------------------------------------------------------------- real data
# Read at import, before the fixture above clears the variable.
_DATA_HOME = (Path(os.environ["SKLEARN_GGN_DATA"])
              if os.environ.get("SKLEARN_GGN_DATA")
              else ROOT.parent / "shared" / "data")
needs_real_data = pytest.mark.skipif(
    not _DATA_HOME.is_dir(),
    reason="real data: set SKLEARN_GGN_DATA or provide ../shared/data",
)

# Train / test class counts from the data README.
_REAL = {
    "pendigits": (7494, 3498, 16,
                  [780, 779, 780, 719, 780, 720, 720, 778, 719, 719],
                  [363, 364, 364, 336, 364, 335, 336, 364, 336, 336]),
    "letter": (10500, 5000, 16,
               [404, 375, 402, 416, 398, 377, 384, 372, 394, 395, 404, 403, 413,
                456, 404, 419, 419, 407, 389, 428, 434, 402, 391, 410, 426, 378],
               [195, 199, 182, 207, 203, 210, 226, 196, 188, 172, 167, 201, 185,
                178, 179, 206, 189, 190, 185, 197, 207, 183, 176, 204, 184, 191]),
    "avila": (10430, 10437, 10,
              [4286, 5, 103, 352, 1095, 1961, 446, 519, 831, 44, 522, 266],
              [4286, 5, 103, 353, 1095, 1962, 447, 520, 832, 45, 522, 267]),
}


def _counts(labels):
    _, counts = np.unique(labels, return_counts=True)
    return list(counts)


@pytest.mark.slow
@needs_real_data
@pytest.mark.parametrize("name", sorted(_REAL))
def test_real_uci_files(name):
    n_train, n_test, n_features, train_counts, test_counts = _REAL[name]
    X, y, X_test, y_test = load_uci(name, _DATA_HOME, download_if_missing=False)
    assert X.shape == (n_train, n_features)
    assert X_test.shape == (n_test, n_features)
    assert _counts(y) == train_counts and _counts(y_test) == test_counts
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(X_test))
    if name == "letter":
        assert X.min() == -1 and X.max() == 1


@pytest.mark.slow
@needs_real_data
def test_real_mnist_files():
    X, y, X_test, y_test = load_mnist(_DATA_HOME, download_if_missing=False)
    assert X.shape == (60000, 784) and X_test.shape == (10000, 784)
    assert X.dtype == np.uint8
    assert _counts(y) == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851,
                          5949]
    assert _counts(y_test) == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974,
                               1009]
    # the README's normalisation constants
    assert abs(X.mean() / 255 - 0.1307) < 5e-4
    assert abs(X_test.std() / 255 - 0.3105) < 5e-4
