"""The official classifier, fast: one-vs-rest squared-hinge L2 linear SVM, no intercept, C chosen by stratified CV.

For each class k (labels y_ik = ±1) the model minimises the strictly convex

    f_k(w) = ½‖w‖² + C Σ_i max(0, 1 − y_ik·x_i·w)²,

the problem the official code hands to lightning's LinearSVC and scikit-learn's `LinearSVC(dual=...,
fit_intercept=False)` solves too; any solver that converges reaches the same model. Ours is built for the grid:

- all classes are solved at once, so each pass over the data is one matrix product;
- Newton steps with an exact line search, only on the classes not yet converged;
- each class keeps X_AᵀX_A (A: the points violating its margin) and the Cholesky factor of its last Newton
  system; a next system with a few rows in or out of A is solved exactly through the Woodbury identity, and
  only larger changes (or a new C) are factorised afresh; well-conditioned systems (small C) go to batched CG;
- where the Newton system is well conditioned for every A (moderate C), those Gram matrices and factors are
  float32: half the work of the Gram updates and factorisations, and a direction accurate to a few percent or
  better, which is all Newton's method needs, because the gradient test that stops it and the line search stay
  float64 (so the solution does not change; at most a few steps more);
- each fold walks the C grid upwards, starting from the previous C's solution (warm starts), rescaled along
  its ray where the solution grows with C (small C).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from scidocs_eval.evaluators.folds import stratified_splits
from scidocs_eval.lazy_modules import lazy_module

if TYPE_CHECKING:
    from joblib import Parallel

np = lazy_module("numpy", __name__)


_WEIGHT_TOLERANCE = 1e-9
"""Stop a class when ‖∇f_k(w)‖ ≤ this × ‖w‖: the Hessian is ⪰ I, so w is then within this relative distance
of the optimum, and predictions match an exact solve."""
_GRADIENT_FLOOR = 1e-13
"""... or when ‖∇f_k(w)‖ ≤ this × ‖∇f_k(0)‖, where float64 rounding in the gradient may stop the above."""
_GRAM_BUDGET = 512 * 2**20
"""Bytes for the per-class Gram matrices and factors (3 × dim² floats a class) of one path; beyond it the
solver falls back to batched conjugate gradients, which need only O(n·dim)."""
_CG_CONDITION = 100.0
"""Use conjugate gradients, not the per-class factorisations, while 2C·λ_max(XᵀX) (a bound on the Newton
system's condition number) is at most this: there CG converges in a few dozen cheap steps."""
_CG_FLOOR = 1e-4
"""Conjugate gradients (float32) never aim below this relative residual."""
_SINGLE_CONDITION = 1e6
"""Factorise the Newton systems in float32 while 2C·λ_max(XᵀX) (a bound on their condition number, whatever
the active set) is at most this: float32's 6e-8 rounding then leaves the direction accurate to a few percent
at worst, and Newton with the float64 gradient test and line search reaches the same solution (measured on
MAG at 15,000 × 768: at most 4 more Newton steps per C over 3 folds; at a bound of 1e8, C = 100, 10 more).
A float32 factorisation that fails (not positive definite) is redone in float64, and that class stays float64."""
_RESCALE = 1.5
"""A warm start w is replaced by t·w (t minimising f(t·w)) when t is at least this: see `_scaled_start`."""
_MAX_NEWTON_STEPS = 500
_MAX_CG_STEPS = 5000
_MAX_LINE_SEARCH_STEPS = 100

log = logging.getLogger("scidocs_eval")


class _SquaredHingePath:
    """Solves the one-vs-rest problem on fixed data (x: (n, dim), targets: (n, n_classes) of ±1) for any C.

    Newton's method with an exact line search (the objective is piecewise quadratic, so this converges in
    finitely many steps; Keerthi & DeCoste's "modified finite Newton"), on the classes not yet converged.
    The Newton system of a class is solved with its `_GramSystem` (kept across Newton steps and values of C)
    when `gram_budget` bytes hold one per class and the system may be ill-conditioned; else (small C, or too
    little memory) by conjugate gradients preconditioned with the Hessian's diagonal in the eigenbasis of
    XᵀX, all classes in one batch. The Gram systems are float32 where `_SINGLE_CONDITION` allows.
    """

    def __init__(self, x: np.ndarray, targets: np.ndarray, gram_budget: int = _GRAM_BUDGET):
        self.x = np.asarray(x, dtype=np.float64)
        self.class_targets = np.ascontiguousarray(targets.T)
        self.gradient_at_zero = np.linalg.norm(self.x.T @ targets, axis=0)
        dim, n_classes = self.x.shape[1], targets.shape[1]
        self.double = _Arithmetic(self.x, lambda: self._full_gram)
        self.systems: list[_GramSystem] | None = None
        if 3 * n_classes * dim * dim * self.x.itemsize <= gram_budget:
            self.systems = [_GramSystem(self.double) for _ in range(n_classes)]

    def solve(self, c: float, start: np.ndarray) -> np.ndarray:
        """Weights (dim, n_classes) minimising f_k for every class, starting from `start` (same shape).

        Per-point arrays are held class by class, (classes, n): the passes over the data are then products
        with xᵀ on the right, which OpenBLAS runs about 1.5x faster than x·w for these few columns.
        """
        x = self.x
        weights = np.array(start, dtype=np.float64)
        scale = 2.0 * c * self.gradient_at_zero
        # A class whose gradient at zero vanishes (all-zero features) has zero as its optimum: f is convex.
        weights[:, scale == 0] = 0.0
        running = np.flatnonzero(scale > 0)  # a converged class's gradient no longer changes: drop it
        margins = weights[:, running].T @ x.T
        weights[:, running], margins = self._scaled_start(c, weights[:, running], margins, running)
        for _ in range(_MAX_NEWTON_STEPS):
            targets = self.class_targets[running]
            active = targets * margins < 1
            gradient = self._gradient(c, weights[:, running], margins, targets)
            gradient_norm = np.linalg.norm(gradient, axis=0)
            relative_gradient = gradient_norm / scale[running]
            going = (gradient_norm > _WEIGHT_TOLERANCE * np.linalg.norm(weights[:, running], axis=0)) & (
                relative_gradient > _GRADIENT_FLOOR)
            if not going.any():
                break
            running, targets, margins, active, gradient = (
                running[going], targets[going], margins[going], active[going], gradient[:, going])
            forcing = np.minimum(0.1, relative_gradient[going])
            direction = self._newton_direction(c, gradient, active, running, forcing)
            change = direction.T @ x.T
            step = self._line_search(c, weights[:, running], direction, margins, change, targets)
            if not np.all(np.isfinite(step)):  # never a NaN model that passes the gradient test by comparison
                raise np.linalg.LinAlgError(f"linear SVM: Newton step not finite at C={c:g} (features beyond "
                                            "float32's range?)")
            weights[:, running] += step * direction
            margins += step[:, None] * change
        else:
            log.warning("linear SVM: Newton did not converge at C=%g in %d steps", c, _MAX_NEWTON_STEPS)
        return weights

    def _gradient(self, c: float, weights: np.ndarray, margins: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """∇f (dim, classes) at `weights` (dim, classes), whose margins (X·w)ᵀ are `margins` (classes, n)."""
        return weights + 2.0 * c * (((margins - targets) * (targets * margins < 1)) @ self.x).T

    def _scaled_start(self, c: float, weights: np.ndarray, margins: np.ndarray, classes: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Each class's start w, or t·w where the t minimising f_k(t·w) is at least `_RESCALE`.

        Along the C grid the solution grows about in proportion to C while C is small, and the previous C's
        solution is then a start whose active set Newton has to change almost entirely (measured on MAG, 10x
        C: 4 Gram rebuilds a class, against 3 from the rescaled start). Near t = 1 (larger C) the unscaled start
        is the better one: scaling by t moves every point on the margin across it.
        """
        weights, margins = weights.copy(), margins.copy()
        nonzero = np.flatnonzero(np.any(weights, axis=0))
        if not nonzero.size:
            return weights, margins
        ray, ray_margins, targets = weights[:, nonzero], margins[nonzero], self.class_targets[classes[nonzero]]
        scale = self._line_search(c, np.zeros_like(ray), ray, np.zeros_like(ray_margins), ray_margins, targets)
        grown = scale >= _RESCALE
        weights[:, nonzero[grown]] = scale[grown] * ray[:, grown]
        margins[nonzero[grown]] = scale[grown, None] * ray_margins[grown]
        return weights, margins

    def _newton_direction(self, c: float, gradient: np.ndarray, active: np.ndarray, classes: np.ndarray,
                          forcing: np.ndarray) -> np.ndarray:
        """Solve (I + 2C·X_AᵀX_A) d = −g for each of `classes` (A: that class's margin violators, a row of
        `active`, (classes, n))."""
        if self.systems is None or (2.0 * c * self._largest_eigenvalue <= _CG_CONDITION and self._single_fits):
            return self._conjugate_gradients(c, -gradient, active, forcing)
        single = 2.0 * c * self._largest_eigenvalue <= _SINGLE_CONDITION and self._single_fits
        arithmetic = self._single if single else self.double
        direction = np.empty_like(gradient)
        for column, k in enumerate(classes):
            direction[:, column] = self.systems[k].solve(active[column], 2.0 * c, -gradient[:, column], arithmetic)
        return direction

    @cached_property
    def _full_gram(self) -> np.ndarray:
        return _add_gram(self.x)

    @cached_property
    def _single(self) -> _Arithmetic:
        """The data and XᵀX rounded to float32 (XᵀX summed in float64 first)."""
        return _Arithmetic(self.x.astype(np.float32), lambda: self._full_gram_single)

    @cached_property
    def _full_gram_single(self) -> np.ndarray:
        return self._full_gram.astype(np.float32, order="F")

    @cached_property
    def _single_fits(self) -> bool:
        """Whether XᵀX fits float32 with room to spare: then so do the data and every X_AᵀX_A (|G_ij| ≤ max G_ii,
        the largest squared column norm: XᵀX itself is not formed for it)."""
        return bool(np.sum(self.x**2, axis=0).max(initial=0.0) <= np.finfo(np.float32).max / 2**20)

    @cached_property
    def _largest_eigenvalue(self) -> float:
        """λ_max(XᵀX), from the smaller of XᵀX and XXᵀ (their nonzero eigenvalues are the same): few-shot and CV
        fits at a model's width have fewer papers than features."""
        from scipy.linalg import eigh

        n, dim = self.x.shape
        if 0 < n < dim:
            return float(eigh(self.x @ self.x.T, eigvals_only=True, subset_by_index=(n - 1, n - 1))[0])
        return float(eigh(self._full_gram, eigvals_only=True, subset_by_index=(dim - 1, dim - 1))[0])

    @cached_property
    def _eigenbasis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(basis, x in it, its squares; both float32, as CG runs): the rotation that makes XᵀX diagonal."""
        basis = np.linalg.eigh(self._full_gram)[1]
        rotated = self._single.x @ basis.astype(np.float32)
        return basis, rotated, rotated**2

    def _conjugate_gradients(self, c: float, rhs: np.ndarray, active: np.ndarray,
                             forcing: np.ndarray) -> np.ndarray:
        """Batched preconditioned CG on (I + 2C·X_AᵀX_A) d = rhs, to ‖residual‖ ≤ forcing·‖rhs‖ per column
        (`active`: (columns, n)).

        Runs in float32 in the eigenbasis of XᵀX (a Newton direction needs no more; the gradient test in
        `solve` stays float64) and drops each column once it has converged.
        """
        basis, rotated, squared = self._eigenbasis
        mask = active.astype(np.float32)
        preconditioner = 1.0 + np.float32(2.0 * c) * (mask @ squared).T
        solution = np.zeros(rhs.shape, dtype=np.float32)
        residual = (basis.T @ rhs).astype(np.float32)
        target = np.maximum(forcing, _CG_FLOOR) * np.linalg.norm(rhs, axis=0)
        preconditioned = residual / preconditioner
        search = preconditioned.copy()
        rho = np.sum(residual * preconditioned, axis=0)
        running = np.arange(rhs.shape[1])
        for _ in range(_MAX_CG_STEPS):
            product = search + np.float32(2.0 * c) * (((search.T @ rotated.T) * mask[running]) @ rotated).T
            step = rho / np.sum(search * product, axis=0)
            solution[:, running] += step * search
            residual[:, running] -= step * product
            going = np.linalg.norm(residual[:, running], axis=0) > target[running]
            if not going.any():
                break
            running, search, rho = running[going], search[:, going], rho[going]
            preconditioned = residual[:, running] / preconditioner[:, running]
            rho_next = np.sum(residual[:, running] * preconditioned, axis=0)
            search = preconditioned + (rho_next / rho) * search
            rho = rho_next
        return basis @ solution.astype(np.float64)

    @staticmethod
    def _line_search(c: float, weights: np.ndarray, direction: np.ndarray, margins: np.ndarray, change: np.ndarray,
                     targets: np.ndarray) -> np.ndarray:
        """Per class, the exact minimiser t of f(w + t·d) (1-D Newton on a piecewise-linear derivative);
        `margins` = (X·w)ᵀ and `change` = (X·d)ᵀ, (classes, n) like `targets`."""
        along = np.sum(weights * direction, axis=0)
        length = np.sum(direction * direction, axis=0)
        step = np.ones(weights.shape[1])
        for _ in range(_MAX_LINE_SEARCH_STEPS):
            moved = margins + step[:, None] * change
            violated = targets * moved < 1
            slope = along + step * length + 2.0 * c * np.sum((moved - targets) * change * violated, axis=1)
            curvature = length + 2.0 * c * np.sum(change * change * violated, axis=1)
            next_step = step - slope / curvature
            if np.allclose(next_step, step, rtol=1e-12, atol=0.0):
                return next_step
            step = next_step
        return step


@dataclass(frozen=True)
class _Arithmetic:
    """The data (n, dim) in one floating-point precision, and its XᵀX (lower triangle) in the same."""

    x: np.ndarray
    full_gram: Callable[[], np.ndarray]


class _GramSystem:
    """One class's Newton systems (I + w·X_AᵀX_A) d = r as its margin violators A and the weight w = 2C change.

    Keeps the Cholesky factor of the last system it factorised. A later system with the same w whose A
    differs by at most dim/8 rows is that system plus a low-rank term, so the Woodbury identity solves it
    exactly for O(dim²) per changed row; any other is factorised afresh (O(dim³)). For that it keeps
    G = X_AᵀX_A up to date by adding and removing the rows that entered and left A, or rebuilds it from the
    rows of A or as XᵀX (`full_gram`, shared by the classes) minus the rows outside A, whichever touches the
    fewest rows. All of it in the precision of the `_Arithmetic` a system is solved in (a change of precision
    starts afresh); a float32 system that is not positive definite is solved in float64, as are all later ones.
    """

    def __init__(self, double: _Arithmetic):
        self.double = double
        self.single_failed = False
        self._start(double)

    def _start(self, arithmetic: _Arithmetic) -> None:
        from scipy.linalg import get_lapack_funcs

        self.arithmetic = arithmetic
        self.x = arithmetic.x
        self.potrf, self.trtrs = get_lapack_funcs(("potrf", "trtrs"), dtype=self.x.dtype)
        self.gram_rows = np.zeros(self.x.shape[0], dtype=bool)
        self.gram: np.ndarray | None = None  # X_AᵀX_A, made when first needed (systems over A's rows never need it)
        self.factor: np.ndarray | None = None
        self.factor_rows = self.gram_rows
        self.factor_weight = 0.0

    def solve(self, active: np.ndarray, weight: float, rhs: np.ndarray, arithmetic: _Arithmetic) -> np.ndarray:
        """d (dim,) solving (I + weight·X_AᵀX_A) d = rhs for A = `active` (n,) bool, in `arithmetic`'s precision."""
        if self.single_failed:
            arithmetic = self.double
        if arithmetic is not self.arithmetic:
            self._start(arithmetic)
        if 2 * int(active.sum()) <= self.x.shape[1]:
            return self._over_rows(active, weight, np.asarray(rhs, dtype=np.float64))
        rounded = rhs.astype(self.x.dtype)
        if self.factor is not None and weight == self.factor_weight:
            entered, left = active & ~self.factor_rows, self.factor_rows & ~active
            if entered.sum() + left.sum() <= self.x.shape[1] // 8:
                return self._woodbury(entered, left, weight, rounded)
        self._track(active)
        hessian = weight * self.gram  # column-major like the Gram matrix, as LAPACK wants it: no copy
        hessian[np.diag_indices_from(hessian)] += 1.0
        factor, info = self.potrf(hessian, lower=True, clean=False, overwrite_a=True)
        if info and arithmetic is not self.double:
            self.single_failed = True
            return self.solve(active, weight, rhs, self.double)
        if info:
            raise np.linalg.LinAlgError(f"linear SVM: Newton system not positive definite (potrf info {info})")
        self.factor, self.factor_rows, self.factor_weight = factor, active.copy(), weight
        return self._factor_solve(rounded)

    def _over_rows(self, active: np.ndarray, weight: float, rhs: np.ndarray) -> np.ndarray:
        """The same solution through the rows of A where they are at most half the features (few-shot and CV fits
        at a model's width): (I + w·X_AᵀX_A)⁻¹ r = r − X_Aᵀ (I/w + X_A X_Aᵀ)⁻¹ X_A r, a |A| × |A| factorisation
        instead of dim × dim, in float64 (small enough); the kept factor and Gram matrix are left as they are."""
        from scipy.linalg import get_lapack_funcs

        rows = self.double.x[active]
        if not rows.shape[0]:
            return rhs
        potrf, potrs = get_lapack_funcs(("potrf", "potrs"), dtype=np.float64)
        system = rows @ rows.T
        system[np.diag_indices_from(system)] += 1.0 / weight
        factor, info = potrf(system, lower=True, clean=False, overwrite_a=True)
        if info:
            raise np.linalg.LinAlgError(f"linear SVM: Newton system not positive definite (potrf info {info})")
        inner, info = potrs(factor, rows @ rhs, lower=True)
        if info:
            raise np.linalg.LinAlgError(f"linear SVM: Newton system not solved (potrs info {info})")
        return rhs - rows.T @ inner

    def _factor_solve(self, rhs: np.ndarray) -> np.ndarray:
        return self._triangular_solve(self._triangular_solve(rhs), transposed=True)

    def _triangular_solve(self, rhs: np.ndarray, transposed: bool = False) -> np.ndarray:
        """L⁻¹ rhs (or L⁻ᵀ rhs) for the Cholesky factor L of the factorised system."""
        solution, info = self.trtrs(self.factor, rhs, lower=1, trans=int(transposed))
        if info:
            raise np.linalg.LinAlgError(f"linear SVM: singular Cholesky factor (trtrs info {info})")
        return solution

    def _woodbury(self, entered: np.ndarray, left: np.ndarray, weight: float, rhs: np.ndarray) -> np.ndarray:
        """(H + RᵀDR)⁻¹ rhs = L⁻ᵀ(u − V(D⁻¹ + VᵀV)⁻¹Vᵀu) with H = LLᵀ the factorised system, u = L⁻¹rhs,
        V = L⁻¹Rᵀ, R the changed rows and D = +w for rows that entered A, −w for rows that left."""
        reduced = self._triangular_solve(rhs)
        rows = np.concatenate([self.x[entered], self.x[left]])
        if rows.shape[0]:
            inverse_weights = np.concatenate([np.full(entered.sum(), 1.0 / weight),
                                              np.full(left.sum(), -1.0 / weight)])
            spread = self._triangular_solve(rows.T)
            capacitance = spread.T @ spread
            capacitance[np.diag_indices_from(capacitance)] += inverse_weights
            reduced = reduced - spread @ np.linalg.solve(capacitance, spread.T @ reduced)
        return self._triangular_solve(reduced, transposed=True)

    def _track(self, active: np.ndarray) -> None:
        if self.gram is None:
            dim = self.x.shape[1]
            self.gram = np.zeros((dim, dim), dtype=self.x.dtype, order="F")
        entered, left = active & ~self.gram_rows, self.gram_rows & ~active
        changed, inside = int(entered.sum() + left.sum()), int(active.sum())
        if changed == 0:
            return
        if changed <= min(inside, active.size - inside):
            self.gram = _add_gram(self.x[entered], 1.0, self.gram)
            self.gram = _add_gram(self.x[left], -1.0, self.gram)
        elif inside <= active.size - inside:
            self.gram = _add_gram(self.x[active])
        else:
            self.gram = _add_gram(self.x[~active], -1.0, self.arithmetic.full_gram().copy(order="F"))
        self.gram_rows = active.copy()


def _add_gram(rows: np.ndarray, sign: float = 1.0, gram: np.ndarray | None = None) -> np.ndarray:
    """gram + sign·rowsᵀrows for rows (r, dim), in place, as a column-major (dim, dim) matrix of which only the
    lower triangle is computed and meaningful (BLAS syrk: half the work of a full product), in rows' precision."""
    from scipy.linalg import get_blas_funcs

    if gram is None:
        gram = np.zeros((rows.shape[1], rows.shape[1]), dtype=rows.dtype, order="F")
    if not rows.shape[0]:
        return gram
    syrk = get_blas_funcs("syrk", dtype=rows.dtype)
    return syrk(sign, rows.T, beta=1.0, c=gram, trans=0, lower=1, overwrite_c=1)


def _one_vs_rest_targets(y: np.ndarray, classes: np.ndarray) -> np.ndarray:
    return np.where(y[:, None] == classes[None, :], 1.0, -1.0)


def _regularization_path(x: np.ndarray, targets: np.ndarray, c_values: list[float], gram_budget: int
                         ) -> list[np.ndarray]:
    """Weights (dim, n_classes) for each C of `c_values` (ascending), each solve warm-started from the last."""
    path = _SquaredHingePath(x, targets, gram_budget)
    weights = np.zeros((x.shape[1], targets.shape[1]))
    solutions = []
    for c in c_values:
        weights = path.solve(c, weights)
        solutions.append(weights)
    return solutions


def _solve_classes(x: np.ndarray, targets: np.ndarray, c: float, start: np.ndarray, gram_budget: int
                   ) -> np.ndarray:
    return _SquaredHingePath(x, targets, gram_budget).solve(c, start)


def _predict(x: np.ndarray, weights: np.ndarray, classes: np.ndarray) -> np.ndarray:
    return classes[np.argmax(np.asarray(x, dtype=np.float64) @ weights, axis=1)]


def fit_linear_svm(x: np.ndarray, y: np.ndarray, c: float, gram_budget: int = _GRAM_BUDGET
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(classes, weights (dim, n_classes)) of the one-vs-rest problem at one C, without CV (few-shot fits)."""
    classes = np.unique(y)
    targets = _one_vs_rest_targets(y, classes)
    return classes, _solve_classes(np.asarray(x, dtype=np.float64), targets, c, np.zeros((x.shape[1], len(classes))),
                                   gram_budget)


def predict_linear_svm(x: np.ndarray, classes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(n,) labels: argmax of the decision values (first class on ties)."""
    return _predict(x, weights, classes)


class LinearSVMGrid:
    """Pick C by k-fold stratified CV (no shuffle, accuracy, ties to the smallest C), then refit on all data.

    Args:
        c_grid: candidate values of C.
        folds: number of CV folds (scikit-learn's StratifiedKFold without shuffling, as GridSearchCV uses).
        n_jobs: worker processes (-1: one per core, and at least one per fold); each solves one fold's path,
            for every class or, where cores outnumber folds, for a group of classes, then the refit for a group
            of classes.
        gram_budget: bytes one fit may hold in per-class dim × dim matrices (the fast path); with less, the
            solver uses conjugate gradients over the data instead (slower, O(n·dim) memory). Same model.

    Attributes after `fit`: `classes_`, `best_c_`, `cv_accuracy_` (mean fold accuracy per C, in `c_grid`
    order), `coef_` (dim, n_classes).
    """

    def __init__(self, c_grid: tuple[float, ...], folds: int = 3, n_jobs: int = -1, gram_budget: int = _GRAM_BUDGET):
        self.c_grid = tuple(c_grid)
        self.folds = folds
        self.n_jobs = n_jobs
        self.gram_budget = gram_budget

    def fit(self, x: np.ndarray, y: np.ndarray) -> LinearSVMGrid:
        """x: (n, dim) features; y: (n,) integer labels."""
        from joblib import Parallel, delayed

        self.classes_ = np.unique(y)
        targets = _one_vs_rest_targets(y, self.classes_)
        splits = stratified_splits(y, self.folds)
        cores = self.n_jobs if self.n_jobs > 0 else os.cpu_count() or 1
        # one task per fold with every class: splitting the classes costs each part its own passes over the
        # data, which outweighs an idle core, so the classes are split only where cores outnumber folds; on
        # fewer cores than folds the folds still run at once (measured on 2 cores, 3 folds: 15% faster than
        # splitting the classes in two to keep both cores busy)
        workers = cores if self.n_jobs > 0 else max(cores, len(splits))
        n_classes = len(self.classes_)
        fold_groups = np.array_split(np.arange(n_classes), min(max(1, cores // len(splits)), n_classes))
        refit_groups = np.array_split(np.arange(n_classes), min(cores, n_classes))
        # worker processes, not threads: the solver's many small numpy calls hold the GIL (threads: 1.2x on two
        # cores, processes: 1.5x); one BLAS thread each: BLAS threads on these small products cost more in
        # synchronisation than they gain (measured: twice as slow)
        with Parallel(n_jobs=workers, backend="loky", inner_max_num_threads=1) as parallel:
            fold_weights = self._fold_paths(parallel, x, targets, splits, fold_groups)
            self._choose_c(x, y, splits, fold_weights)
            # the optimum is unique, so any start reaches it; the folds' solutions at this C are a close one
            start = np.mean([weights[self.c_grid.index(self.best_c_)] for weights in fold_weights], axis=0)
            solutions = parallel(delayed(_solve_classes)(x, targets[:, group], self.best_c_, start[:, group],
                                                         self.gram_budget) for group in refit_groups)
        self.coef_ = np.concatenate(solutions, axis=1)
        return self

    def _fold_paths(self, parallel: Parallel, x: np.ndarray, targets: np.ndarray,
                    splits: list[tuple[np.ndarray, np.ndarray]], groups: list[np.ndarray]) -> list[list[np.ndarray]]:
        """For each fold, the weights (dim, n_classes) fit on its training part at each C of `c_grid`."""
        from joblib import delayed

        ascending = sorted(self.c_grid)
        paths = parallel(delayed(_regularization_path)(x[train], targets[train][:, group], ascending,
                                                       self.gram_budget) for train, _ in splits for group in groups)
        return [[np.concatenate([paths[fold * len(groups) + g][ascending.index(c)] for g in range(len(groups))],
                                axis=1) for c in self.c_grid] for fold in range(len(splits))]

    def _choose_c(self, x: np.ndarray, y: np.ndarray, splits: list[tuple[np.ndarray, np.ndarray]],
                  fold_weights: list[list[np.ndarray]]) -> None:
        accuracy = [[np.mean(_predict(x[test], weights, self.classes_) == y[test]) for weights in fold]
                    for (_, test), fold in zip(splits, fold_weights)]
        self.cv_accuracy_ = np.mean(accuracy, axis=0).tolist()
        best_accuracy = max(self.cv_accuracy_)
        self.best_c_ = float(min(c for c, a in zip(self.c_grid, self.cv_accuracy_) if a == best_accuracy))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(n,) predicted labels: argmax of the decision values (first class on ties)."""
        return _predict(x, self.coef_, self.classes_)
