"""The peers' columns of the panel and the real tables, without torch: the
columns a RealMLP job sends, the reuse of an earlier run's fits, the
comparison lines, and the model list when no RealMLP Python is named."""

import json

import numpy as np
import pytest

peers = pytest.importorskip("benchmarks._peers")
realmlp = pytest.importorskip("benchmarks._realmlp")


def test_split_columns_of_a_frame_and_an_array():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"a": [1.0, 2.0], "s": ["x", "y"], "b": [3, 4]})
    num, cat = realmlp.split_columns(df, ["s"])
    assert num.tolist() == [[1.0, 3.0], [2.0, 4.0]] and cat.tolist() == [["x"], ["y"]]
    num, cat = realmlp.split_columns(np.array([[0.5, 2.0], [1.5, 7.0]]), [1])
    assert num.tolist() == [[0.5], [1.5]] and cat.tolist() == [["2"], ["7"]]


def test_realmlp_joins_the_defaults_only_when_configured(capsys):
    assert peers.resolve_models(["ggn", "mlp"], False, None) == ["ggn", "mlp"]
    assert peers.resolve_models(["ggn"], False, "py") == ["ggn", "realmlp"]
    assert peers.resolve_models(["ggn", "realmlp"], True, None) == ["ggn"]
    assert "skipped" in capsys.readouterr().out


def test_reuse_takes_a_peer_fit_of_the_same_split_only(tmp_path):
    X, y = np.arange(6.0).reshape(3, 2), np.array([0, 1, 0])
    split = peers.split_hash(X, y)
    assert split != peers.split_hash(X[::-1], y) != peers.split_hash(X, 1 - y)
    earlier = {"benchmark": "panel", "machine": {"date (UTC)": "D", "CPU": "C"},
               "load": {"load1_median_during": 1.0, "other_processes_cores": 0.5},
               "runs": {"t": {"0": {"realmlp": {"score": 0.9, "time": 5.0,
                                                "split": split},
                                    "ggn": {"score": 0.8, "time": 1.0,
                                            "split": split}}}}}
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(earlier))
    reuse = peers.Reuse(str(path), "panel")
    fresh = {"score": 0.1, "time": 9.0}
    got = peers.fit_peer("realmlp", lambda: fresh, reuse, "t", 0, split)
    assert got["reused"] and got["time"] == 5.0
    # another split, a seed the run lacks, GGN-SCORE: fitted anew
    for kind, seed, key in (("realmlp", 0, "other"), ("realmlp", 1, split),
                            ("ggn", 0, split)):
        got = peers.fit_peer(kind, lambda: fresh, reuse, "t", seed, key)
        assert got["time"] == 9.0 and got["split"] == key
    assert "1 RealMLP-TD" in reuse.note() and "D UTC" in reuse.note()
    with pytest.raises(SystemExit):
        peers.Reuse(str(path), "realdata")


def test_comparison_counts_and_ratios():
    runs = {0: {"ggn": {"score": 0.80, "time": 1.0},
                "hgb": {"score": 0.81, "time": 2.0},
                "realmlp": {"score": 0.804, "time": 10.0}},
            1: {"ggn": {"score": 0.82, "time": 1.0},
                "hgb": {"score": 0.83, "time": 2.0}}}
    summary = peers.task_summary(runs, ["ggn", "hgb", "realmlp"])
    assert summary["score"]["ggn"] == pytest.approx(0.81)
    assert summary["ggn_on"]["realmlp"] == pytest.approx(0.80)
    assert summary["ratio"] == {"hgb": 0.5, "realmlp": 0.1}
    lines = peers.comparison_lines({"a": summary}, lambda t: False,
                                   ["ggn", "hgb", "realmlp"])
    # 0.81 vs HistGB's 0.82: outside 0.005; 0.800 vs RealMLP's 0.804: within
    assert "**0 of 1** (not: a)" in lines[0] and "**1 of 1**" in lines[1]
    assert "0.100" in lines[2]
