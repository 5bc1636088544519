"""One run's results as a plain-text table for the terminal (`run`, `baseline`): per task, metrics and coverage."""

from __future__ import annotations

from scidocs_eval.evaluation.results import RunResult
from scidocs_eval.evaluation.task import DEFAULT_SYNTHETIC_LABEL, benchmarks_of


def format_run(result: RunResult, ci: bool = False) -> str:
    """A plain-text table for the terminal: one line per task with its metrics and coverage; with `ci`, each
    metric's 95% bootstrap interval too."""
    labels = {benchmark.synthetic_label for benchmark in benchmarks_of(list(result.tasks))}
    generated = labels.pop() if len(labels) == 1 else DEFAULT_SYNTHETIC_LABEL
    label = f"{result.model} ({generated})" if result.synthetic else result.model
    if excluded := result.settings.exclude:
        label += f" (leaked items excluded, per {excluded.audit})"
    interval_header = f"{'95% CI':<17} " if ci else ""
    width = max([8, *map(len, result.tasks)])
    metric_width = max([9, *(len(m) for task_result in result.tasks.values() for m in task_result.metrics)])
    lines = [label, f"{'task':<{width}} {'metric':<{metric_width}} {'value':>7}   {interval_header}coverage"]
    for name, task_result in result.tasks.items():
        coverage = ", ".join(f"{k}={v}" for k, v in task_result.coverage.items() if v)
        for i, (metric, value) in enumerate(task_result.metrics.items()):
            bounds = task_result.ci.get(metric)
            interval = (f"{f'[{bounds[0]:.2f}, {bounds[1]:.2f}]' if bounds else '—':<17} " if ci else "")
            lines.append(f"{name if i == 0 else '':<{width}} {metric:<{metric_width}} {value:>7.2f}   {interval}"
                         f"{coverage if i == 0 else ''}")
    lines += [f"{name:<{width}} skipped: {why}" for name, why in result.skipped.items()]
    lines += [f"{name:<{width}} NOT SCORED: {why}" for name, why in result.failed.items()]
    return "\n".join(lines)
