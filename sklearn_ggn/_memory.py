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

The estimates follow the allocations of a step phase by phase — the
linearization (:class:`~sklearn_ggn.engine.Linearization`), the Gram
(:meth:`TwoLayerNetwork.gram <sklearn_ggn._network.TwoLayerNetwork.gram>`,
:meth:`~sklearn_ggn._network.TwoLayerNetwork.rank_gram`) or the primal
matrix (:meth:`~sklearn_ggn._network.TwoLayerNetwork.gauss_newton_matrix`),
the Cholesky factorization of the engine (``engine.cholesky``, with the
copies LAPACK or NumPy make), the solve, a float32 step's float64
refinement and its float64 fallback, and the line search — and are upper
bounds of the peak of one step for dense and sparse inputs: what a step
allocates and the batch and forward pass it holds, not the training data.
A test compares them with the traced peak of steps of every structure.

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
    _REUSED_BYTES,
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


def _cholesky_bytes(order, itemsize):
    """Bytes ``engine.cholesky`` allocates besides the system it factorizes
    (order ``order``, ``itemsize``-byte floats): up to ``SMALL_CHOLESKY``,
    LAPACK's potrf on a copy (the factor); beyond it NumPy's, which works
    in float64 on a working copy of the system (of a float32 system: a
    float64 cast first) into a float64 factor, cast back to float32 once
    the copies are freed."""
    from .engine._linearization import SMALL_CHOLESKY

    square = float(order) * order
    if order <= SMALL_CHOLESKY:
        return square * itemsize
    return square * 8.0 * (2 if itemsize == 8 else 3)


def _inputs_bytes(b, d_aug, n, K, s):
    """The batch and its forward pass, alive through the step: the rows (a
    mini-batch's copy), targets and weights, then ρ, ρ' and the outputs."""
    return s * (b * d_aug + 2.0 * b * K + b + 2.0 * b * n)


def _linearization_bytes(b, n, K, R, p, s):
    """A linearization's own arrays: the residual (b × K), the curvature
    factor (its parts and a dense copy, b·K·(R + 3)), ∇g, D, the gradient
    and the regularizer pass's temporaries (5p), the per-unit D (n), and
    the sensitivities W (b·R·n) with the factor's transposed copy (b·R·K)."""
    return s * (b * K * (R + 4.0) + 5.0 * p + n + b * R * (n + K))


def _transient_bytes(b, n, K, R, p, s):
    """The Jacobian products' temporaries at one time (X̂ δUᵀ and a hidden
    error, b × n each; outputs and right-hand sides, b·K and b·R) and a
    solve's parameter-sized vectors (D r, the product, the primal
    residual, the correction: 6p)."""
    return s * (2.0 * b * n + 3.0 * b * K + 4.0 * b * R + 6.0 * p)


def _line_search_bytes(b, n, K, p, s):
    """What a line search adds to the step's inputs once the linearization
    is freed: the last trial point's forward pass (ρ, ρ', outputs) while
    the next one is computed (pre-activations, ρ, ρ', outputs) and the
    parameter-sized vectors (direction, trial points, regularizer: 6p)."""
    return s * (5.0 * b * n + 2.0 * b * K + 6.0 * p)


def _pair_block_bytes(b, d_aug, n, K, s, exact_factor):
    """Temporaries of the Gram's blocks of row pairs
    (``TwoLayerNetwork._pair_products``), dense or sparse inputs, with the
    block plan of ``pair_block_rows``: a block's M (pairs × n) and, for the
    exact factor, ρ's pair products (pairs × n) with S (pairs × K), or S
    with M·VV (pairs × K²); the next block's M and, dense, its pair
    products (pairs × d̂) are formed while the last block's M and S are
    still referenced. Also returns the pairs of the largest block."""
    worst = pairs_max = 0.0
    for sparse in (False, True):
        width = pair_block_width(n, d_aug, K, sparse, exact_factor)
        rows = min(b, pair_block_rows(b, width, s))
        pairs = rows * (b - (rows - 1) / 2.0)  # the first block's (k, l ≥ k)
        S = K if exact_factor else 0
        nxt = 2.0 * n + S + (0 if sparse else d_aug)
        inside = (max(2.0 * n + K, n + K + K * K) if exact_factor else n)
        worst = max(worst, pairs * s * max(nxt, inside))
        pairs_max = max(pairs_max, pairs)
    return worst, pairs_max


def _gram_bytes(b, d_aug, n, K, R, s, per_unit, fit_intercept):
    """Peak bytes of forming the dual Gram (m = b·R rows), itself included."""
    m = float(b) * R
    square = m * m * s
    if per_unit:
        # TwoLayerNetwork.rank_gram: W diag(uD) Wᵀ is written into the Gram
        # (from the scaled W, m × n); then X̂X̂ᵀ and ρ diag(uD) ρᵀ (b × b)
        # and FᵀF, Fᵀ diag(D_bo) F (m × m) are alive together, with the
        # scaled ρ (b × n) or factor (m × K) being multiplied; F's
        # transposed copy (m × K) throughout.
        products = 2.0 * b * b * s + square * (2 if fit_intercept else 1)
        return m * K * s + square + max(m * n * s,
                                        products + s * max(b * n, m * K))
    # pairs of rows (the exact factor's parts with K > 1 or sparse inputs
    # of one output; a rank-R factor with R rows per sample), then, for a
    # rank-R factor, the output blocks S (K × b × b) from the scaled ρ
    # (K × b × n) while the last block's M is referenced
    exact = R == K
    worst = 0.0
    for exact_factor in ((True, False) if exact else (False,)):
        block, pairs = _pair_block_bytes(b, d_aug, n, K, s, exact_factor)
        worst = max(worst, block)
        if not exact_factor:
            worst = max(worst, s * (pairs * n + K * float(b) * (b + n)))
    worst += s * n * K * K  # V's outer products
    if K == 1:
        # dense inputs of one output: Z = J̃ D^{1/2} (b × units·d̂ + n + 1)
        # in blocks of hidden units; from the second block on, the block's
        # Z Zᵀ (b × b) besides the Gram
        units = min(single_output_units(b, d_aug, s), n)
        z = s * b * (units * d_aug + n + 1.0) + s * n * d_aug
        worst = max(worst, z + (square if units < n else 0.0))
    return square + worst


def _kept_bytes(b, R, s, per_unit, fit_intercept):
    """The per-unit Gram's products that the network keeps as work arrays
    (``TwoLayerNetwork.work_array``, each at most ``_REUSED_BYTES``): alive
    from the Gram on, through the rest of the step."""
    if not per_unit:
        return 0.0
    sizes = [float(b) * b * s] * 2 + [float(b * R) ** 2 * s] * (
        2 if fit_intercept else 1)
    return sum(size for size in sizes if size <= _REUSED_BYTES)


def _dual_bytes(b, d_aug, n, K, R, p, s, per_unit, fit_intercept):
    """Peak of the dual step in ``s``-byte floats, its inputs included: the
    largest of forming the Gram, factorizing it (the system, its
    Gershgorin sums, the Cholesky's copies) and solving with it (system and
    factor, the products' temporaries); float32 steps also hold float64
    copies of the linearization while refining (with the float32 system
    and factor), and their float64 fallback is the whole float64 step
    besides the float32 linearization."""
    m = float(b) * R
    square = m * m * s
    inputs = _inputs_bytes(b, d_aug, n, K, s)
    lin = _linearization_bytes(b, n, K, R, p, s)
    kept = _kept_bytes(b, R, s, per_unit, fit_intercept)
    core = max(_gram_bytes(b, d_aug, n, K, R, s, per_unit, fit_intercept),
               kept + square + 8.0 * m + _cholesky_bytes(m, s),
               kept + 2.0 * square + _transient_bytes(b, n, K, R, p, s))
    peak = inputs + max(lin + core, kept + _line_search_bytes(b, n, K, p, s))
    if s == 8:
        return peak
    copies = (_inputs_bytes(b, d_aug, n, K, 8)
              + _linearization_bytes(b, n, K, R, p, 8))
    refine = kept + 2.0 * square + copies + _transient_bytes(b, n, K, R, p, 8)
    fallback = _dual_bytes(b, d_aug, n, K, R, p, 8, per_unit, fit_intercept)
    return max(peak, inputs + lin + max(refine, fallback))


def _primal_bytes(b, d_aug, n, K, R, p_u, n_rest, p, s):
    """Peak of the primal step, which runs in float64 (a float32 fit's
    inputs are promoted, its own forward pass kept): forming the p × p
    matrix, then factorizing it (the Cholesky's copies) and solving.

    Forming it: the output rows J̃_R (b·R × n_rest) and their 4-D
    temporary (b·R·n·K), their product (n_rest²); then, per chunk of
    samples (of ``_BLOCK_BYTES``, or one sample), C (n²), the inputs' outer
    products (d̂²) and F (n·n_rest) per sample, a chunk's set formed while
    the last one's is referenced, C·outer (p_u²) added to UU (p_u²) and
    X̂ᵀF added to UR (d̂·n·n_rest); UU's and UR's transposed copies."""
    e = 8.0
    gn = e * p * p
    j_rest = e * b * R * n_rest
    uu = e * p_u * p_u
    ur = e * d_aug * n * n_rest
    per_sample = max(n * n, n * n_rest, d_aug * d_aug)
    chunk = min(b, max(1, int(_BLOCK_BYTES // (e * per_sample))))
    chunk_set = e * chunk * (n * n + d_aug * d_aug + n * n_rest + d_aug)
    forming = gn + j_rest + max(
        e * b * (R * n * K + n),  # the 4-D temporary
        e * n_rest * n_rest,
        uu + ur + 2.0 * chunk_set + max(uu, ur),
        2.0 * uu + 2.0 * ur + chunk_set)
    core = max(forming,
               gn + e * p + _cholesky_bytes(p, 8),
               2.0 * gn + _transient_bytes(b, n, K, R, p, 8))
    inputs = _inputs_bytes(b, d_aug, n, K, s)
    promoted = 0.0 if s == 8 else _inputs_bytes(b, d_aug, n, K, 8)
    lin = _linearization_bytes(b, n, K, R, p, 8)
    return inputs + max(promoted + lin + core, _line_search_bytes(b, n, K, p, s))


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
    R = K if rank is None else int(rank)
    s = int(itemsize)
    return {"dual": _dual_bytes(b, d_aug, n, K, R, p, s, bool(per_unit),
                                bool(fit_intercept)),
            "primal": _primal_bytes(b, d_aug, n, K, R, p_u, n_rest, p, s)}


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
