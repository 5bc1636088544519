"""Linear SVMs with a piecewise-linear loss solved exactly: the hinge (LinearSVC loss="hinge") and the
epsilon-insensitive loss with ε = 0 (LinearSVR), many problems on the same rows at once.

Column l of a batch is the problem

    min_w  P_l(w) = ½‖w‖² + C_l Σ_i φ_il(x_i·w),    φ_il(u) = a_il·max(0, k_il − u) + b_il·max(0, u − k_il),

- hinge with label y = ±1: kink k = y, (a, b) = (1, 0) for y = +1 and (0, 1) for y = −1;
- absolute error (ε-insensitive, ε = 0) with target y: k = y, (a, b) = (1, 1);
- a = b = 0 leaves row i out of column l, so the folds of a cross-validation, the labels of a one-vs-rest model
  and the draws of a few-shot run are columns of one batch over the same rows.

Its dual is max_β Σ_i β_i k_i − ½‖Xᵀβ‖² with −C·b_i ≤ β_i ≤ C·a_i, and w = Xᵀβ at the optimum. For any such
β and w = Xᵀβ the duality gap is Σ_i [C·φ_i(x_i·w) − β_i·(k_i − x_i·w)], a sum of terms each ≥ 0, zero exactly at
the optimum: the certificate a solution must pass here (relative to the objective, `GAP_TOLERANCE`).

Method: Newton's method with an exact line search on the smoothed primal, each kink rounded to a parabola over a
band of width δ (piecewise quadratic: Newton ends in finitely many steps); then the exact finish: the rows inside the
band are taken to lie on the kink at the optimum (x_i·w = k_i) and the others get β_i at the bound of their side,
which leaves a linear system for the band's β (solved by least squares); that β, clipped to its box, is accepted
when its duality gap passes. Otherwise δ shrinks tenfold and Newton goes on from where it is. No iteration count
ends a solve with an uncertified answer silently: a column that is still uncertified when δ reaches its floor is
reported (`Solution.certified`), never passed off as the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

GAP_TOLERANCE = 1e-12
"""A solution is certified when its duality gap, less what rounding in the distances to the kinks can leave in it,
is at most this times its objective (so its objective is within that relative distance of the optimum)."""
_FIRST_BAND = 0.1
"""δ of the first smoothing, as a fraction of the kinks' typical size (1 for the hinge)."""
_SMALLEST_BAND = 1e-14
"""δ floor, relative to the first: below it a column is given up as uncertified."""
_STEPS_PER_BAND = 200
"""Newton steps at one δ before it shrinks anyway. Rows enter a thin band a few per step, so at d ≈ 100 a band needs
~d steps: a cap of 25 shrank δ too early and left solves uncertified (800 papers, 96-d, C = 100: 2 of 5)."""
_LINE_SEARCH_STEPS = 60
_RANK_TOLERANCE = 1e-13
"""Eigenvalues of X_MᵀX_M below this times the largest are rounding: dropped (X_M's rank)."""
_ROUNDING = 64 * np.finfo(np.float64).eps
"""Relative error allowed in one distance to a kink when the gap is judged (rounding in x_i·w, with a margin)."""
_ACTIVE_SET_PASSES = 3
"""Passes of the active-set finish before it leaves a column to more Newton steps and tries again (measured on
the few-shot Fields of study: 3 passes take 35% less time than 50, with the same solutions)."""
_OUTER_BUDGET = 2**22
"""Floats of the per-row outer products x_i x_iᵀ kept to form every column's Hessian in one product; above, a loop."""


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
        self.kinks, self.left, self.right = kinks, left, right
        used = (left + right) > 0
        scale = np.median(np.abs(kinks[used])) if used.any() else 1.0
        self.first_band = _FIRST_BAND * (scale if scale > 0 else 1.0)
        n, dim = self.x.shape
        self.outer = (self.x[:, :, None] * self.x[:, None, :]).reshape(n, dim * dim) if n * dim * dim <= \
            _OUTER_BUDGET else None

    def objective(self, c: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """P_l(w_l) for each column: c (columns,), weights (dim, columns)."""
        t = self.kinks - self.x @ weights
        loss = self.left * np.maximum(t, 0) + self.right * np.maximum(-t, 0)
        return 0.5 * np.sum(weights**2, axis=0) + c * loss.sum(axis=0)

    def solve(self, c: np.ndarray | float, start: np.ndarray | None = None) -> Solution:
        """Each column's optimum at its C (c: scalar or (columns,)), from `start` (dim, columns; default 0)."""
        # these products are small: BLAS threads cost more in synchronisation than they gain
        with threadpool_limits(limits=1, user_api="blas"):
            return self._solve(c, start)

    def _solve(self, c: np.ndarray | float, start: np.ndarray | None) -> Solution:
        n, dim = self.x.shape
        columns = self.kinks.shape[1]
        c = np.broadcast_to(np.asarray(c, dtype=np.float64), (columns,)).copy()
        weights = np.zeros((dim, columns)) if start is None else np.array(start, dtype=np.float64)
        best = weights.copy()
        gap = np.full(columns, np.inf)
        certified = np.zeros(columns, dtype=bool)
        band = np.full(columns, self.first_band)
        steps = np.zeros(columns, dtype=int)
        # the finish is tried at each new δ and whenever a column's rows in the band stop changing
        fresh = np.ones(columns, dtype=bool)
        last_inside = np.zeros((n, columns), dtype=bool)
        running = np.arange(columns)
        while running.size:
            t = self.kinks[:, running] - self.x @ weights[:, running]
            inside = self._inside(running, t, band[running])
            trying = np.flatnonzero(fresh[running] | np.all(inside == last_inside[:, running], axis=0))
            for chunk in np.array_split(trying, -(-trying.size * n * dim // _OUTER_BUDGET)) if trying.size else ():
                tried = running[chunk]
                finished, relative_gap = self._finish(tried, c[tried], t[:, chunk].copy(), band[tried])
                better = relative_gap < gap[tried]
                gap[tried[better]], best[:, tried[better]] = relative_gap[better], finished[:, better]
                certified[tried] = relative_gap <= GAP_TOLERANCE
            last_inside[:, running] = inside
            fresh[running] = False
            going = ~certified[running]
            running, t, inside = running[going], t[:, going], inside[:, going]
            if not running.size:
                break
            direction, converged = self._newton_direction(running, c[running], weights[:, running], t, inside,
                                                          band[running])
            shrink = converged | (steps[running] >= _STEPS_PER_BAND)
            shrunk = running[shrink]
            if shrink.any():
                # the smoothed optimum moves linearly in δ while its band rows stay: go to where it is at δ/10
                exact = self._kink_solution(shrunk, c[shrunk], inside[:, shrink], t[:, shrink])[1]
                weights[:, shrunk] = exact + 0.1 * (weights[:, shrunk] - exact)
            band[shrunk] *= 0.1
            steps[shrunk] = 0
            fresh[shrunk] = True
            if (~shrink).any():
                moving = running[~shrink]
                step = self._line_search(moving, c[moving], weights[:, moving], direction[:, ~shrink],
                                         t[:, ~shrink], band[moving])
                weights[:, moving] += step * direction[:, ~shrink]
                steps[moving] += 1
            running = running[band[running] >= self.first_band * _SMALLEST_BAND]
        return Solution(best, gap, certified)

    def _inside(self, columns: np.ndarray, t: np.ndarray, band: np.ndarray) -> np.ndarray:
        """Rows in each column's smoothing band: on the side of the kink where the loss grows, within δ."""
        return ((self.left[:, columns] > 0) & (t > 0) & (t < band)) | (
            (self.right[:, columns] > 0) & (t < 0) & (-t < band))

    def _slopes(self, columns: np.ndarray, t: np.ndarray, band: np.ndarray) -> np.ndarray:
        """dφ_δ/du of the smoothed loss at u = k − t."""
        return self.right[:, columns] * np.clip(-t / band, 0, 1) - self.left[:, columns] * np.clip(t / band, 0, 1)

    def _grams(self, rows: np.ndarray) -> np.ndarray:
        """(columns, dim, dim): X_RᵀX_R for the rows R of each column (rows: (n, columns) bool)."""
        dim = self.x.shape[1]
        if self.outer is not None:
            return (rows.T.astype(np.float64) @ self.outer).reshape(-1, dim, dim)
        return np.stack([self.x[rows[:, j]].T @ self.x[rows[:, j]] for j in range(rows.shape[1])]) if \
            rows.shape[1] else np.zeros((0, dim, dim))

    def _newton_direction(self, columns: np.ndarray, c: np.ndarray, weights: np.ndarray, t: np.ndarray,
                          inside: np.ndarray, band: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The Newton direction of the smoothed objective per column, and whether that column is already at the
        smoothed optimum (its gradient vanishes to rounding)."""
        gradient = weights + c * (self.x.T @ self._slopes(columns, t, band))
        reference = np.linalg.norm(weights, axis=0) + c * np.linalg.norm(
            self.x.T @ (self.left[:, columns] + self.right[:, columns]), axis=0)
        converged = np.linalg.norm(gradient, axis=0) <= 1e-13 * np.maximum(reference, np.finfo(float).tiny)
        dim = self.x.shape[1]
        weight = c / band
        hessians = self._grams(inside) * weight[:, None, None]
        hessians[:, np.arange(dim), np.arange(dim)] += 1.0
        try:
            direction = -np.linalg.solve(hessians, gradient.T[:, :, None])[:, :, 0].T
        except np.linalg.LinAlgError:  # at a tiny δ the identity can vanish in rounding: least squares then
            direction = -np.stack([np.linalg.lstsq(h, g, rcond=None)[0] for h, g in zip(hessians, gradient.T)],
                                  axis=1)
        return direction, converged

    def _line_search(self, columns: np.ndarray, c: np.ndarray, weights: np.ndarray, direction: np.ndarray,
                     t: np.ndarray, band: np.ndarray) -> np.ndarray:
        """Per column a step s > 0 along `direction` where the smoothed objective's derivative (piecewise linear
        and increasing in s) is within 1e-9 of its size at s = 0: Newton on the derivative from s = 1 (exact once
        no row changes piece), kept inside a bracket by bisection."""
        change = self.x @ direction
        along, length = np.sum(weights * direction, axis=0), np.sum(direction * direction, axis=0)
        low, high = np.zeros(columns.size), np.full(columns.size, np.inf)
        step = np.ones(columns.size)
        target = 1e-9 * np.abs(along + c * np.sum(self._slopes(columns, t, band) * change, axis=0))
        open_ = np.arange(columns.size)
        for _ in range(_LINE_SEARCH_STEPS):
            at = step[open_]
            moved = t[:, open_] - at * change[:, open_]
            sub = columns[open_]
            slope = along[open_] + at * length[open_] + c[open_] * np.sum(
                self._slopes(sub, moved, band[open_]) * change[:, open_], axis=0)
            curvature = length[open_] + (c[open_] / band[open_]) * np.sum(
                change[:, open_] ** 2 * self._inside(sub, moved, band[open_]), axis=0)
            done = np.abs(slope) <= target[open_]
            low[open_] = np.where(slope < 0, at, low[open_])
            high[open_] = np.where(slope > 0, at, high[open_])
            proposal = at - slope / curvature
            outside = ~((proposal > low[open_]) & (proposal < high[open_]))
            bisected = np.where(np.isinf(high[open_]), 2 * at, 0.5 * (low[open_] + high[open_]))
            step[open_] = np.where(done, at, np.where(outside, bisected, proposal))
            open_ = open_[~done & (step[open_] != at)]
            if not open_.size:
                break
        return step

    def _kink_solution(self, columns: np.ndarray, c: np.ndarray, on_kink: np.ndarray, side: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """(β, w = Xᵀβ) per column: the rows off the kink at the bound of their side of it (side > 0: C·a, else
        −C·b), the kink rows' β solving x_i·w = k_i there (least norm, least squares where inconsistent)."""
        beta = np.where(side > 0, c * self.left[:, columns], -c * self.right[:, columns])
        beta[on_kink] = 0.0
        fixed = self.x.T @ beta
        # per column with G = X_MᵀX_M = V Λ Vᵀ: the least-norm z = X_Mᵀβ_M with X_M z = r is G⁺X_Mᵀr, and
        # β_M = X_M G⁺ z (Λ's rounding-level values dropped, as least squares does); two rounds of refinement
        grams = self._grams(on_kink)
        values, vectors = np.linalg.eigh(grams)
        kept = values > values[:, -1:] * _RANK_TOLERANCE
        inverse = np.where(kept, 1.0 / np.where(kept, values, 1.0), 0.0)
        weights = fixed
        kinks = self.kinks[:, columns]
        for _ in range(3):
            residual = (kinks - self.x @ weights) * on_kink
            shift = _apply(vectors, inverse, self.x.T @ residual)
            beta += (self.x @ _apply(vectors, inverse, shift)) * on_kink
            weights = fixed + self.x.T @ (beta * on_kink)
        return beta, weights

    def _finish(self, columns: np.ndarray, c: np.ndarray, t: np.ndarray, band: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """Per column, the exact solution found from the iterate's distances to the kinks `t`, and its relative
        duality gap.

        A primal-dual active-set method on the KKT conditions β_i = clip(β_i + C·t_i, −C·b_i, C·a_i): the rows in
        the smoothing band (or on a kink to rounding) start on the kink, the others at the bound of their side;
        each pass solves x_i·w = k_i on the kink rows for their β and moves every row to where β_i + C·t_i puts
        it, until the partition repeats (or `_ACTIVE_SET_PASSES`). Its β, clipped to the box, is then certified
        or not by the duality gap.
        """
        left, right, kinks = self.left[:, columns], self.right[:, columns], self.kinks[:, columns]
        used = (left + right) > 0
        upper, lower = c * left, -c * right
        near = np.abs(t) <= 1e-9 * self.first_band / _FIRST_BAND
        on_kink = used & (self._inside(columns, t, band) | near)
        side = t
        beta = np.zeros_like(t)
        open_ = np.arange(columns.size)
        for _ in range(_ACTIVE_SET_PASSES):
            beta_open, weights = self._kink_solution(columns[open_], c[open_], on_kink[:, open_], side[:, open_])
            beta[:, open_] = beta_open
            moved = beta_open + c[open_] * (kinks[:, open_] - self.x @ weights)
            next_on_kink = used[:, open_] & (moved <= upper[:, open_]) & (moved >= lower[:, open_])
            side[:, open_] = np.where(moved > upper[:, open_], 1.0, -1.0)
            changed = np.any(next_on_kink != on_kink[:, open_], axis=0)
            on_kink[:, open_] = next_on_kink
            open_ = open_[changed]
            if not open_.size:
                break
        beta = np.clip(beta, lower, upper)
        weights = self.x.T @ beta
        distance = kinks - self.x @ weights
        loss = left * np.maximum(distance, 0) + right * np.maximum(-distance, 0)
        gap = np.sum(np.maximum(c * loss - beta * distance, 0), axis=0)
        objective = 0.5 * np.sum(weights**2, axis=0) + c * loss.sum(axis=0)
        # what rounding alone leaves in the gap: each distance k_i − x_i·w is known to ~eps·(|k_i| + |x_i|·|w|)
        rounding = 2 * c * _ROUNDING * np.sum(used * (np.abs(kinks) + np.abs(self.x) @ np.abs(weights)), axis=0)
        return weights, np.maximum(gap - rounding, 0.0) / np.maximum(objective, np.finfo(float).tiny)


def solve_path(x: np.ndarray, kinks: np.ndarray, left: np.ndarray, right: np.ndarray, c_values: list[float]
               ) -> tuple[list[np.ndarray], np.ndarray]:
    """Every column's weights at each C of `c_values` (ascending), each warm-started from the last; and per column
    the number of its solves left uncertified."""
    problem = PiecewiseLinearSVM(x, kinks, left, right)
    weights = np.zeros((problem.x.shape[1], kinks.shape[1]))
    path, uncertified = [], np.zeros(kinks.shape[1], dtype=int)
    for c in c_values:
        solution = problem.solve(c, weights)
        weights = solution.weights
        uncertified += ~solution.certified
        path.append(weights)
    return path, uncertified


def solve_path_at(x: np.ndarray, kinks: np.ndarray, left: np.ndarray, right: np.ndarray, c: np.ndarray,
                  start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every column's weights at its own C (c: (columns,)) from `start`; and which are left uncertified."""
    solution = PiecewiseLinearSVM(x, kinks, left, right).solve(c, start)
    return solution.weights, (~solution.certified).astype(int)


def _apply(vectors: np.ndarray, inverse: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """V diag(inverse) Vᵀ rhs for each column: vectors (columns, dim, dim), inverse (columns, dim), rhs (dim,
    columns)."""
    return np.einsum("lij,lj->il", vectors, inverse * np.einsum("lji,jl->li", vectors, rhs))
