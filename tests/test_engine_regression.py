"""The training engine reproduces the stored fits of ``engine_reference.py``
on any machine, to within the round-off of its own computation there.

The stored arrays come from one machine (its BLAS kernels, the CPU numba
compiled for). Another machine sums in other orders, so its fits differ in
the last bits, by an amount that grows with the problem's conditioning:
about 1e-16 of the largest value in the float64 mini-batch fits, 1e-10 in
the ill-conditioned full-batch ones, 1e-7 in float32. The test measures
that amount on the machine running it: each configuration is refitted
``N_PERTURBATIONS`` times with its inputs moved one unit in the last place
of the dtype its steps compute in (``engine_reference.perturbed``). A refit
on inputs that differ in the last bit rounds every operation afresh, so the
spread of an array over the refits (its largest change) is this
computation's round-off as it propagates through all of its steps, plus the
conditioning times the unit round-off ``u``. Another summation order goes
through the same steps, and it is bounded: a sum of ``n`` terms in another
order differs by up to about ``n·u·Σ|x|``, where rounding its terms at
``u`` moves it by about ``u·Σ|x|``. A stored array may therefore differ from
the fit here by ``n`` times its spread, ``n`` the longest sum of a step
(:func:`reduction_length`, 81 to 180 here), plus one unit in the last place
of the stored value (the rounding of the returned weights to the data's
dtype). With other BLAS kernels and numba targets the differences were at
most about twice the spread, 1/40 of the allowance or less, while a
relative change of 1e-6 in the step size or in the damping moves every
float64 fit it reaches by more than a thousand allowances. Bit-for-bit
checks compare two fits in the same process only.
"""

import numpy as np
import pytest

from engine_reference import COMMON, CONFIGS, PATH, fit_config

REFERENCE = np.load(PATH)
N_PERTURBATIONS = 8


def reduction_length(fitted):
    """The longest sum of a step of the fit that returned ``fitted``: the
    larger of the parameter count ``p`` (the Gram's inner products over the
    parameters, the primal system's order) and the rows of a batch times
    the outputs (the sums over rows, the dual system's order).

    Parameters
    ----------
    fitted : dict of ndarray
        :func:`engine_reference.fit_config`'s arrays, plus ``"rows"``, the
        rows of a batch.

    Returns
    -------
    n : int
    """
    n_outputs = fitted["output_weights"].shape[-1]
    p = sum(fitted[key].size for key in ("hidden_weights", "output_weights",
                                         "hidden_intercept", "output_intercept")
            if key in fitted)
    return max(p, fitted["rows"] * n_outputs)


def batch_rows(name):
    """The rows of a batch of configuration ``name``."""
    cls, params, data, how = CONFIGS[name]
    X, _ = data()
    batch_size = {**COMMON, **params}["batch_size"]
    return len(X) if batch_size is None else min(batch_size, len(X))


def allowed_differences(name, center, refits):
    """The largest differences from the stored arrays that round-off
    explains: ``{key: (multiple, spread)}`` for the floating-point arrays,
    where the allowance is ``multiple · spread`` plus one unit in the last
    place of the stored value.

    Parameters
    ----------
    name : str
        A key of ``CONFIGS``.
    center : dict of ndarray
        The unperturbed fit in the dtype the steps compute in.
    refits : list of dict of ndarray
        The fits with perturbed inputs.

    Returns
    -------
    allowed : dict
    """
    n = reduction_length({**center, "rows": batch_rows(name)})
    return {key: (n, max(float(np.max(np.abs(refit[key] - value), initial=0.0))
                         for refit in refits))
            for key, value in center.items() if key != "counts"}


def stored_mismatches(fitted, stored, allowed):
    """The arrays of ``fitted`` outside their allowance from ``stored``.

    Parameters
    ----------
    fitted, stored : dict of ndarray
        The fit here and the stored arrays of the same configuration.
    allowed : dict
        :func:`allowed_differences`.

    Returns
    -------
    mismatches : list of str
        One line per array that differs by more than it may.
    """
    out = []
    for key, value in fitted.items():
        reference = stored[key]
        if key == "counts":
            if not np.array_equal(value, reference):
                out.append(f"{key}: {value} here, {reference} stored")
            continue
        if value.shape != reference.shape:
            out.append(f"{key}: shape {value.shape} here, {reference.shape} stored")
            continue
        multiple, spread = allowed[key]
        difference = np.abs(value.astype(np.float64) - reference)
        ulp = np.finfo(reference.dtype).eps * np.abs(reference)
        excess = difference - (multiple * spread + ulp)
        if not np.all(excess <= 0):
            i = int(np.argmax(excess))
            out.append(f"{key}: differs by {difference.ravel()[i]:.3g} at flat "
                       f"index {i}, allowed {multiple} x spread {spread:.3g} "
                       f"+ 1 ulp of {abs(reference.ravel()[i]):.3g}")
    return out


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_engine_reproduces_stored_fits(name):
    fitted = fit_config(name)
    # the same fit again in this process: bit for bit
    again = fit_config(name)
    for key, value in fitted.items():
        np.testing.assert_array_equal(again[key], value, err_msg=f"{name}/{key}")
    # the inputs cast to the dtype the steps compute in: the same fit, before
    # the rounding of its weights to the data's dtype
    center = fit_config(name, "none")
    for key, value in fitted.items():
        np.testing.assert_array_equal(center[key].astype(value.dtype), value,
                                      err_msg=f"{name}/{key}")
    refits = [fit_config(name, seed) for seed in range(N_PERTURBATIONS)]
    for refit in refits:
        # a perturbation at u takes as many iterations: the spread compares
        # the same steps
        np.testing.assert_array_equal(refit["counts"], fitted["counts"],
                                      err_msg=f"{name}: counts")
    stored = {key: REFERENCE[f"{name}/{key}"] for key in fitted}
    mismatches = stored_mismatches(fitted, stored,
                                   allowed_differences(name, center, refits))
    assert not mismatches, (f"{name} (stored on {REFERENCE['blas']}): "
                            + "; ".join(mismatches))
