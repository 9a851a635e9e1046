"""Element-wise activations ρ and derivatives ρ' in one fused numba pass.

Every form is overflow-free for |a| up to (and well beyond) 1e4: exponentials
are only ever taken of non-positive arguments.
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from ._config import NUMBA_OPTIONS, njit


# ------------------------------------------------ exp of a non-positive number
# libm's exp is a call per element, which keeps LLVM from vectorizing a loop.
# In float32 the exponential is the Cephes polynomial (Cody-Waite reduction,
# degree-6 polynomial, 2^n from its bits): inlined, a loop over it runs on
# 8-wide SIMD; within 1 ulp of the exact value (tests/test_activations.py).
# float64 keeps libm's exp, so float64 results do not change.
def _float32_from_bits(bits):
    """The float32 whose bit pattern is the int32 ``bits``."""
    return np.int32(bits).view(np.float32)


@intrinsic
def _bitcast_float32(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@overload(_float32_from_bits, jit_options=NUMBA_OPTIONS)
def _float32_from_bits_overload(bits):
    return lambda bits: _bitcast_float32(bits)


@njit(**NUMBA_OPTIONS)
def _exp_nonpositive32(x):
    """``exp(x)`` of a float32 ``x ≤ 0`` (0 below −87.3, NaN for NaN)."""
    lo = np.float32(-87.33654)
    xc = lo if x < lo else x
    n = np.floor(xc * np.float32(1.44269504) + np.float32(0.5))
    r = xc - n * np.float32(0.693359375) - n * np.float32(-2.12194440e-4)
    y = ((((((np.float32(1.9875691500e-4) * r + np.float32(1.3981999507e-3)) * r
            + np.float32(8.3334519073e-3)) * r + np.float32(4.1665795894e-2)) * r
          + np.float32(1.6666665459e-1)) * r + np.float32(5.0000001201e-1)) * (r * r)
         + r + np.float32(1.0))
    y = y * _float32_from_bits((np.int32(n) + np.int32(127)) << np.int32(23))
    return np.float32(0.0) if x < lo else y


def exp_nonpositive(x):
    """``exp(x)`` for ``x ≤ 0``: the polynomial above for a float32 ``x``,
    libm's otherwise."""
    if isinstance(x, np.float32):
        return _exp_nonpositive32(x)
    return math.exp(x)


@overload(exp_nonpositive, jit_options=NUMBA_OPTIONS)
def _exp_nonpositive_overload(x):
    if x == types.float32:
        return lambda x: _exp_nonpositive32(x)
    return lambda x: math.exp(x)


@njit(**NUMBA_OPTIONS)
def _sigmoid_pair_from_exp(a, e, one):
    """``(σ(a), σ(−a))`` from ``e = exp(−|a|)`` (``one``: 1 in a's
    precision)."""
    big = one / (one + e)  # σ(|a|)
    small = e * big  # σ(−|a|)
    if a >= 0:
        return big, small
    return small, big


@njit(**NUMBA_OPTIONS)
def _sigmoid_pair(a, one):
    """``(σ(a), σ(−a))`` from one exponential of a non-positive argument."""
    return _sigmoid_pair_from_exp(a, exp_nonpositive(-abs(a)), one)


# One kernel per activation, ``kernel(pre, out, out_deriv, with_deriv)``:
# ρ(pre) into ``out`` and, if ``with_deriv``, ρ'(pre) into ``out_deriv``
# (flat arrays of pre's dtype; one exponential per element). A fit compiles
# only its own activation's loop.
@njit(**NUMBA_OPTIONS)
def _exp_neg_abs_kernel(pre, e):
    for r in range(pre.size):
        e[r] = exp_nonpositive(-abs(pre[r]))


def exp_neg_abs(pre):
    """``exp(−|a|)`` per element of flat ``pre``, a new array of its dtype.

    float64: NumPy's SIMD exponential (a numba loop calls libm's scalar
    ``exp`` there: the silu activation took 46-69 us for 128 x 100 entries,
    8x its float32 time); float32: the package's vectorized polynomial
    (``exp_nonpositive``), as fast and the numbers of earlier versions."""
    if pre.dtype == np.float64:
        e = np.abs(pre)
        np.negative(e, out=e)
        return np.exp(e, out=e)
    e = np.empty_like(pre)
    _exp_neg_abs_kernel(pre, e)
    return e


@njit(**NUMBA_OPTIONS)
def _silu_from_exp(pre, e, out, out_deriv, with_deriv):
    """silu from ``e = exp(−|a|)`` (its own array: a shared one would stop
    LLVM from vectorizing the loop)."""
    one = pre.dtype.type(1.0)
    for r in range(pre.size):
        a = pre[r]
        s, s_neg = _sigmoid_pair_from_exp(a, e[r], one)
        out[r] = a * s
        if with_deriv:
            out_deriv[r] = s * (one + a * s_neg)


def _silu(pre, out, out_deriv, with_deriv):
    """silu: a·σ(a);  ρ' = σ(a)(1 + a σ(−a)), σ from one exponential of
    −|a| per element (:func:`exp_neg_abs`)."""
    _silu_from_exp(pre, exp_neg_abs(pre), out, out_deriv, with_deriv)


@njit(**NUMBA_OPTIONS)
def _relu(pre, out, out_deriv, with_deriv):
    """relu; ρ'(0) = 0."""
    for r in range(pre.size):
        a = pre[r]
        positive = a > 0
        out[r] = a if positive else 0.0
        if with_deriv:
            out_deriv[r] = 1.0 if positive else 0.0


@njit(**NUMBA_OPTIONS)
def _tanh(pre, out, out_deriv, with_deriv):
    """tanh; ρ' = 1/cosh² (keeps relative accuracy in the tails, where
    1 − tanh² rounds to 0; cosh → inf gives 0)."""
    for r in range(pre.size):
        a = pre[r]
        out[r] = math.tanh(a)
        if with_deriv:
            ch = math.cosh(a)
            out_deriv[r] = 1.0 / (ch * ch)


@njit(**NUMBA_OPTIONS)
def _sigmoid(pre, out, out_deriv, with_deriv):
    """sigmoid; ρ' = σ(a) σ(−a)."""
    one = pre.dtype.type(1.0)
    for r in range(pre.size):
        s, s_neg = _sigmoid_pair(pre[r], one)
        out[r] = s
        if with_deriv:
            out_deriv[r] = s * s_neg


@njit(**NUMBA_OPTIONS)
def _softplus(pre, out, out_deriv, with_deriv):
    """softplus: max(a, 0) + log1p(exp(−|a|)); ρ' = σ(a)."""
    for r in range(pre.size):
        a = pre[r]
        e = math.exp(-abs(a))
        out[r] = max(a, 0.0) + math.log1p(e)
        if with_deriv:
            big = 1.0 / (1.0 + e)
            out_deriv[r] = big if a >= 0 else e * big


@njit(**NUMBA_OPTIONS)
def _identity(pre, out, out_deriv, with_deriv):
    """identity; ρ' = 1."""
    for r in range(pre.size):
        out[r] = pre[r]
        if with_deriv:
            out_deriv[r] = 1.0


ACTIVATIONS = {"silu": _silu, "relu": _relu, "tanh": _tanh, "sigmoid": _sigmoid,
               "softplus": _softplus, "identity": _identity}


def activate(pre, activation, with_deriv=True):
    """Apply an activation element-wise, optionally with its derivative.

    Parameters
    ----------
    pre : ndarray of shape (n_samples, n_hidden)
        Pre-activations, C-contiguous float32 or float64.
    activation : {"silu", "relu", "tanh", "sigmoid", "softplus", "identity"}
        Name of the activation.
    with_deriv : bool, default=True
        Whether to compute the derivative as well.

    Returns
    -------
    rho : ndarray of shape (n_samples, n_hidden)
        ρ(pre), same dtype as ``pre``.
    rho_d : ndarray of shape (n_samples, n_hidden) or None
        ρ'(pre) when ``with_deriv`` is true.
    """
    pre = np.ascontiguousarray(pre)
    out = np.empty_like(pre)
    out_deriv = np.empty_like(pre) if with_deriv else np.empty(0, pre.dtype)
    ACTIVATIONS[activation](pre.reshape(-1), out.reshape(-1),
                            out_deriv.reshape(-1), with_deriv)
    return out, (out_deriv if with_deriv else None)
