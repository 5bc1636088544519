"""Linear SVMs with a piecewise-linear loss solved exactly: the hinge (LinearSVC loss="hinge") and the
epsilon-insensitive loss with ε = 0 (LinearSVR), many problems on the same rows at once.

Column l of a batch is the problem

    min_w  P_l(w) = ½‖w‖² + C_l Σ_i φ_il(x_i·w),    φ_il(u) = a_il·max(0, k_il − u) + b_il·max(0, u − k_il),

- hinge with label y = ±1: kink k = y, (a, b) = (1, 0) for y = +1 and (0, 1) for y = −1;
- absolute error (ε-insensitive, ε = 0) with target y: k = y, (a, b) = (1, 1);
- a = b = 0 leaves row i out of column l, so the folds of a cross-validation, the labels of a one-vs-rest model,
  the draws of a few-shot run and the values of C are columns of one batch over the same rows.

Its dual is max_β Σ_i β_i k_i − ½‖Xᵀβ‖² with −C·b_i ≤ β_i ≤ C·a_i, and w = Xᵀβ at the optimum. For any such
β and w = Xᵀβ the duality gap is Σ_i [C·φ_i(x_i·w) − β_i·(k_i − x_i·w)], a sum of terms each ≥ 0, zero exactly at
the optimum: the certificate a solution must pass here (relative to the objective, `GAP_TOLERANCE`).

Method: a primal-dual interior-point method (Mehrotra's predictor-corrector) on the dual, a box-constrained QP over
each column's own rows, all columns at once; its Newton systems are solved over the rows (K + D, m × m) where a
column has few rows, over the features where it has many (d × d systems, with the d rows nearest their kinks kept
apart so that no vanishing D is ever inverted: `_Batch._factor`). Over the rows, K = X Xᵀ is formed once per
distinct row set (a fold's labels and values of C share it) and everything up to the certificate works from it:
K β, the kink rows' systems and the screening gaps cost m² a column, not m·d (at a model's width, 768-d, few-shot
columns have 16–50 rows). Once the barrier is small the exact finish: the rows whose β is strictly inside its box
are taken to lie on the kink (x_i·w = k_i), the others keep β at their bound, which leaves a linear system for the
kink rows' β (least norm: solved directly where its Cholesky pivots show full rank, through its
eigendecomposition only where it is rank-deficient); that β, clipped to its box, is accepted when the duality gap
of w = Xᵀβ, computed from w itself, passes (so is the iterate itself, a point of the box, where the optimum is
degenerate: more rows on their kinks than X has rank). Otherwise the interior-point method goes on (the barrier
shrinks further, so the partition it points to becomes the optimum's) and the finish is tried again. A guess (a
neighbouring C's solution: along a grid, the same batch's β at the previous C) lets the finish be tried on its
partition first. No iteration count ends a solve with an uncertified answer silently: a column still uncertified
when its barrier reaches its floor (or after `_MOST_ITERATIONS`) is reported (`Solution.certified`), never passed
off as the optimum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scidocs_eval.lazy_modules import lazy_module

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

np = lazy_module("numpy", __name__)

GAP_TOLERANCE = 1e-12
"""A solution is certified when its duality gap, less what rounding in the distances to the kinks can leave in it,
is at most this times its objective (so its objective is within that relative distance of the optimum)."""
_FIRST_FINISH = 1e-6
"""Barrier (mean complementarity, relative to C times the kinks' typical size) at which the finish is first tried;
each later try waits for the barrier to fall by `_FINISH_STEP` more."""
_FINISH_STEP = 1e-2
_SMALLEST_BARRIER = 1e-30
"""Relative barrier below which a column is given up as uncertified (reported, never passed off)."""
_MOST_ITERATIONS = 500
"""Interior-point iterations after which a column is given up as uncertified (reported): a safety net only, a
column certifies in 10–40."""
_TO_BOUNDARY = 0.995
"""Fraction of the longest step to the boundary of the positive orthant that a step takes."""
_RANK_TOLERANCE = 1e-13
"""Eigenvalues of X_M X_Mᵀ below this times the largest are rounding: dropped (X_M's rank)."""
_PIVOT_TOLERANCE = 1e-10
"""A kink rows' Gram matrix whose smallest Cholesky pivot is below this times its largest is solved through its
eigendecomposition (least norm, rank-deficient or nearly so), the others directly (`_least_norm`)."""
_ROUNDING = 64 * 2.0**-52
"""Relative error allowed in one distance to a kink when the gap is judged (rounding in x_i·w, with a margin): 64
times float64's machine epsilon."""
_ROWS_FACTOR = 2
_ACTIVE_SET_PASSES = 3
"""Passes of the active-set finish from the interior-point iterate's partition before the iterate goes on."""
_CHUNK_FLOATS = 2**20
"""Floats of one chunk's gathered rows (columns × rows × dim): columns are solved in chunks of about this size."""


_CONTROLLER: list[ThreadpoolController] = []


def one_blas_thread() -> Any:
    """A context with BLAS limited to one thread. The controller is made once: threadpoolctl's `threadpool_limits`
    looks through every loaded library on each call (6 ms in a process that has loaded torch and FAISS, more than
    a small solve takes)."""
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


@dataclass
class Solution:
    """weights (dim, columns); per column: its relative duality gap and whether it passed `GAP_TOLERANCE`."""

    weights: np.ndarray
    gap: np.ndarray
    certified: np.ndarray


def hinge_columns(labels: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kinks, left, right) for hinge problems: labels (n, columns) of 0/1 (1: the positive class), rows (n,
    columns) bool: which rows each column trains on."""
    positive = labels == 1
    kinks = np.where(positive, 1.0, -1.0)
    return kinks, (positive & rows).astype(np.float64), (~positive & rows).astype(np.float64)


def absolute_error_columns(targets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kinks, left, right) for ε-insensitive problems with ε = 0: targets (n,), rows (n, columns) bool."""
    kinks = np.repeat(np.asarray(targets, dtype=np.float64)[:, None], rows.shape[1], axis=1)
    used = rows.astype(np.float64)
    return kinks, used, used.copy()


class PiecewiseLinearSVM:
    """The batch of problems above on fixed rows x (n, dim): kinks, left (a), right (b), each (n, columns)."""

    def __init__(self, x: np.ndarray, kinks: np.ndarray, left: np.ndarray, right: np.ndarray):
        self.x = np.asarray(x, dtype=np.float64)
        self.kinks, self.left, self.right = (np.asarray(a, dtype=np.float64) for a in (kinks, left, right))

    def objective(self, c: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """P_l(w_l) for each column: c (columns,), weights (dim, columns)."""
        t = self.kinks - self.x @ weights
        loss = self.left * np.maximum(t, 0) + self.right * np.maximum(-t, 0)
        return 0.5 * np.sum(weights**2, axis=0) + c * loss.sum(axis=0)

    def solve(self, c: np.ndarray | float, guess: np.ndarray | None = None) -> Solution:
        """Each column's optimum at its C (c: scalar or (columns,)). `guess` (dim, columns): weights near the
        optimum (a neighbouring C's, say): the finish is tried first on the partition they point to, and only the
        columns it leaves uncertified go through the interior-point method. It changes the time, never the
        answer."""
        columns = self.kinks.shape[1]
        c = np.broadcast_to(np.asarray(c, dtype=np.float64), (columns,))
        weights, gap = np.zeros((self.x.shape[1], columns)), np.zeros(columns)
        certified = np.ones(columns, dtype=bool)
        # these products are small: BLAS threads cost more in synchronisation than they gain
        with one_blas_thread():
            for chunk, batch in self.batches():
                weights[:, chunk], gap[chunk], certified[chunk], _ = batch.solve(
                    c[chunk], guess_weights=None if guess is None else guess[:, chunk].T)
        return Solution(weights, gap, certified)

    def batches(self) -> Iterator[tuple[np.ndarray, _Batch]]:
        """(columns, their `_Batch`) in chunks of about `_CHUNK_FLOATS` gathered floats, one made at a time;
        columns without rows (w = 0 is their optimum) are in none."""
        columns, dim = self.kinks.shape[1], self.x.shape[1]
        used = (self.left + self.right) > 0
        counts = used.sum(axis=0)
        # columns with similar row counts share a chunk, so little of a chunk is padding
        order = np.argsort(counts, kind="stable")
        start = 0
        while start < columns:
            end = start + 1  # ascending counts: the chunk's last column has the most rows
            while end < columns and counts[order[end]] * (end + 1 - start) * dim <= _CHUNK_FLOATS:
                end += 1
            chunk = order[start:end]
            start = end
            if counts[chunk].max():
                yield chunk, _Batch(self.x, self.kinks[:, chunk], self.left[:, chunk], self.right[:, chunk],
                                    used[:, chunk])


class _Batch:
    """Columns gathered onto their own rows (padded to the longest): x (B, m, dim), and the dual's box per row."""

    def __init__(self, x: np.ndarray, kinks: np.ndarray, left: np.ndarray, right: np.ndarray, used: np.ndarray):
        counts = used.sum(axis=0)
        m = int(counts.max())
        # each column's rows first, in order, then padding (row 0, masked out)
        index = np.argsort(~used, axis=0, kind="stable")[:m].T
        self.valid = np.arange(m)[None, :] < counts[:, None]
        index = np.where(self.valid, index, 0)
        take = np.arange(index.shape[0])[:, None]
        self.x = x[index]
        self.x[~self.valid] = 0.0
        self.kinks = kinks.T[take, index] * self.valid
        self.left, self.right = left.T[take, index] * self.valid, right.T[take, index] * self.valid
        typical = _median(np.abs(self.kinks), counts)
        self.typical = np.where(typical > 0, typical, 1.0)
        dim = x.shape[1]
        self.by_rows = m <= _ROWS_FACTOR * dim
        if self.by_rows:  # K once for each distinct set of rows (the labels and values of C of a fold share one)
            rows, kernel_of = np.unique(np.where(self.valid, index, -1), axis=0, return_inverse=True)
            distinct = x[np.maximum(rows, 0)] * (rows >= 0)[:, :, None]
            kernel = distinct @ distinct.transpose(0, 2, 1)
            self.kernel = kernel[kernel_of.reshape(-1)]
            self.kernel_magnitude = np.abs(self.kernel)

    def solve(self, c: np.ndarray, guess_weights: np.ndarray | None = None, guess_beta: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(weights (dim, B), gap, certified, β (B, m)) of each column at its C (c: (B,)), the finish tried first on
        the partition a guess points to: weights (B, dim) or a β of these rows (B, m), whose distances come from
        K (a neighbouring C's answer on the same batch)."""
        self.c = c
        self.upper, self.lower = c[:, None] * self.left, -c[:, None] * self.right
        self.scale = c * self.typical
        batch, m = self.valid.shape
        valid = self.valid
        beta = np.where(valid, 0.5 * (self.lower + self.upper), 0.0)
        # the slacks β − lower and upper − β are kept apart from β: near a bound, upper − β would lose its digits
        slack_low = np.where(valid, beta - self.lower, 1.0)
        slack_up = np.where(valid, self.upper - beta, 1.0)
        gradient = self._kernel_times(np.arange(batch), beta) - self.kinks
        # dual feasible start: gradient − z_l + z_u = 0
        z_low = np.where(valid, np.maximum(gradient, 0) + self.scale[:, None] / np.maximum(self.c[:, None], 1e-300),
                         0.0)
        z_up = np.where(valid, z_low - gradient, 0.0)
        weights = np.zeros((batch, self.x.shape[2]))
        answer = np.zeros((batch, m))
        gap = np.full(batch, np.inf)
        certified = np.zeros(batch, dtype=bool)
        next_finish = np.full(batch, _FIRST_FINISH)
        iterations = np.zeros(batch, dtype=int)
        running = np.arange(batch)
        if guess_weights is not None or guess_beta is not None:
            sides = _sides(valid, self._weights_distances(running, guess_weights),
                           self._weights_sizes(running, guess_weights)) if guess_beta is None else \
                _sides(valid, self._distances(running, guess_beta), self._sizes(running, guess_beta))
            weights, gap, answer = self._finish(running, *sides)
            certified = gap <= GAP_TOLERANCE
            running = running[~certified]
        while running.size:
            sub = running
            ok = valid[sub]
            s_low, s_up = slack_low[sub], slack_up[sub]
            zl, zu = z_low[sub], z_up[sub]
            counts = ok.sum(axis=1)
            mu = (np.sum(s_low * zl + s_up * zu, axis=1)) / (2 * counts)
            relative = mu / self.scale[sub]
            trying = relative <= next_finish[sub]
            if trying.any():
                tried = sub[trying]
                finished, finished_gap, finished_beta = self._finish(tried, s_low[trying] < zl[trying],
                                                                     s_up[trying] < zu[trying])
                # where the multipliers do not tell the sides apart yet (rows whose distance to the kink is
                # small beside their slack), the signs of the iterate's distances k − x·w may
                failed = finished_gap > GAP_TOLERANCE
                if failed.any():
                    columns, now = tried[failed], beta[tried[failed]]
                    again, again_gap, again_beta = self._finish(columns, *_sides(
                        valid[columns], self._distances(columns, now), self._sizes(columns, now)))
                    improved = np.flatnonzero(failed)[again_gap < finished_gap[failed]]
                    chosen = again_gap < finished_gap[failed]
                    finished[improved], finished_gap[improved] = again[chosen], again_gap[chosen]
                    finished_beta[improved] = again_beta[chosen]
                # and the iterate itself, a point of the box: where more rows sit on their kinks than X has rank
                # (a degenerate optimum, e.g. w = intercept only at a small C), no partition's least-norm β need
                # lie in the box, but the iterate's gap goes to 0 with the barrier
                failed = finished_gap > GAP_TOLERANCE
                if failed.any():
                    inside = tried[failed]
                    itself_beta = np.clip(beta[inside], self.lower[inside], self.upper[inside]) * valid[inside]
                    itself, itself_gap = self._judge(inside, itself_beta)
                    improved = np.flatnonzero(failed)[itself_gap < finished_gap[failed]]
                    chosen = itself_gap < finished_gap[failed]
                    finished[improved], finished_gap[improved] = itself[chosen], itself_gap[chosen]
                    finished_beta[improved] = itself_beta[chosen]
                better = finished_gap < gap[tried]
                gap[tried[better]], weights[tried[better]] = finished_gap[better], finished[better]
                answer[tried[better]] = finished_beta[better]
                certified[tried] = finished_gap <= GAP_TOLERANCE
                next_finish[tried] = relative[trying] * _FINISH_STEP
            given_up = (relative < _SMALLEST_BARRIER) | (iterations[sub] >= _MOST_ITERATIONS)
            going = ~certified[sub] & ~given_up
            running = sub[going]
            if not running.size:
                break
            sub, ok = running, ok[going]
            s_low, s_up, zl, zu, mu = s_low[going], s_up[going], zl[going], zu[going], mu[going]
            residual = np.where(ok, self._kernel_times(sub, beta[sub]) - self.kinks[sub] - zl + zu, 0.0)
            diagonal = np.where(ok, zl / s_low + zu / s_up, 1.0)
            factor = self._factor(sub, diagonal)
            # predictor (affine scaling), then Mehrotra's corrector with centring σ = (μ_aff / μ)³
            step = self._apply(sub, factor, diagonal, np.where(ok, -residual - zl + zu, 0.0))
            dzl, dzu = -zl - zl * step / s_low, -zu + zu * step / s_up
            alpha = np.minimum(_longest(s_low, step, ok), _longest(s_up, -step, ok))
            alpha = np.minimum(alpha, np.minimum(_longest(zl, dzl, ok), _longest(zu, dzu, ok)))
            a = alpha[:, None]
            mu_affine = np.sum(np.where(ok, (s_low + a * step) * (zl + a * dzl) + (s_up - a * step) * (zu + a * dzu),
                                        0.0), axis=1) / (2 * ok.sum(axis=1))
            target = ((mu_affine / mu) ** 3 * mu)[:, None]
            cross_low, cross_up = step * dzl, -step * dzu
            rhs = -residual + (target - cross_low) / s_low - zl - (target - cross_up) / s_up + zu
            step = self._apply(sub, factor, diagonal, np.where(ok, rhs, 0.0))
            dzl = (target - cross_low - s_low * zl - zl * step) / s_low
            dzu = (target - cross_up - s_up * zu + zu * step) / s_up
            alpha = np.minimum(_longest(s_low, step, ok), _longest(s_up, -step, ok))
            alpha = _TO_BOUNDARY * np.minimum(alpha, np.minimum(_longest(zl, dzl, ok), _longest(zu, dzu, ok)))
            a = alpha[:, None]
            slack_low[sub] = np.where(ok, s_low + a * step, 1.0)
            slack_up[sub] = np.where(ok, s_up - a * step, 1.0)
            beta[sub] = np.where(ok, np.where(slack_low[sub] < slack_up[sub], self.lower[sub] + slack_low[sub],
                                              self.upper[sub] - slack_up[sub]), 0.0)
            z_low[sub] = np.where(ok, zl + a * dzl, 0.0)
            z_up[sub] = np.where(ok, zu + a * dzu, 0.0)
            iterations[sub] += 1
        return weights.T, gap, certified, answer

    def _weights_distances(self, columns: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """k − x·w per row, for weights (B, dim)."""
        return self.kinks[columns] - _rows_times(self.x[columns], weights)

    def _weights_sizes(self, columns: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """|k| + |x|·|w| per row: the size of the terms of k − x·w, which its rounding scales with."""
        return np.abs(self.kinks[columns]) + _rows_times(np.abs(self.x[columns]), np.abs(weights))

    def _distances(self, columns: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """k − x·w per row for w = Xᵀβ: over the rows from K (K β), no pass over the features."""
        if not self.by_rows:
            return self._weights_distances(columns, _weights_of(self.x[columns], beta))
        return self.kinks[columns] - np.matmul(self.kernel[columns], beta[:, :, None])[:, :, 0]

    def _sizes(self, columns: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """The size of the terms of `_distances`: |k| + |K|·|β| over the rows, |k| + |x|·|w| over the features."""
        if not self.by_rows:
            return self._weights_sizes(columns, _weights_of(self.x[columns], beta))
        magnitude = self.kernel_magnitude[columns]
        return np.abs(self.kinks[columns]) + np.matmul(magnitude, np.abs(beta)[:, :, None])[:, :, 0]

    def _kernel_times(self, columns: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """K β per column (K = X Xᵀ over its rows): over the rows from K itself, m² a column instead of 2·m·dim."""
        if self.by_rows:
            return np.matmul(self.kernel[columns], beta[:, :, None])[:, :, 0]
        x = self.x[columns]
        return _rows_times(x, _weights_of(x, beta))

    def _factor(self, columns: np.ndarray, diagonal: np.ndarray) -> tuple[np.ndarray, ...]:
        """What solving (K + diag(D)) v = r needs per column.

        Over the rows: K + D itself. Over the features: the `dim` rows of smallest D (S: where the kink rows are,
        whose D tends to 0) are kept as unknowns and the others (L) eliminated through N = I + X_Lᵀ D_L⁻¹ X_L, so no
        D⁻¹ of a vanishing D is ever formed: (D_S + X_S N⁻¹ X_Sᵀ) v_S = r_S − X_S N⁻¹ X_Lᵀ D_L⁻¹ r_L, then
        v_L = D_L⁻¹ (r_L − X_L N⁻¹ (X_Sᵀ v_S + X_Lᵀ D_L⁻¹ r_L))."""
        if self.by_rows:
            matrix = self.kernel[columns]
            matrix[:, np.arange(diagonal.shape[1]), np.arange(diagonal.shape[1])] += diagonal
            return (matrix,)
        x = self.x[columns]
        dim = x.shape[2]
        small = np.argpartition(np.where(self.valid[columns], diagonal, np.inf), dim - 1, axis=1)[:, :dim]
        take = np.arange(len(columns))[:, None]
        inverse = 1.0 / diagonal
        inverse[take, small] = 0.0
        inner = (x * inverse[:, :, None]).transpose(0, 2, 1) @ x
        inner[:, np.arange(dim), np.arange(dim)] += 1.0
        inner = _inverse(inner)
        x_small = x[take, small]
        reduced = x_small @ inner @ x_small.transpose(0, 2, 1)
        reduced[:, np.arange(dim), np.arange(dim)] += diagonal[take, small]
        return inner, inverse, small, x_small, _inverse(reduced)

    def _apply(self, columns: np.ndarray, factor: tuple[np.ndarray, ...], diagonal: np.ndarray, rhs: np.ndarray
               ) -> np.ndarray:
        if self.by_rows:
            return _solve(factor[0], rhs)
        inner, inverse, small, x_small, reduced = factor
        x = self.x[columns]
        take = np.arange(len(columns))[:, None]
        projected = _weights_of(x, inverse * rhs)
        kept = np.einsum("bij,bj->bi", reduced, rhs[take, small] - np.einsum(
            "bsd,bd->bs", x_small, np.einsum("bij,bj->bi", inner, projected)))
        change = np.einsum("bij,bj->bi", inner, np.einsum("bsd,bs->bd", x_small, kept) + projected)
        step = inverse * (rhs - _rows_times(x, change))
        step[take, small] = kept
        return step

    def _finish(self, columns: np.ndarray, at_lower: np.ndarray, at_upper: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per column the exact solution of the partition the iterate points to (or of a few active-set passes
        from it): its weights, relative duality gap and β.

        Rows at a bound keep β there; the rest are taken to lie on the kink (`_kink_solution`). A primal-dual
        active-set pass then moves each row to where β_i + C·(k_i − x_i·w) puts it (below the box: its lower
        bound, above: its upper, inside: the kink), until the partition repeats or `_ACTIVE_SET_PASSES`; the β of
        least duality gap (`_gap`, from K over the rows), clipped to its box, is the answer, certified by its gap
        computed from w = Xᵀβ itself (`_judge`)."""
        valid = self.valid[columns]
        lower, upper = self.lower[columns], self.upper[columns]
        c = self.c[columns][:, None]
        best_beta = np.zeros(valid.shape)
        best_gap = np.full(len(columns), np.inf)
        open_ = np.arange(len(columns))
        for _ in range(_ACTIVE_SET_PASSES):
            beta, distance = self._kink_solution(columns[open_], at_lower[open_], at_upper[open_])
            clipped = np.clip(beta, lower[open_], upper[open_]) * valid[open_]
            gap = self._gap(columns[open_], clipped, self._distances(columns[open_], clipped), self._sizes, clipped)
            better = gap < best_gap[open_]
            best_gap[open_[better]], best_beta[open_[better]] = gap[better], clipped[better]
            moved = beta + c[open_] * distance
            next_lower, next_upper = valid[open_] & (moved < lower[open_]), valid[open_] & (moved > upper[open_])
            changed = np.any((next_lower != at_lower[open_]) | (next_upper != at_upper[open_]), axis=1)
            going = changed & (gap > GAP_TOLERANCE)
            at_lower[open_], at_upper[open_] = next_lower, next_upper
            open_ = open_[going]
            if not open_.size:
                break
        return *self._judge(columns, best_beta), best_beta

    def _kink_solution(self, columns: np.ndarray, at_lower: np.ndarray, at_upper: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """(β, k − x·w for w = Xᵀβ) per column: rows at a bound keep β there; the others (on the kink,
        x_i·w = k_i) get the least-norm β_M of X_M X_Mᵀ β_M = k_M − X_M X_Bᵀ β_B (`_least_norm`, two rounds of
        refinement). Over the rows, X_M X_Mᵀ and X_M Xᵀ β are read from the column's K; X_M itself serves the
        least-norm solve of a column with more kink rows than features."""
        valid = self.valid[columns]
        lower, upper, kinks, x = self.lower[columns], self.upper[columns], self.kinks[columns], self.x[columns]
        on_kink = valid & ~at_lower & ~at_upper
        beta = np.where(at_lower, lower, np.where(at_upper, upper, 0.0)) * valid
        # the kink rows first, in order, then padding
        counts = on_kink.sum(axis=1)
        width = max(int(counts.max()), 1)
        index = np.argsort(~on_kink, axis=1, kind="stable")[:, :width]
        present = np.arange(width)[None, :] < counts[:, None]
        take = np.arange(len(columns))[:, None]
        x_kink = x[take, index]
        if self.by_rows:
            kink_rows = self.kernel[columns[:, None], index]  # X_M Xᵀ

            def kink_times(beta: np.ndarray) -> np.ndarray:
                return np.matmul(kink_rows, beta[:, :, None])[:, :, 0]

            def gram_of(some: np.ndarray, rows: int) -> np.ndarray:
                return kink_rows[some[:, None, None], np.arange(rows)[None, :, None], index[some, None, :rows]]
        else:
            def kink_times(beta: np.ndarray) -> np.ndarray:
                return _rows_times(x_kink, _weights_of(x, beta))

            def gram_of(some: np.ndarray, rows: int) -> np.ndarray:
                first = x_kink[some, :rows]
                return first @ first.transpose(0, 2, 1)
        solve = _least_norm(present, x_kink, gram_of)
        for _ in range(3):
            residual = (kinks[take, index] - kink_times(beta)) * present
            beta[take, index] += solve(residual)
        return beta, self._distances(columns, beta) * valid

    def _judge(self, columns: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """w = Xᵀβ and its relative duality gap (`_gap`) computed from w itself, per column (β in its box): the
        certificate."""
        w = _weights_of(self.x[columns], beta)
        return w, self._gap(columns, beta, self._weights_distances(columns, w), self._weights_sizes, w,
                            np.sum(w**2, axis=1))

    def _gap(self, columns: np.ndarray, beta: np.ndarray, distance: np.ndarray,
             sizes: Callable[[np.ndarray, np.ndarray], np.ndarray], of: np.ndarray,
             squared_norm: np.ndarray | None = None) -> np.ndarray:
        """The relative duality gap of β (in its box) per column, from each row's distance k_i − x_i·w; where it
        exceeds `GAP_TOLERANCE`, less what rounding alone can leave in it (from the size of each distance's terms,
        `sizes(columns, of)` with `of` the β or w they came from, asked only there). ‖w‖² is βᵀ(k − distance)
        unless given."""
        valid, kinks = self.valid[columns], self.kinks[columns]
        distance = distance * valid
        left, right = self.left[columns], self.right[columns]
        c = self.c[columns][:, None]
        loss = left * np.maximum(distance, 0) + right * np.maximum(-distance, 0)
        gap = np.sum(np.maximum(c * loss - beta * distance, 0), axis=1)
        if squared_norm is None:
            squared_norm = np.sum(beta * (kinks - distance), axis=1)
        objective = np.maximum(0.5 * squared_norm + c[:, 0] * loss.sum(axis=1), np.finfo(float).tiny)
        relative = gap / objective
        doubtful = np.flatnonzero(relative > GAP_TOLERANCE)
        if doubtful.size:
            # each distance k_i − x_i·w is known to ~eps·(|k_i| + |x_i|·|w|)
            rounding = 2 * c[doubtful, 0] * _ROUNDING * np.sum(valid[doubtful] * sizes(columns[doubtful], of[doubtful]),
                                                                 axis=1)
            relative[doubtful] = np.maximum(gap[doubtful] - rounding, 0.0) / objective[doubtful]
        return relative


def _sides(valid: np.ndarray, distance: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(at lower, at upper) per row: a row off its kink by more than rounding (1e-9 of the size of its terms) is at
    the bound of its side (k − x·w > 0: upper), the others on the kink."""
    rounding = 1e-9 * size
    return valid & (distance < -rounding), valid & (distance > rounding)


def _median(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per row the median of its first `counts` values, as numpy's median takes it (the mean of the two middle
    ones for an even count); NaN for none (nanmedian over a masked array costs more than a small solve)."""
    ordered = np.sort(np.where(np.arange(values.shape[1])[None, :] < counts[:, None], values, np.inf), axis=1)
    rows = np.arange(len(values))
    low, high = np.maximum((counts - 1) // 2, 0), np.maximum(counts // 2, 0)
    middle = np.mean(np.stack([ordered[rows, np.minimum(low, values.shape[1] - 1)],
                               ordered[rows, np.minimum(high, values.shape[1] - 1)]]), axis=0)
    return np.where(counts > 0, middle, np.nan)


def _rows_times(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """x_b v_b per column: x (B, m, dim), v (B, dim) -> (B, m) (a batched product: einsum does not call BLAS)."""
    return np.matmul(x, v[:, :, None])[:, :, 0]


def _weights_of(x: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """x_bᵀ β_b per column: x (B, m, dim), β (B, m) -> (B, dim)."""
    return np.matmul(beta[:, None, :], x)[:, 0, :]


def _least_norm(present: np.ndarray, features: np.ndarray, gram_of: Callable[[np.ndarray, int], np.ndarray]
                ) -> Callable[[np.ndarray], np.ndarray]:
    """r -> the least-norm solution v of G v = r per column, for the Gram matrices G = X Xᵀ of the `present` rows
    (first in each column, then padding: zero in r and v) with their `features` X (B, w, dim); `gram_of(columns,
    m)` gives those columns' (len(columns), m, m) Gram matrices of their first m rows (padding masked here).

    A column with at most as many rows as features is solved over its own rows: its Gram matrix cut to the most
    rows such a column has (at most dim), not the batch's width (which a column with hundreds of kink rows sets).
    Where its Cholesky factorisation has no pivot below `_PIVOT_TOLERANCE` of its largest (full rank, well
    conditioned: the least-norm solution is the solution), an LU solve (a fraction of an eigendecomposition's
    cost); elsewhere the pseudo-inverse from its eigendecomposition, eigenvalues below `_RANK_TOLERANCE` of the
    largest dropped (X's rank). A column with more rows than features (G singular: rank at most dim) takes that
    pseudo-inverse through the eigendecomposition of XᵀX = V Λ Vᵀ instead, v = X V Λ⁻² Vᵀ Xᵀ r (the same
    eigenvalues): dim × dim, not w × w (hundreds of kink rows at 96 dimensions were most of a multi-label fit)."""
    counts = present.sum(axis=1)
    over_features = counts > features.shape[2]
    narrow, wide = np.flatnonzero(~over_features), np.flatnonzero(over_features)
    size = max(int(counts[narrow].max()), 1) if narrow.size else 1
    kept = present[narrow, :size]
    gram = gram_of(narrow, size) * (kept[:, :, None] & kept[:, None, :])
    padded = gram.copy()
    diagonal = padded[:, np.arange(size), np.arange(size)]
    scale = np.where(diagonal.max(axis=1) > 0, diagonal.max(axis=1), 1.0)
    padded[:, np.arange(size), np.arange(size)] += np.where(kept, 0.0, scale[:, None])
    direct = _well_conditioned(padded) if narrow.size else np.zeros(0, dtype=bool)
    solved, factors = narrow[direct], padded[direct]
    deficient = narrow[~direct]
    if deficient.size:
        values, vectors = np.linalg.eigh(gram[~direct])
        pseudo = _pseudo_inverse_values(values)
    if wide.size:
        rows = features[wide] * present[wide][:, :, None]
        feature_values, feature_vectors = np.linalg.eigh(np.matmul(rows.transpose(0, 2, 1), rows))
        inverse_square = _pseudo_inverse_values(feature_values) ** 2

    def solve(rhs: np.ndarray) -> np.ndarray:
        out = np.zeros_like(rhs)
        if solved.size:
            out[solved, :size] = np.linalg.solve(factors, rhs[solved, :size, None])[:, :, 0]
        if deficient.size:
            out[deficient, :size] = _rotated_back(vectors, pseudo, rhs[deficient, :size])
        if wide.size:
            out[wide] = _rows_times(rows, _rotated_back(feature_vectors, inverse_square, _weights_of(rows, rhs[wide])))
        return out * present

    return solve


def _pseudo_inverse_values(values: np.ndarray) -> np.ndarray:
    """1 / λ for the eigenvalues of each row kept (at least `_RANK_TOLERANCE` of the row's largest), 0 for the rest."""
    kept = values > np.maximum(values[:, -1:], 0) * _RANK_TOLERANCE
    return np.where(kept, 1.0 / np.where(kept, values, 1.0), 0.0)


def _rotated_back(vectors: np.ndarray, scale: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """V diag(scale) Vᵀ r per column: vectors (B, n, n), scale (B, n), rhs (B, n) -> (B, n)."""
    rotated = np.matmul(rhs[:, None, :], vectors)[:, 0, :]
    return np.matmul(vectors, (scale * rotated)[:, :, None])[:, :, 0]


def _well_conditioned(matrix: np.ndarray) -> np.ndarray:
    """Per matrix of a batch of symmetric ones: whether its Cholesky factorisation succeeds with every pivot at
    least `_PIVOT_TOLERANCE` of its largest."""
    try:
        factors = np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:  # one of them is not positive definite: each on its own
        return np.array([_well_conditioned(one[None])[0] if _positive_definite(one) else False for one in matrix],
                        dtype=bool)
    size = matrix.shape[1]
    pivots = factors[:, np.arange(size), np.arange(size)] ** 2
    return pivots.min(axis=1) >= _PIVOT_TOLERANCE * pivots.max(axis=1)


def _positive_definite(matrix: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return False
    return True


def _longest(value: np.ndarray, change: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Per column the longest step ≤ 1 along `change` that keeps every valid `value` ≥ 0."""
    shrinking = valid & (change < 0)
    ratio = np.where(shrinking, -value / np.where(shrinking, change, -1.0), np.inf)
    return np.minimum(1.0, ratio.min(axis=1))


def _solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """matrix⁻¹ rhs per column (LU: two solves a step cost less than one inverse)."""
    try:
        return np.linalg.solve(matrix, rhs[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        return np.einsum("bij,bj->bi", _inverse(matrix), rhs)


def _inverse(matrix: np.ndarray) -> np.ndarray:
    """Batched inverses of symmetric positive definite matrices (one inverse, then two products a step, costs less
    than two solves); where rounding leaves one singular (near the optimum, when more rows sit on their kinks than
    X has rank), a jitter of 1e-14 of its largest diagonal entry: these are only search directions, the finish is
    exact."""
    try:
        return np.linalg.inv(matrix)
    except np.linalg.LinAlgError:
        size = matrix.shape[1]
        jitter = 1e-14 * np.abs(matrix[:, np.arange(size), np.arange(size)]).max(axis=1)
        matrix = matrix.copy()
        matrix[:, np.arange(size), np.arange(size)] += jitter[:, None]
        return np.linalg.inv(matrix)


def solve_path(x: np.ndarray, kinks: np.ndarray, left: np.ndarray, right: np.ndarray, c_values: list[float]
               ) -> tuple[list[np.ndarray], np.ndarray]:
    """Every column's weights at each C of `c_values`, walked in ascending C with each C's solutions the guess for
    the next (`PiecewiseLinearSVM.solve`); and per column the number of its solves left uncertified."""
    problem = PiecewiseLinearSVM(x, kinks, left, right)
    path = [np.zeros((x.shape[1], kinks.shape[1])) for _ in c_values]
    uncertified = np.zeros(kinks.shape[1], dtype=int)
    with one_blas_thread():
        for chunk, batch in problem.batches():  # each batch (its rows gathered, its K) serves every C
            guess = None
            for position in sorted(range(len(c_values)), key=lambda i: c_values[i]):
                path[position][:, chunk], _, certified, guess = batch.solve(
                    np.full(len(chunk), float(c_values[position])), guess_beta=guess)
                uncertified[chunk] += ~certified
    return path, uncertified


def solve_path_at(x: np.ndarray, kinks: np.ndarray, left: np.ndarray, right: np.ndarray, c: np.ndarray,
                  guess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every column's weights at its own C (c: (columns,)), from a `guess` if given; and which are left
    uncertified."""
    solution = PiecewiseLinearSVM(x, kinks, left, right).solve(c, guess)
    return solution.weights, (~solution.certified).astype(int)
