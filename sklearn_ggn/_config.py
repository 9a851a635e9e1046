"""One place for numba settings (kernels read no module globals).

``SKLEARN_GGN_NUMBA_CACHE=0`` in the environment turns the on-disk cache of
compiled kernels off (useful to measure cold compile times).

When the cache is on but numba has nowhere to write it (a read-only install:
no writable ``__pycache__`` beside the modules, no writable user cache
directory and no ``NUMBA_CACHE_DIR``), numba would refuse to compile the
kernels at import ("cannot cache function ...: no locator available"). The
kernels are then compiled in memory on every import instead, with one
warning that names the two ways out.
"""

import os
import warnings

_CACHE_VARIABLE = "SKLEARN_GGN_NUMBA_CACHE"


class NumbaCacheWarning(UserWarning):
    """The compiled kernels cannot be cached on disk; they are compiled in
    memory (on every import)."""


def _cache_probe():
    """Stands in for a kernel of this package when asking numba for a cache
    locator (same directory, so the same locators apply)."""


def numba_can_cache():
    """Whether numba finds a writable cache location for this package's kernels.

    Asks numba's own locators (``NUMBA_CACHE_DIR``, the ``__pycache__``
    beside the module, the user-wide cache directory, ...) exactly as
    ``cache=True`` does, without compiling anything.
    """
    try:
        from numba.core.caching import FunctionCache
    except ImportError:  # numba moved its internals: keep numba's behaviour
        return True
    try:
        FunctionCache(_cache_probe)
    except RuntimeError:
        return False
    return True


def _numba_cache_enabled():
    if os.environ.get(_CACHE_VARIABLE, "1") == "0":
        return False
    if numba_can_cache():
        return True
    here = os.path.dirname(os.path.abspath(__file__))
    warnings.warn(
        f"numba cannot cache sklearn_ggn's compiled kernels: neither {here} "
        "nor numba's user cache directory is writable and NUMBA_CACHE_DIR is "
        "not set. The kernels are compiled in memory instead, which adds some "
        "seconds to every import. Set NUMBA_CACHE_DIR to a writable directory "
        f"to cache them, or {_CACHE_VARIABLE}=0 to compile in memory without "
        "this warning.",
        NumbaCacheWarning,
        stacklevel=2,
    )
    return False


NUMBA_CACHE = _numba_cache_enabled()

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
