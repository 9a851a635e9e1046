"""One place for numba settings (kernels read no module globals).

``SKLEARN_GGN_NUMBA_CACHE=0`` in the environment turns the on-disk cache of
compiled kernels off (useful when the package directory is read-only, or to
measure cold compile times).
"""

import os

NUMBA_CACHE = os.environ.get("SKLEARN_GGN_NUMBA_CACHE", "1") != "0"

# fastmath would allow re-association, which breaks the bit-for-bit
# reproducibility of fits and the primal == dual identities at 1e-8.
# error_model="numpy": a float division by zero gives inf/nan as in NumPy
# instead of raising ZeroDivisionError. The Python model's zero check kept LLVM
# from vectorizing every loop with a division (measured: the regularizer's
# fused pass over p = 406 528 parameters 2.6 -> 1.3 ms). Results are the same
# IEEE quotients; divisors are positive by construction everywhere.
NUMBA_OPTIONS = {"cache": NUMBA_CACHE, "nogil": True, "fastmath": False,
                 "error_model": "numpy"}

# For the reduction loops of the Gram kernels: re-association and FMA
# contraction let LLVM vectorize the dot products. The result is still
# deterministic for a given build (bit-for-bit reproducible fits); no
# assumptions about NaN/inf are allowed, since divergence detection needs them.
NUMBA_OPTIONS_REDUCTION = {**NUMBA_OPTIONS, "fastmath": {"reassoc", "contract"}}
