"""The README's promises: the main job, the quickest example, the CI command."""

import os
import re
import runpy
from pathlib import Path

import pytest

from sklearn_ggn.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


def test_main_job_quick_prints_the_comparison_table(capsys):
    from sklearn_ggn import _config

    cached = _config.kernels_cached()
    main(["--quick"])
    out = capsys.readouterr().out
    # it says whether it compiled or loaded the kernels, and which it did
    assert ("Kernels loaded from the on-disk cache" in out) == cached
    assert ("Compiling the numba kernels" in out) == (not cached)
    for row in ("digits", "diabetes", "teacher-student", "GGN-SCORE", "MLP"):
        assert row in out
    assert "DIVERGED" not in out
    # Every row states its non-default settings beside it.
    rows = {" ".join(line.split()[:2]): line for line in out.splitlines()
            if line.startswith(("digits ", "diabetes ", "teacher-student "))}
    # diabetes runs on the defaults (tau="auto"): only the --quick cap shows
    assert rows["diabetes GGN-SCORE"].split()[-1] == "max_iter=20"
    assert "n_hidden=500, batch_size=None, tau=0.0001" in rows[
        "teacher-student GGN-SCORE"]
    assert "solver='lbfgs'" in rows["teacher-student MLP"]
    assert all("max_iter=" in line for key, line in rows.items()
               if "lbfgs" not in line)  # --quick caps are settings too
    assert "the paper's setting" in out


def test_main_help_documents_every_option(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "module docstring" not in text
    for option in ("--quick", "--seed", "--blas-threads"):
        assert option in text
    assert "threads the BLAS library" in text
    assert "source tree" in text


def test_quickest_example_runs(monkeypatch):
    # The example plots only when matplotlib is installed (an optional extra).
    monkeypatch.setenv("MPLBACKEND", "Agg")
    runpy.run_path(str(ROOT / "examples" / "plot_teacher_student.py"),
                   run_name="__main__")


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.+?)\n```", readme)
    assert len(commands) == 2, "the README's set-up is exactly two commands"
    assert "python -m sklearn_ggn" in commands[0]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci


def test_readme_usage_example_runs():
    readme = (ROOT / "README.md").read_text()
    (code,) = re.findall(r"```python\n(.+?)\n```", readme, flags=re.S)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["search"].score(namespace["X_test"], namespace["y_test"]) > 0.95


# Where the real data are (CI keeps a copy beside the checkout); users point
# SKLEARN_GGN_DATA at their own copy.
_DATA_HOME = (Path(os.environ["SKLEARN_GGN_DATA"])
              if os.environ.get("SKLEARN_GGN_DATA")
              else ROOT.parent / "shared" / "data")


@pytest.mark.slow
@pytest.mark.skipif(not _DATA_HOME.is_dir(), reason="no local copy of the data")
@pytest.mark.parametrize("example, first_line", [
    ("plot_mnist", "MNIST, n = 512"),
    ("plot_uci", "n = 128"),
])
def test_data_examples_read_the_local_data(example, first_line, monkeypatch,
                                           capsys):
    # The offline docs build covers the stand-in path; this is the other one:
    # with SKLEARN_GGN_DATA set the examples use the real files and never
    # fall back (smoke-test scale).
    import sklearn.datasets

    def no_download(*args, **kwargs):
        raise AssertionError("the examples must not download")

    monkeypatch.setattr(sklearn.datasets, "fetch_openml", no_download)
    monkeypatch.setenv("SKLEARN_GGN_DATA", str(_DATA_HOME))
    monkeypatch.setenv("SKLEARN_GGN_QUICK", "1")
    monkeypatch.delenv("SKLEARN_GGN_FULL", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    runpy.run_path(str(ROOT / "examples" / f"{example}.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "stand-in" not in out and "Note: no local" not in out
    assert first_line in out
