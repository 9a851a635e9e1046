"""Memory of a GGN-SCORE step, checked before it is spent.

A step solves its Gauss-Newton system in one of two forms:
the dual form factorizes a (bK × bK) matrix, the primal form a (p × p) one.
Either can be far beyond the machine's memory (a full batch of 30 000 rows
and 10 classes asks 1.3 TiB in the dual form), and NumPy may then be granted
the memory lazily and the process be killed by the kernel's OOM killer in
the middle of a fit. :func:`choose_linear_solver` therefore estimates the peak
bytes of both forms from the problem's sizes alone and raises
:class:`MemoryError` before anything is allocated when the requested form (or,
for ``"auto"``, neither form) fits in the available memory.

The estimates follow the allocations of
:meth:`TwoLayerNetwork.gram <sklearn_ggn._network.TwoLayerNetwork.gram>`,
:meth:`~sklearn_ggn._network.TwoLayerNetwork.gauss_newton_matrix` and the
Cholesky factorization of the engine (``engine.cholesky``); they are upper bounds of the peak of
one step, including what both forms share (the forward pass, the
sensitivities and a few parameter-sized vectors), not of the training data.

The available memory is ``MemAvailable`` of ``/proc/meminfo`` (Linux), else
the free physical pages of ``os.sysconf``, capped by a cgroup memory limit
when one is set and by the room left under the process's address-space
limit (``RLIMIT_AS``, ``ulimit -v``: the limit minus the virtual size);
the environment variable ``SKLEARN_GGN_AVAILABLE_MEMORY`` (bytes, or with
a ``K``/``M``/``G``/``T`` suffix, powers of 1024) overrides them all.
"""

import os

try:
    import resource
except ImportError:  # (not on Windows)
    resource = None

from ._network import (
    _BLOCK_BYTES,
    TwoLayerNetwork,
    pair_block_rows,
    pair_block_width,
    single_output_units,
)

FORMS = ("dual", "primal")
ENV_AVAILABLE_MEMORY = "SKLEARN_GGN_AVAILABLE_MEMORY"
_GIB = 2.0**30
_SUFFIXES = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


# ------------------------------------------------------------------ estimates
def _sizes(n_features, n_hidden, n_outputs, fit_intercept):
    net = TwoLayerNetwork(int(n_features), int(n_hidden), int(n_outputs), 1.0,
                          "silu", bool(fit_intercept))
    return net.d_aug, net.n_hidden_params, net.n_params - net.n_hidden_params, \
        net.n_params


def _shared_bytes(b, d_aug, n, K, p, itemsize, rank=None):
    """Forward cache (Xa, ρ, ρ', outputs), residual, factor, sensitivities W
    and ~8 parameter-sized vectors (θ, ∇g, D, r, d, trial θ, ...); ``rank``
    rows of J̃ per sample (K when None)."""
    R = K if rank is None else rank
    return itemsize * (b * d_aug + 2 * b * n + 2 * b * K + b * K * R
                       + b * R * n + 8 * p)


def _dual_bytes(b, d_aug, n, K, itemsize, rank=None, per_unit=False):
    """Peak of the dual step: the Gram, its temporaries, then Gram + factor."""
    m = b * (K if rank is None else rank)
    system = float(m) * m * itemsize
    if per_unit:
        # X̂X̂ᵀ, ρ D ρᵀ, FᵀF and the Gram's GEMM temporaries (TwoLayerNetwork.
        # rank_gram): a few m × m and b × b arrays
        temporaries = (2.0 * m * m + 2.0 * b * b) * itemsize
        return system + max(temporaries, system)
    if K == 1:
        # Z (b × units·d̂ + n + 1) in blocks of hidden units of ~4 blocks;
        # with more than one block the partial Gram Z Zᵀ is a second b × b.
        units = min(single_output_units(b, d_aug, itemsize), n)
        z = float(b) * (units * d_aug + n + 1) * itemsize
        partial = system if units < n else 0.0
        temporaries = z + partial
    else:
        # pair products (pairs × d̂), M (pairs × n) and the plain blocks
        # (pairs × K²) for a block of rows k (each with up to b pairs), with
        # TwoLayerNetwork.gram's block plan; then S (K × b × b) and the
        # scaled ρ (K × b × n)
        rows = min(b, pair_block_rows(b, pair_block_width(n, d_aug, K, False,
                                                          True), itemsize))
        block = rows * float(b) * (n + d_aug + K * K) * itemsize
        temporaries = max(block,
                          float(K) * b * b * itemsize + float(K) * b * n * itemsize)
    return system + max(temporaries, system)  # the Cholesky factor is a copy


def _primal_bytes(b, d_aug, n, K, p_u, n_rest, p):
    """Peak of the primal step, which always runs in float64: the p × p
    matrix, the output Jacobian J̃_R and its 4-D temporary, the hidden block
    UU (p_u²), each chunk's product C·outer (another p_u²) and its chunk
    temporaries, then the transposed copy of UU, and finally matrix + factor."""
    s = 8.0
    gn = s * p * p
    j_rest = s * b * K * n_rest + s * b * K * K * n
    uu = s * p_u * p_u
    ur = s * d_aug * n * n_rest
    chunk_temps = 3.0 * max(_BLOCK_BYTES, s * max(n * n, n * n_rest, d_aug * d_aug))
    assembly = gn + j_rest + 2 * uu + ur + chunk_temps
    transpose = gn + s * b * K * n_rest + 2 * uu + ur
    return max(assembly, transpose, 2 * gn)


def estimate_solver_bytes(n_samples, n_features, n_hidden, n_outputs,
                          fit_intercept=True, itemsize=8, *, rank=None,
                          per_unit=False):
    """Peak bytes of one GGN-SCORE step in each form.

    Parameters
    ----------
    n_samples : int
        Samples in the batch b.
    n_features, n_hidden, n_outputs : int
        d, n and K.
    fit_intercept : bool, default=True
    itemsize : int, default=8
        Bytes per float of the fit (4 for float32 data; the primal form is
        always solved in float64).
    rank : int or None, default=None
        Rows of the kernel system per sample: K for the exact output
        curvature (None), 1 for ``curvature="true_vs_rest"``.
    per_unit : bool, default=False
        Whether H is constant over each hidden unit (``hessian="per_unit"``).

    Returns
    -------
    dict
        ``{"dual": bytes, "primal": bytes}`` (floats).
    """
    b, n, K = int(n_samples), int(n_hidden), int(n_outputs)
    d_aug, p_u, n_rest, p = _sizes(n_features, n, K, fit_intercept)
    shared = _shared_bytes(b, d_aug, n, K, p, itemsize, rank)
    primal_shared = shared if itemsize == 8 else shared + _shared_bytes(
        b, d_aug, n, K, p, 8, rank)  # float32 fits promote the primal step's inputs
    return {"dual": shared + _dual_bytes(b, d_aug, n, K, itemsize, rank, per_unit),
            "primal": primal_shared + _primal_bytes(b, d_aug, n, K, p_u, n_rest, p)}


def step_flops(n_samples, n_features, n_hidden, n_outputs, fit_intercept=True, *,
               rank=None, per_unit=False):
    """``{"dual": flops, "primal": flops}`` of
    :meth:`TwoLayerNetwork.step_costs`, the cost model of ``"auto"``."""
    network = TwoLayerNetwork(int(n_features), int(n_hidden), int(n_outputs), 1.0,
                              "silu", bool(fit_intercept))
    return network.step_costs(int(n_samples), rank=rank, per_unit=per_unit)


# ----------------------------------------------------------- available memory
def _parse_bytes(text):
    text = str(text).strip().upper().removesuffix("B").removesuffix("I")
    factor = 1
    if text and text[-1] in _SUFFIXES:
        factor = _SUFFIXES[text[-1]]
        text = text[:-1]
    value = float(text) * factor
    if not value >= 0:
        raise ValueError
    return int(value)


def _meminfo_available(path="/proc/meminfo"):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available():
    """Room left under a cgroup (v2, then v1) memory limit, or None."""
    for limit_path, usage_path in (
            ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
            ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
             "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_path) as f:
                limit = f.read().strip()
            if limit == "max":
                return None
            with open(usage_path) as f:
                usage = int(f.read().strip())
            limit = int(limit)
        except (OSError, ValueError):
            continue
        if limit >= 2**60:  # cgroup v1 "unlimited"
            return None
        return max(0, limit - usage)
    return None


def _sysconf_available():
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _address_space_available():
    """Room left under the process's address-space limit (``RLIMIT_AS``,
    ``ulimit -v``): the limit minus the current virtual size, or None
    without a limit (or where it cannot be read)."""
    if resource is None or not hasattr(resource, "RLIMIT_AS"):
        return None
    try:
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (OSError, ValueError):
        return None
    if limit == resource.RLIM_INFINITY or limit < 0:
        return None
    size = _virtual_size()
    if size is None:
        return None
    return max(0, limit - size)


def _virtual_size(path="/proc/self/statm"):
    """The process's virtual size in bytes (``/proc/self/statm``'s first
    field, in pages), or None."""
    try:
        with open(path) as f:
            pages = int(f.read().split()[0])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def available_memory_bytes():
    """Bytes a fit may allocate, or None when unknown (then nothing is checked).

    ``SKLEARN_GGN_AVAILABLE_MEMORY`` overrides the measurement; otherwise
    ``MemAvailable`` of ``/proc/meminfo`` (else ``os.sysconf`` free pages),
    capped by a cgroup limit and by the room left under an address-space
    limit (``RLIMIT_AS``: every allocation counts against it, whether or
    not its pages are ever touched).
    """
    override = os.environ.get(ENV_AVAILABLE_MEMORY)
    if override:
        try:
            return _parse_bytes(override)
        except ValueError:
            raise ValueError(
                f"{ENV_AVAILABLE_MEMORY}={override!r} is not a number of bytes "
                "(optionally with a K, M, G or T suffix)."
            ) from None
    available = _meminfo_available()
    if available is None:
        available = _sysconf_available()
    for limit in (_cgroup_available(), _address_space_available()):
        if limit is not None:
            available = limit if available is None else min(available, limit)
    return available


# -------------------------------------------------------------------- choice
def _largest(fits, hi):
    """Largest integer v in [1, hi] with fits(v) (monotone), or 0."""
    if hi < 1 or not fits(1):
        return 0
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def max_batch_size(forms, n_samples, n_features, n_hidden, n_outputs,
                   fit_intercept=True, itemsize=8, available_bytes=None, *,
                   rank=None, per_unit=False):
    """Largest batch size ≤ n_samples whose step fits in one of ``forms``
    (0 when not even one sample fits)."""
    if available_bytes is None:
        available_bytes = available_memory_bytes()

    def fits(b):
        est = estimate_solver_bytes(b, n_features, n_hidden, n_outputs,
                                    fit_intercept, itemsize, rank=rank,
                                    per_unit=per_unit)
        return min(est[f] for f in forms) <= available_bytes

    return _largest(fits, int(n_samples))


def choose_linear_solver(requested, n_samples, n_features, n_hidden, n_outputs,
                         fit_intercept=True, itemsize=8, available_bytes=None, *,
                         rank=None, per_unit=False):
    """The form a step on a batch of ``n_samples`` rows is solved in.

    ``"auto"`` takes the form with fewer flops (:func:`step_flops`) among
    those whose peak memory (:func:`estimate_solver_bytes`) fits in
    ``available_bytes``; an explicit ``"dual"`` or ``"primal"`` is returned
    when it fits. Nothing is allocated.

    Parameters
    ----------
    requested : {"auto", "dual", "primal"}
    n_samples : int
        Batch size b of one step.
    n_features, n_hidden, n_outputs : int
    fit_intercept : bool, default=True
    itemsize : int, default=8
        4 for float32 fits.
    available_bytes : int or None, default=None
        None measures it with :func:`available_memory_bytes`; when that is
        unknown too, memory is not checked.
    rank, per_unit
        The structure of the step (see :func:`estimate_solver_bytes`).

    Returns
    -------
    str
        ``"dual"`` or ``"primal"``.

    Raises
    ------
    MemoryError
        When no allowed form fits; the message gives both estimates in GiB,
        the largest ``batch_size`` that fits (if any) and the largest
        ``n_hidden`` that fits at this batch size.
    """
    if requested not in ("auto",) + FORMS:
        raise ValueError(f"linear_solver={requested!r} is not one of 'auto', "
                         "'dual', 'primal'.")
    if available_bytes is None:
        available_bytes = available_memory_bytes()
    allowed = FORMS if requested == "auto" else (requested,)
    structure = {"rank": rank, "per_unit": per_unit}
    est = estimate_solver_bytes(n_samples, n_features, n_hidden, n_outputs,
                                fit_intercept, itemsize, **structure)
    if available_bytes is None:
        fitting = list(allowed)
    else:
        fitting = [f for f in allowed if est[f] <= available_bytes]
    if len(fitting) == 1:
        return fitting[0]
    if len(fitting) == 2:
        flops = step_flops(n_samples, n_features, n_hidden, n_outputs,
                           fit_intercept, **structure)
        return "primal" if flops["primal"] < flops["dual"] else "dual"
    raise MemoryError(_advice(requested, allowed, est, n_samples, n_features,
                              n_hidden, n_outputs, fit_intercept, itemsize,
                              available_bytes, structure))


def _advice(requested, allowed, est, n_samples, n_features, n_hidden, n_outputs,
            fit_intercept, itemsize, available_bytes, structure):
    sizes = ", ".join(f"the {f} form {est[f] / _GIB:,.1f} GiB" for f in FORMS)
    what = ("neither form of the Gauss-Newton system fits" if requested == "auto"
            else f'linear_solver="{requested}" does not fit')
    ways = []
    batch = max_batch_size(allowed, n_samples, n_features, n_hidden, n_outputs,
                           fit_intercept, itemsize, available_bytes, **structure)
    if batch >= 1:
        ways.append(f"batch_size={batch} (or smaller)")
    if requested != "auto":
        other = "primal" if requested == "dual" else "dual"
        if est[other] <= available_bytes:
            ways.append(f'linear_solver="{other}" or "auto"')
        else:
            other_batch = max_batch_size((other,), n_samples, n_features, n_hidden,
                                         n_outputs, fit_intercept, itemsize,
                                         available_bytes, **structure)
            if other_batch >= 1 and batch < 1:
                ways.append(f'linear_solver="{other}" with batch_size={other_batch} '
                            "(or smaller)")

    def fits_hidden(n):
        e = estimate_solver_bytes(n_samples, n_features, n, n_outputs,
                                  fit_intercept, itemsize, **structure)
        return min(e[f] for f in allowed) <= available_bytes

    hidden = _largest(fits_hidden, int(n_hidden) - 1)
    if hidden >= 1:
        ways.append(f"n_hidden={hidden} (or fewer) at this batch size")
    elif batch < 1:
        ways.append("fewer hidden units together with a smaller batch_size")
    return (f"A GGN-SCORE step on a batch of {n_samples} samples "
            f"({n_features} features, n_hidden={n_hidden}, {n_outputs} outputs) "
            f"needs {sizes}, but only {available_bytes / _GIB:,.1f} GiB are "
            f"available: {what}. Use {' or '.join(ways)}. "
            f"({ENV_AVAILABLE_MEMORY} overrides the available memory.)")
