"""Slow, obviously-correct dense references for the numerical tests.

Everything here is written from SPEC's formulas with explicit loops or dense
matrices, independently of the package's structured kernels: an explicit
Jacobian J (bK × p), an explicit block-diagonal Q, and the three textbook
forms of the GGN-SCORE direction.
"""

import numpy as np

# ---------------------------------------------------------------- activations


def naive_activation(a, name):
    """ρ(a) and ρ'(a) in plain NumPy (float64, small |a| only)."""
    sig = 1.0 / (1.0 + np.exp(-a))
    if name == "silu":
        return a * sig, sig + a * sig * (1 - sig)
    if name == "relu":
        return np.maximum(a, 0.0), (a > 0).astype(float)
    if name == "tanh":
        return np.tanh(a), 1 - np.tanh(a) ** 2
    if name == "sigmoid":
        return sig, sig * (1 - sig)
    if name == "softplus":
        return np.log(1 + np.exp(a)), sig
    if name == "identity":
        return a.copy(), np.ones_like(a)
    raise ValueError(name)


# ---------------------------------------------------------------- network


class DenseNetwork:
    """θ = [U (n×d) row-major, b_h (n), V (n×K) row-major, b_o (K)] here —
    deliberately a different layout from the package's."""

    def __init__(self, U, V, b_h, b_o, kappa, activation):
        self.U, self.V = np.array(U, float), np.array(V, float)
        self.b_h = None if b_h is None else np.array(b_h, float)
        self.b_o = None if b_o is None else np.array(b_o, float)
        self.kappa, self.activation = kappa, activation
        self.n, self.d = self.U.shape
        self.K = self.V.shape[1]

    def theta(self):
        parts = [self.U.ravel()]
        if self.b_h is not None:
            parts.append(self.b_h)
        parts.append(self.V.ravel())
        if self.b_o is not None:
            parts.append(self.b_o)
        return np.concatenate(parts)

    def with_theta(self, theta):
        n, d, K = self.n, self.d, self.K
        pos = 0
        U = theta[pos:pos + n * d].reshape(n, d)
        pos += n * d
        b_h = None
        if self.b_h is not None:
            b_h = theta[pos:pos + n]
            pos += n
        V = theta[pos:pos + n * K].reshape(n, K)
        pos += n * K
        b_o = theta[pos:pos + K] if self.b_o is not None else None
        return DenseNetwork(U, V, b_h, b_o, self.kappa, self.activation)

    def forward(self, X):
        pre = X @ self.U.T + (0 if self.b_h is None else self.b_h)
        rho, _ = naive_activation(pre, self.activation)
        return self.kappa * rho @ self.V + (0 if self.b_o is None else self.b_o)

    def jacobian(self, X):
        """Explicit J of the stacked outputs (row k*K + c), from SPEC §5."""
        b = X.shape[0]
        n, d, K, kap = self.n, self.d, self.K, self.kappa
        pre = X @ self.U.T + (0 if self.b_h is None else self.b_h)
        rho, drho = naive_activation(pre, self.activation)
        p = self.theta().size
        J = np.zeros((b * K, p))
        for k in range(b):
            for c in range(K):
                row = k * K + c
                col = 0
                for i in range(n):
                    for j in range(d):
                        J[row, col] = kap * self.V[i, c] * drho[k, i] * X[k, j]
                        col += 1
                if self.b_h is not None:
                    for i in range(n):
                        J[row, col] = kap * self.V[i, c] * drho[k, i]
                        col += 1
                for i in range(n):
                    for c2 in range(K):
                        J[row, col] = kap * rho[k, i] * (c == c2)
                        col += 1
                if self.b_o is not None:
                    for c2 in range(K):
                        J[row, col] = float(c == c2)
                        col += 1
        return J


def finite_difference_jacobian(func, x, eps=1e-6):
    """Central differences of a vector function."""
    f0 = np.atleast_1d(func(x))
    J = np.zeros((f0.size, x.size))
    for i in range(x.size):
        step = np.zeros_like(x)
        step[i] = eps
        J[:, i] = (np.atleast_1d(func(x + step)) - np.atleast_1d(func(x - step))) / (
            2 * eps
        )
    return J


# ---------------------------------------------------------------- losses


def naive_risk(F, Y, s, loss):
    if loss == "squared_error":
        return 0.5 * np.sum(s[:, None] * (F - Y) ** 2) / F.shape[1]
    if loss == "poisson":
        # half Poisson deviance of the mean exp(F), averaged over outputs:
        # y log(y / m) − y + m, with 0 log 0 = 0
        m = np.exp(F)
        with np.errstate(divide="ignore", invalid="ignore"):
            ylog = np.where(Y > 0, Y * np.log(Y / m), 0.0)
        return np.sum(s[:, None] * (ylog - Y + m)) / F.shape[1]
    if loss == "multilabel_log_loss":  # K independent sigmoids, summed
        p = 1 / (1 + np.exp(-F))
        return -np.sum(s[:, None] * (Y * np.log(p) + (1 - Y) * np.log(1 - p)))
    if F.shape[1] == 1:
        p = 1 / (1 + np.exp(-F[:, 0]))
        return -np.sum(s * (Y[:, 0] * np.log(p) + (1 - Y[:, 0]) * np.log(1 - p)))
    P = np.exp(F - F.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return -np.sum(s * np.log(np.sum(P * Y, axis=1)))


def naive_residual_and_curvature(F, Y, s, loss):
    """Stacked e (bK) and the dense block-diagonal Q (bK × bK)."""
    b, K = F.shape
    Q = np.zeros((b * K, b * K))
    if loss == "squared_error":
        e = (s[:, None] * (F - Y) / K).ravel()
        for k in range(b):
            Q[k * K:(k + 1) * K, k * K:(k + 1) * K] = s[k] / K * np.eye(K)
        return e, Q
    if loss == "poisson":
        m = np.exp(F)
        e = (s[:, None] * (m - Y) / K).ravel()
        for k in range(b):
            Q[k * K:(k + 1) * K, k * K:(k + 1) * K] = np.diag(s[k] * m[k] / K)
        return e, Q
    if loss == "multilabel_log_loss":
        p = 1 / (1 + np.exp(-F))
        e = (s[:, None] * (p - Y)).ravel()
        for k in range(b):
            Q[k * K:(k + 1) * K, k * K:(k + 1) * K] = np.diag(s[k] * p[k] * (1 - p[k]))
        return e, Q
    if K == 1:
        p = 1 / (1 + np.exp(-F[:, 0]))
        e = s * (p - Y[:, 0])
        Q[np.arange(b), np.arange(b)] = s * p * (1 - p)
        return e, Q
    P = np.exp(F - F.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    e = (s[:, None] * (P - Y)).ravel()
    for k in range(b):
        Q[k * K:(k + 1) * K, k * K:(k + 1) * K] = s[k] * (
            np.diag(P[k]) - np.outer(P[k], P[k])
        )
    return e, Q


def naive_true_vs_rest(F, Y, s):
    """Block-diagonal Q̃: s_k π_y (1 − π_y) (e_y − r)(e_y − r)ᵀ, r = π_{−y}/(1 − π_y)."""
    b, K = F.shape
    P = np.exp(F - F.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    Q = np.zeros((b * K, b * K))
    for k in range(b):
        y = int(np.argmax(Y[k]))
        r = P[k].copy()
        r[y] = 0.0
        r /= 1.0 - P[k, y]
        v = -r
        v[y] += 1.0
        Q[k * K:(k + 1) * K, k * K:(k + 1) * K] = (
            s[k] * P[k, y] * (1 - P[k, y]) * np.outer(v, v))
    return Q


def naive_per_unit(dense, H_dense):
    """H̃ in the naive layout: each hidden unit's U row, bias and V row get
    the mean of H over them; the output biases keep theirs."""
    n, d, K = dense.n, dense.d, dense.K
    H = H_dense.copy()
    pos_U = np.arange(n * d).reshape(n, d)
    pos = n * d
    pos_bh = None
    if dense.b_h is not None:
        pos_bh = pos + np.arange(n)
        pos += n
    pos_V = pos + np.arange(n * K).reshape(n, K)
    for i in range(n):
        idx = list(pos_U[i]) + ([pos_bh[i]] if pos_bh is not None else []) + list(
            pos_V[i])
        H[idx] = np.mean(H_dense[idx])
    return H


# ---------------------------------------------------------------- regularizers


def naive_pseudo_huber(t, mu):
    """The paper's written form (μ² − μ sqrt(μ²+t²) + t²)/sqrt(μ²+t²)."""
    r = np.sqrt(mu**2 + t**2)
    return (mu**2 - mu * r + t**2) / r


# ---------------------------------------------------------------- the step


def dense_directions(J, Q, e, grad_g, H):
    """The GGN-SCORE direction three ways, all dense and textbook.

    Returns ``(primal, woodbury, augmented)`` where

    * primal:    (Jᵀ Q J + H)⁻¹ (Jᵀ e + ∇g)
    * woodbury:  D r − D Jᵀ (I + Q J D Jᵀ)⁻¹ Q J D r        (non-symmetric)
    * augmented: H⁻¹ Ĵᵀ (I + Q̂ Ĵ H⁻¹ Ĵᵀ)⁻¹ ê  with Ĵ = [J; ∇gᵀ],
      Q̂ = blkdiag(Q, 0), ê = [e; 1]  (the paper's convenient form)
    """
    D = np.diag(1.0 / H)
    r = J.T @ e + grad_g
    primal = np.linalg.solve(J.T @ Q @ J + np.diag(H), r)
    m = J.shape[0]
    woodbury = D @ r - D @ J.T @ np.linalg.solve(
        np.eye(m) + Q @ J @ D @ J.T, Q @ J @ D @ r
    )
    J_aug = np.vstack([J, grad_g[None, :]])
    Q_aug = np.zeros((m + 1, m + 1))
    Q_aug[:m, :m] = Q
    e_aug = np.append(e, 1.0)
    augmented = D @ J_aug.T @ np.linalg.solve(
        np.eye(m + 1) + Q_aug @ J_aug @ D @ J_aug.T, e_aug
    )
    return primal, woodbury, augmented


def naive_huber_risk(F, Y, s, epsilon):
    """Huber's loss of r = F − Y with threshold ε, averaged over outputs."""
    r = np.abs(F - Y)
    h = np.where(r <= epsilon, 0.5 * r**2, epsilon * (r - 0.5 * epsilon))
    return np.sum(s[:, None] * h) / F.shape[1]


def naive_huber_residual_and_curvature(F, Y, s, epsilon):
    """Stacked e (bK) and the dense diagonal Q (bK × bK) of Huber's loss:
    h' = clip(r, −ε, ε), h'' = 1{|r| ≤ ε}."""
    b, K = F.shape
    r = F - Y
    e = (s[:, None] * np.clip(r, -epsilon, epsilon) / K).ravel()
    Q = np.diag((s[:, None] * (np.abs(r) <= epsilon) / K).ravel())
    return e, Q


def block_factor(factor):
    """Dense block-diagonal A from the (b, K, K) factor."""
    b, K, _ = factor.shape
    A = np.zeros((b * K, b * K))
    for k in range(b):
        A[k * K:(k + 1) * K, k * K:(k + 1) * K] = factor[k]
    return A


# ---------------------------------------------------------------- input maps


def naive_quantile_edges(column, n_bins, w=None):
    """The distinct values among the quantiles at levels ``j / n_bins`` of a
    column, read off its sorted values with rows repeated by integer
    weight (the smallest value whose empirical CDF reaches the level)."""
    w = np.ones(len(column), dtype=int) if w is None else np.asarray(w, dtype=int)
    col = np.sort(np.repeat(np.asarray(column, dtype=float), w))
    n = len(col)
    return np.unique([col[max(int(np.ceil(j / n_bins * n)) - 1, 0)]
                      for j in range(n_bins + 1)])


def naive_piecewise_linear(x, edges):
    """The piecewise-linear encoding of one value, element by element:
    ``min(1, max(0, (x − b_{j−1}) / (b_j − b_{j−1})))`` for j = 1..T."""
    return [min(1.0, max(0.0, (x - edges[j - 1]) / (edges[j] - edges[j - 1])))
            for j in range(1, len(edges))]
