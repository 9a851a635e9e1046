"""The README's promises: the main job, the quickest example, the CI command."""

import re
import runpy
from pathlib import Path

from sklearn_ggn.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


def test_main_job_quick_prints_the_comparison_table(capsys):
    main(["--quick"])
    out = capsys.readouterr().out
    for row in ("digits", "diabetes", "teacher-student", "GGN-SCORE", "MLP"):
        assert row in out
    assert "DIVERGED" not in out


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
