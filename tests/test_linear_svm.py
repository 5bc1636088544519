"""The squared-hinge Newton solver: optimality certificates, and its float32 directions and rescaled warm starts
leave the solution that of the all-float64 solver."""

from __future__ import annotations

import numpy as np
import pytest

from scidocs_eval.evaluators import linear_svm
from scidocs_eval.evaluators.linear_svm import (
    _GramSystem,
    _one_vs_rest_targets,
    _regularization_path,
    _SquaredHingePath,
    fit_linear_svm,
)
from scidocs_eval.tasks.classification import OFFICIAL_C_GRID


def blobs(n: int, dim: int, classes: int, spread: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((classes, dim))
    labels = rng.integers(classes, size=n)
    return (centers[labels] + spread * rng.standard_normal((n, dim))).astype(np.float32), labels


def gradient(x: np.ndarray, targets: np.ndarray, c: float, weights: np.ndarray) -> np.ndarray:
    """∇f_k(w) = w + 2C·Σ_i y_ik·(y_ik·x_i·w − 1)·x_i over the margin violators, from the definition."""
    x = x.astype(np.float64)
    margins = x @ weights
    return weights + 2.0 * c * x.T @ ((margins - targets) * (targets * margins < 1))


@pytest.fixture(scope="module")
def problem() -> tuple[np.ndarray, np.ndarray]:
    x, y = blobs(900, 64, 6, spread=1.2, seed=5)
    return x, _one_vs_rest_targets(y, np.unique(y))


def test_every_solution_of_the_path_is_certified_optimal(problem) -> None:
    """f_k is 1-strongly convex, so ‖w − w*‖ ≤ ‖∇f_k(w)‖: a gradient of 1e-8·‖w‖ puts w within that of the
    optimum. Walking the whole official grid exercises CG, float32 and float64 factors and rescaled starts."""
    x, targets = problem
    c_values = sorted(OFFICIAL_C_GRID)
    for c, weights in zip(c_values, _regularization_path(x, targets, c_values, gram_budget=2**30)):
        residual = np.linalg.norm(gradient(x, targets, c, weights), axis=0)
        assert np.all(residual <= 1e-8 * np.linalg.norm(weights, axis=0)), c


def test_float32_directions_and_rescaled_starts_reach_the_float64_solvers_solution(
        problem, monkeypatch: pytest.MonkeyPatch) -> None:
    x, targets = problem
    c_values = sorted(OFFICIAL_C_GRID)
    fast = _regularization_path(x, targets, c_values, gram_budget=2**30)
    path = _SquaredHingePath(x, targets, gram_budget=2**30)
    assert any(2 * c * path._largest_eigenvalue <= linear_svm._SINGLE_CONDITION for c in c_values[2:]), \
        "some C of the grid should take float32 factors"
    monkeypatch.setattr(linear_svm, "_SINGLE_CONDITION", 0.0)  # every factor float64
    monkeypatch.setattr(linear_svm, "_RESCALE", np.inf)  # warm starts as they come
    reference = _regularization_path(x, targets, c_values, gram_budget=2**30)
    for c, ours, theirs in zip(c_values, fast, reference):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-8 * np.abs(theirs).max(), err_msg=f"C={c}")


def test_a_float32_factorisation_that_fails_is_redone_in_float64() -> None:
    """A rank-deficient X_A with a large weight: float32's Cholesky breaks down, the system is solved in
    float64 all the same, and the class stays in float64."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 40))
    path = _SquaredHingePath(x, np.ones((300, 1)))
    active = np.zeros(300, dtype=bool)
    active[:30] = True  # more than half the features: the system over the features, not over A's rows
    rhs = rng.standard_normal(40)
    system = _GramSystem(path.double)
    solution = system.solve(active, 1e6, rhs, path._single)
    assert system.single_failed and system.x.dtype == np.float64
    hessian = np.eye(40) + 1e6 * x[active].T @ x[active]
    # backward error of a float64 Cholesky solve; a float32 one is about 1e-7
    assert np.linalg.norm(hessian @ solution - rhs) <= 1e-13 * np.linalg.norm(hessian) * np.linalg.norm(solution)
    assert system.solve(active, 1e6, rhs, path._single).dtype == np.float64


@pytest.mark.parametrize("rows", [1, 10, 20])
def test_a_system_with_few_active_rows_is_solved_over_them(rows: int) -> None:
    """Where A has at most half as many rows as there are features, (I + w·X_AᵀX_A) d = r is solved through the
    |A| × |A| system (float64 whatever the arithmetic asked): the same solution as the system over the features,
    to a float64 solve's backward error, and the kept factor untouched."""
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((300, 40))
    path = _SquaredHingePath(x, np.ones((300, 1)))
    active = np.zeros(300, dtype=bool)
    active[rng.choice(300, rows, replace=False)] = True
    rhs = rng.standard_normal(40)
    for weight, arithmetic in ((1e-2, path.double), (1e6, path.double), (1.0, path._single)):
        system = _GramSystem(path.double)
        solution = system.solve(active, weight, rhs, arithmetic)
        hessian = np.eye(40) + weight * x[active].T @ x[active]
        assert solution.dtype == np.float64 and system.factor is None
        assert np.linalg.norm(hessian @ solution - rhs) <= 1e-13 * np.linalg.norm(hessian) * np.linalg.norm(solution)


def test_features_beyond_float32s_range_are_solved_in_float64() -> None:
    """f(w; s·x, C) = f(s·w; x, C·s²)/s² up to the factor, so the solution for features ×10²⁰ at C·10⁻⁴⁰ is the
    unscaled one ÷10²⁰; at that C both the CG and the float32 factors would be chosen, and float32 overflows."""
    x, y = blobs(300, 16, 3, spread=1.0, seed=2)
    for c in (1e-4, 1e-2):
        classes, weights = fit_linear_svm(x, y, c)
        _, scaled = fit_linear_svm(x.astype(np.float64) * 1e20, y, c * 1e-40)
        assert np.all(np.isfinite(scaled))
        np.testing.assert_allclose(scaled * 1e20, weights, rtol=0, atol=1e-8 * np.abs(weights).max())
