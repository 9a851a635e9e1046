"""The full-scale paper runner (``benchmarks/paper.py``) at smoke scale: it
runs, resumes where it stopped, and reports; its T-I measure is a direct
count of sign agreements; ``paper_params(experiment=...)`` builds every
experiment's estimator."""

import json
import re

import numpy as np
import pytest

from sklearn_ggn import GGNScoreClassifier, GGNScoreRegressor, paper_params
from sklearn_ggn.diagnostics import cardcal, time_invariance

paper = pytest.importorskip("benchmarks.paper")


def _ids(path):
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def test_runner_resumes_and_reports(tmp_path, monkeypatch):
    # without --full (or with --out) the documentation's tables stay as they are
    monkeypatch.setattr(paper, "write_rst", lambda *args, **kwargs: pytest.fail(
        "wrote the documentation's tables"))
    out = tmp_path / "paper_quick.jsonl"
    args = ["--quick", "--only", "fig1_tau", "fig2", "--out", str(out)]
    assert paper.main(args + ["--max-runs", "3"]) == 0
    first = _ids(out)
    assert len(first) == 3
    assert paper.main(args + ["--max-runs", "2"]) == 0
    second = _ids(out)
    # the first three are kept, the next two are new ones (nothing re-run)
    assert second[:3] == first and len(set(second)) == 5
    planned = [r["id"] for r in paper.plan("quick") if r["exp"] in ("fig1_tau", "fig2")]
    assert second == planned[:5]  # in the plan's order
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["runs_done"] == 5
    assert summary["runs_pending"] == len(planned) - 5 + sum(
        1 for r in paper.plan("quick") if r["exp"] not in ("fig1_tau", "fig2"))
    assert "Deviations" in out.with_suffix(".md").read_text()
    line = json.loads(out.read_text().splitlines()[0])
    assert np.isfinite(line["test_loss"]) and line["wall_s"] >= 0


def test_two_processes_share_the_pending_runs(tmp_path, monkeypatch):
    # one takes them from the first, one (--reverse) from the last; --merge
    # adds what the results file lacks, each run once
    monkeypatch.setattr(paper, "write_rst", lambda *args, **kwargs: None)
    only = ["--quick", "--only", "fig2"]
    planned = [r["id"] for r in paper.plan("quick") if r["exp"] == "fig2"]
    assert len(planned) >= 3
    a, b, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "out.jsonl"
    assert paper.main(only + ["--out", str(a), "--max-runs", "2"]) == 0
    assert paper.main(only + ["--out", str(b), "--max-runs", "2",
                              "--reverse"]) == 0
    assert _ids(a) == planned[:2] and _ids(b) == planned[::-1][:2]
    out.write_text(a.read_text().splitlines()[0] + "\n")
    assert paper.main(only + ["--out", str(out), "--merge", str(a), str(b)]) == 0
    merged = _ids(out)
    assert merged == [planned[0], planned[1], planned[-1], planned[-2]] or (
        len(planned) == 3 and merged == planned[:2] + [planned[-1]])
    assert paper.main(only + ["--out", str(out), "--merge", str(b)]) == 0
    assert _ids(out) == merged  # nothing twice


def test_report_writes_the_documentation_tables(tmp_path):
    docutils_core = pytest.importorskip("docutils.core")
    out = tmp_path / "paper_quick.jsonl"
    assert paper.main(["--quick", "--only", "fig1_tau", "fig2", "--out", str(out),
                       "--max-runs", "4", "--rst-dir", str(tmp_path / "rst")]) == 0
    written = sorted(p.stem for p in (tmp_path / "rst").glob("*.rst"))
    assert written == sorted(paper.RST_TABLES)
    for name in paper.RST_TABLES:
        text = (tmp_path / "rst" / f"{name}.rst").read_text(encoding="utf-8")
        # valid reStructuredText: any warning of docutils raises
        docutils_core.publish_doctree(text, settings_overrides={
            "report_level": 2, "halt_level": 2, "warning_stream": False})
    fig1 = (tmp_path / "rst" / "fig1_tau.rst").read_text(encoding="utf-8")
    assert ".. list-table:: fig1_tau" in fig1 and "iterations" in fig1
    assert "No run" in (tmp_path / "rst" / "table2.rst").read_text(encoding="utf-8")


def test_rst_numbers():
    assert [paper._rst_number(v) for v in (None, 0, 3.4e-4, 0.0486, 21.14, 915.8,
                                           1395.2, 16605.0, float("nan"))] == [
        "-", "0", "3.40e-4", "0.0486", "21.1", "916", "1395", "16605", "n/a"]
    assert [paper._rst_grid(v) for v in (1e-6, 1e-4, 0.00125893, 10.0, 1000.0)] == [
        "1e-06", "0.0001", "0.00126", "10", "1000"]


def test_docs_page_includes_every_generated_table():
    docs = paper.REPO_DIR / "docs"
    if not (docs / "reproducing.rst").is_file():
        pytest.skip("needs the source tree")
    page = (docs / "reproducing.rst").read_text(encoding="utf-8")
    included = re.findall(r"^\.\. include:: _paper/(\w+)\.rst$", page, re.M)
    assert sorted(included) == sorted(paper.RST_TABLES)
    assert all((paper.DOCS_TABLES / f"{name}.rst").is_file()
               for name in paper.RST_TABLES)
    # the fragments are not pages of their own
    assert '"_paper"' in (docs / "conf.py").read_text(encoding="utf-8")


def test_full_plan_covers_the_paper():
    runs = paper.plan("full")
    assert len({r["id"] for r in runs}) == len(runs)
    by_exp = {}
    for r in runs:
        by_exp.setdefault((r["exp"], r["variant"]), []).append(r)
    # Figure 1: 41 values x 10 runs for the paper's step
    assert len(by_exp["fig1_mu", "paper"]) == 410
    assert len(by_exp["fig1_tau", "paper"]) == 410
    # Figures 3-4: 7 values each, both curvature conventions
    assert len(by_exp["mnist_mu", "authors"]) == 7
    assert len(by_exp["mnist_tau", "paper"]) == 7
    # Table 2: every dataset, GD and GGN-SCORE, several seeds
    table = by_exp["table2", "table"]
    assert {(r["data"], r["method"]) for r in table} == {
        (d, m) for d in ("pendigits", "letter", "avila") for m in ("ggn", "gd")}
    assert len(table) == 18
    assert [r["tier"] for r in runs] == sorted(r["tier"] for r in runs)


def _tiny_fit(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((30, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(30) > 0).astype(int)
    params = paper_params("authors", experiment="pendigits")
    params.update(n_hidden=6, max_iter=3, batch_size=8, random_state=seed,
                  store_initial_weights=True)
    return GGNScoreClassifier(**params).fit(X, y), X


def _direct_count(U0, U, X, zero_as_unchanged=False):
    """Count sign agreements of a_ki = Σ_j U_ij x_kj entry by entry."""
    same = 0
    for x in X:
        for u0, u in zip(U0, U, strict=True):
            start = sum(float(a) * float(b) for a, b in zip(u0, x, strict=True))
            end = sum(float(a) * float(b) for a, b in zip(u, x, strict=True))
            sign = (start > 0) - (start < 0), (end > 0) - (end < 0)
            same += sign[0] == sign[1] or (zero_as_unchanged and end == 0)
    return 100.0 * same / (len(X) * len(U))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_time_invariance_is_the_direct_count():
    est, X = _tiny_fit()
    U0 = est.initial_weights_["hidden_weights"]
    assert time_invariance(est, X) == pytest.approx(
        _direct_count(U0, est.hidden_weights_, X), abs=1e-12)
    # a unit whose weights end at exactly 0: its pre-activations end at 0
    est.hidden_weights_ = est.hidden_weights_.copy()
    est.hidden_weights_[2] = 0.0
    assert time_invariance(est, X) == pytest.approx(
        _direct_count(U0, est.hidden_weights_, X))
    with_zero = time_invariance(est, X, zero_as_unchanged=True)
    assert with_zero == pytest.approx(
        _direct_count(U0, est.hidden_weights_, X, zero_as_unchanged=True))
    assert with_zero - time_invariance(est, X) == pytest.approx(100 / 6)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_authors_column_adds_the_growth_of_zeros_of_u():
    est, X = _tiny_fit(1)
    U0 = est.initial_weights_["hidden_weights"]
    est.hidden_weights_ = est.hidden_weights_.copy()
    est.hidden_weights_[:, 0] = 0.0
    grown = max((U0.size - cardcal(est.hidden_weights_.ravel()))
                - (U0.size - cardcal(U0.ravel())), 0)
    measured = paper._stability(est, X)
    assert measured["ti"] == pytest.approx(time_invariance(est, X))
    assert measured["ti_authors"] - measured["ti"] == pytest.approx(
        100 * grown / (X.shape[0] * U0.shape[0]))


@pytest.mark.parametrize("experiment", ["synthetic", "synthetic_gd", "mnist",
                                        "mnist_teacher_student", "pendigits",
                                        "letter", "avila"])
def test_paper_params_experiments_build_estimators(experiment):
    params = paper_params(experiment=experiment)
    cls = GGNScoreRegressor if "standardize_target" in params else GGNScoreClassifier
    est = cls(**params)
    assert est.fit_intercept is False and est.tol == 0.0
    assert est.n_iter_no_change == est.max_iter
    assert est.mu == pytest.approx(
        {"pendigits": 0.001, "letter": 10.0, "avila": 10.0}.get(experiment, 1.0)
        * np.sqrt(est.n_hidden))
    if experiment in ("synthetic_gd", "pendigits", "letter", "avila"):
        gd = paper_params(experiment=experiment, solver="gd")
        assert gd["solver"] == "gd" and gd["learning_rate"] == 1.0
        assert gd["max_iter"] > params["max_iter"]
    else:
        with pytest.raises(ValueError, match="no GD baseline"):
            paper_params(experiment=experiment, solver="gd")


def test_paper_params_without_experiment_is_unchanged():
    assert paper_params() == {
        "damping": "tau", "batch_size": None, "mu": "auto", "tau": 1e-4,
        "step_size": 0.95, "line_search": False, "scaling": "ntk",
        "regularizer": "pseudo_huber", "curvature": "exact",
        "hessian": "diagonal", "input_transform": None, "early_stopping": False,
        "compute_dtype": "float64"}
    with pytest.raises(ValueError, match="experiment"):
        paper_params(experiment="cifar")
