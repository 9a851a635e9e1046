"""One place for numba settings (kernels read no module globals).

The compiled kernels are cached on disk in a per-user directory, never
inside the installed package: ``$XDG_CACHE_HOME/sklearn_ggn/numba/<version>``
(``~/.cache/sklearn_ggn/...`` when ``XDG_CACHE_HOME`` is unset; the
platform's user cache directory on macOS and Windows), one subdirectory per
installed copy of the package. ``NUMBA_CACHE_DIR`` overrides it as it does
for every numba cache (the kernels go to ``<NUMBA_CACHE_DIR>/sklearn_ggn/
<version>``); when neither is writable, numba's own user-wide cache
directory is used. Wherever they are cached, the kernels are stamped with
a hash of every source file of the package, not of their own file alone as
numba's locators do: a kernel holds its callees from other modules compiled
in, and an edited helper module must not leave a stale kernel.

``SKLEARN_GGN_NUMBA_CACHE=0`` in the environment turns the on-disk cache of
compiled kernels off (useful to measure cold compile times).

When the cache is on but none of these directories is writable, numba would
fall back to the ``__pycache__`` beside the modules, inside the package, or
refuse to compile the kernels at import ("cannot cache function ...: no
locator available"). The kernels are then compiled in memory on every
import instead, with one warning that names the two ways out.
"""

import functools
import hashlib
import logging
import os
import sys
import warnings

from . import __version__

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

_CACHE_VARIABLE = "SKLEARN_GGN_NUMBA_CACHE"


class NumbaCacheWarning(UserWarning):
    """The compiled kernels cannot be cached on disk; they are compiled in
    memory (on every import)."""


def user_cache_dir():
    """The per-user directory of this version's compiled kernels.

    Returns
    -------
    path : str
        ``<user cache directory>/sklearn_ggn/numba/<version>``; the kernels
        of one installed copy are in a subdirectory named after its folder.
    """
    try:
        from numba.misc.appdirs import AppDirs
        base = AppDirs(appname="sklearn_ggn", appauthor=False).user_cache_dir
    except ImportError:  # pragma: no cover - numba moved its internals
        base = os.path.join(os.environ.get("XDG_CACHE_HOME")
                            or os.path.expanduser("~/.cache"), "sklearn_ggn")
    return os.path.join(base, "numba", __version__)


def _in_package(path):
    path = os.path.abspath(path)
    return path == _PACKAGE_DIR or path.startswith(_PACKAGE_DIR + os.sep)


def cache_directories():
    """The directories tried, in order, for this version's compiled kernels.

    Returns
    -------
    paths : list of str
        ``<NUMBA_CACHE_DIR>/sklearn_ggn/<version>`` when ``NUMBA_CACHE_DIR``
        is set, then :func:`user_cache_dir`, then
        ``<numba's user-wide cache directory>/sklearn_ggn/<version>``. The
        first writable one holds the kernels; whichever it is, a kernel is
        stamped with every source file of the package.
    """
    paths = []
    try:
        from numba.core import config
        numba_dir = config.CACHE_DIR
    except ImportError:  # pragma: no cover - numba moved its internals
        numba_dir = os.environ.get("NUMBA_CACHE_DIR", "")
    if numba_dir:
        paths.append(os.path.join(numba_dir, "sklearn_ggn", __version__))
    paths.append(user_cache_dir())
    try:
        from numba.misc.appdirs import AppDirs
        paths.append(os.path.join(
            AppDirs(appname="numba", appauthor=False).user_cache_dir,
            "sklearn_ggn", __version__))
    except ImportError:  # pragma: no cover - numba moved its internals
        pass
    return paths


def _install_locator():
    """Put a locator for this package's kernels first in numba's list. It
    answers for the files of this package only (other packages' kernels are
    unaffected) and stamps each kernel with all of the package's sources,
    wherever the kernel is cached: in ``NUMBA_CACHE_DIR`` when that is set,
    else in :func:`user_cache_dir`, else in numba's user-wide cache
    directory (:func:`cache_directories`). numba's own locators stamp a
    kernel with its own file only."""
    try:
        from numba.core import caching
        from numba.core.caching import _CacheLocator
        from numba.core.caching import _SourceFileBackedLocatorMixin
    except ImportError:  # pragma: no cover - numba moved its internals
        return None

    class PackageCacheLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
        """sklearn_ggn's kernels, cached in the first writable directory of
        :func:`cache_directories`."""

        package_dir = _PACKAGE_DIR

        def __init__(self, py_func, py_file, base):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(
                base, self.get_suitable_cache_subpath(py_file))

        def get_cache_path(self):
            return self._cache_path

        def get_source_stamp(self):
            # every module of the package, not the kernel's file alone: a
            # cached kernel holds its callees from other modules compiled
            # in, and would outlive an edit of them
            return _package_stamp()

        @classmethod
        def from_function(cls, py_func, py_file):
            if not (_in_package(py_file) and os.path.exists(py_file)):
                return None
            for base in cache_directories():
                self = cls(py_func, py_file, base)
                try:
                    self.ensure_cache_path()
                except OSError:  # not writable: the next directory
                    continue
                return self
            return None

    classes = caching.CacheImpl._locator_classes
    classes[:] = [c for c in classes
                  if getattr(c, "package_dir", None) != _PACKAGE_DIR]
    classes.insert(0, PackageCacheLocator)
    return PackageCacheLocator


@functools.lru_cache(maxsize=None)
def _package_stamp():
    """A hash of the package's source files (once per process)."""
    digest = hashlib.sha256()
    for folder, _, files in sorted(os.walk(_PACKAGE_DIR)):
        for name in sorted(f for f in files if f.endswith(".py")):
            with open(os.path.join(folder, name), "rb") as f:
                digest.update(f.read())
    return digest.digest()


def _cache_probe():
    """Stands in for a kernel of this package when asking numba for a cache
    locator (same directory, so the same locators apply)."""


def cache_locator():
    """numba's cache locator for this package's kernels, or None when there
    is no writable place outside the package."""
    try:
        from numba.core.caching import FunctionCache
    except ImportError:  # numba moved its internals: keep numba's behaviour
        return None
    try:
        locator = FunctionCache(_cache_probe)._impl.locator
    except RuntimeError:
        return None
    if _in_package(locator.get_cache_path()):
        return None  # (only the __pycache__ beside the modules was left)
    return locator


def numba_can_cache():
    """Whether numba finds a writable cache location for this package's
    kernels outside the package.

    Asks numba's locators (``NUMBA_CACHE_DIR``, :func:`user_cache_dir`,
    numba's user-wide cache directory, ...) exactly as ``cache=True`` does,
    without compiling anything.
    """
    try:
        import numba.core.caching  # noqa: F401
    except ImportError:  # numba moved its internals: keep numba's behaviour
        return True
    return cache_locator() is not None


_install_locator()


def _numba_cache_enabled():
    if os.environ.get(_CACHE_VARIABLE, "1") == "0":
        return False
    if numba_can_cache():
        return True
    here = os.path.dirname(os.path.abspath(__file__))
    warnings.warn(
        f"numba cannot cache sklearn_ggn's compiled kernels: neither "
        f"{user_cache_dir()} nor numba's user cache directory is writable and "
        f"NUMBA_CACHE_DIR is not set (the package folder {here} is never "
        "used). The kernels are compiled in memory instead, which adds some "
        "seconds to every import. Set NUMBA_CACHE_DIR to a writable directory "
        f"to cache them, or {_CACHE_VARIABLE}=0 to compile in memory without "
        "this warning.",
        NumbaCacheWarning,
        stacklevel=2,
    )
    return False


NUMBA_CACHE = _numba_cache_enabled()


def kernels_cached():
    """Whether the on-disk cache holds this package's compiled kernels.

    Returns
    -------
    cached : bool
        False when the cache is off or empty: the next first call of a
        kernel compiles it.
    """
    locator = cache_locator() if NUMBA_CACHE else None
    if locator is None:
        return False
    try:
        return any(name.endswith(".nbi")
                   for name in os.listdir(locator.get_cache_path()))
    except OSError:
        return False


# The first fit of a process says once that it compiles, when it does: a
# first compile takes a few seconds and would otherwise look like a hang. Not a
# warning (a cold cache is no problem, and ``-W error`` or pytest's
# filterwarnings=error must not fail on it): a record of the "sklearn_ggn"
# logger at INFO level when the application configured logging, otherwise
# one line on stderr.
_first_compile_noted = False
COMPILE_NOTE = ("sklearn_ggn: compiling the numba kernels on this first use "
                "(a few seconds, once for this copy of the package; cached on "
                "disk afterwards).")


def note_first_compile():
    """Say once per process that the kernels compile, when their on-disk
    cache is empty (nothing when they are loaded, or compiled in memory by
    choice or with a :class:`NumbaCacheWarning`)."""
    global _first_compile_noted
    if _first_compile_noted:
        return
    _first_compile_noted = True
    if not NUMBA_CACHE or kernels_cached():
        return
    logger = logging.getLogger("sklearn_ggn")
    if logger.hasHandlers():
        logger.info(COMPILE_NOTE)
    else:
        print(COMPILE_NOTE, file=sys.stderr, flush=True)

# fastmath would allow re-association, which breaks the bit-for-bit
# reproducibility of fits and the primal == dual identities at 1e-8.
# error_model="numpy": a float division by zero gives inf/nan as in NumPy
# instead of raising ZeroDivisionError. The Python model's zero check kept LLVM
# from vectorizing every loop with a division (measured: the regularizer's
# fused pass over p = 406 528 parameters 2.6 -> 1.3 ms). Results are the same
# IEEE quotients; divisors are positive by construction everywhere.
# no_cfunc_wrapper: the kernels are called from Python or from each other,
# never passed to compiled code as first-class functions, so numba need not
# compile a C-callable wrapper beside each of them.
NUMBA_OPTIONS = {"cache": NUMBA_CACHE, "nogil": True, "fastmath": False,
                 "error_model": "numpy", "no_cfunc_wrapper": True}

# For the reduction loops of the Gram kernels: re-association and FMA
# contraction let LLVM vectorize the dot products. The result is still
# deterministic for a given build (bit-for-bit reproducible fits); no
# assumptions about NaN/inf are allowed, since divergence detection needs them.
NUMBA_OPTIONS_REDUCTION = {**NUMBA_OPTIONS, "fastmath": {"reassoc", "contract"}}


def _kernel_cache_class():
    """numba's on-disk cache of compiled functions as the kernels use it
    (:class:`KernelCache`), or None when numba moved the internals it
    builds on (the kernels then use numba's own)."""
    try:
        from numba.core.caching import FunctionCache
        from numba.core.runtime import rtsys
    except ImportError:  # pragma: no cover - numba moved its internals
        return None
    if not all(hasattr(FunctionCache, name) for name in (
            "load_overload", "_load_overload", "_guard_against_spurious_io_errors")):
        return None  # pragma: no cover - numba moved its internals

    class KernelCache(FunctionCache):
        """numba's cache of a kernel, loading its machine code without
        setting up numba's compiler.

        Before every load numba refreshes its compiler's typing and target
        contexts, which the first time imports and registers all of numba's
        typing and lowering modules: ~0.15 s once per process, most of what
        the first fit of a process paid over its second with the kernels
        cached. Loaded machine code needs none of it, only numba's runtime
        (the NRT: array allocation and reference counts), initialized here.
        A kernel missing from the cache compiles as before, and numba's
        compiler sets itself up then."""

        def load_overload(self, sig, target_context):
            rtsys.initialize(target_context)
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)

    return KernelCache


_KernelCache = _kernel_cache_class()


class _LazyKernelCache:
    """A kernel's :class:`KernelCache`, made at its first call: finding and
    probing its cache directory costs file operations, which an import of
    the package need not pay for every kernel it defines."""

    def __init__(self, py_func):
        self._py_func = py_func
        self._made = None

    def __getattr__(self, name):
        if self._made is None:
            self._made = _KernelCache(self._py_func)
        return getattr(self._made, name)


def njit(**options):
    """numba's ``njit`` for the package's kernels (options as numba's; see
    :data:`NUMBA_OPTIONS`): with ``cache=True`` a kernel is cached on disk
    by a :class:`KernelCache`, made at its first call."""
    import numba

    cache = options.pop("cache", False)
    decorate = numba.njit(**options)

    def decorator(py_func):
        dispatcher = decorate(py_func)
        # (with NUMBA_DISABLE_JIT=1 numba gives the function back as it is)
        if cache and hasattr(dispatcher, "enable_caching"):
            if _KernelCache is None:  # pragma: no cover - numba moved
                dispatcher.enable_caching()
            else:
                dispatcher._cache = _LazyKernelCache(py_func)
        return dispatcher

    return decorator


@functools.lru_cache(maxsize=None)
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS runs on one thread. threadpoolctl's
    ``threadpool_limits`` scans the process's libraries on every call (~5 ms:
    a cost per fit and per ``partial_fit`` chunk); the scan is done once,
    at the first fit, when NumPy's and SciPy's BLAS are loaded."""
    return _blas_controller().limit(limits=1, user_api="blas")
