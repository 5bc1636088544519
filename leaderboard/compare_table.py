"""`compare`'s output for people: a plain-text table for the terminal and markdown (the numbers are
`scidocs_eval.evaluation.comparison`'s)."""

from __future__ import annotations

from scidocs_eval.evaluation.comparison import UNIT_NAMES, Comparison, MetricComparison


def format_comparison(comparison: Comparison) -> str:
    """Plain text for the terminal: one block per pair, one line per metric."""
    blocks = []
    for pair in comparison.pairs:
        header = (f"A = {pair.baseline}\nB = {pair.model}\nsplit {comparison.split}; {comparison.resamples} "
                  f"resamples, seed {comparison.seed}; Holm correction over {len(pair.rows)} metrics, alpha "
                  f"{comparison.alpha}")
        lines = [header, *(f"NOTE {note}" for note in pair.notes),
                 f"{'task':<8} {'metric':<9} {'A':>7} {'B':>7} {'B-A':>7}  {'95% CI of B-A':<18} "
                 f"{'p':>7} {'p Holm':>7}  {'shared items':<17} verdict"]
        for row in pair.rows:
            shared = f"{row.n} {UNIT_NAMES.get(row.unit, row.unit)}"
            lines.append(f"{row.task:<8} {row.metric:<9} {row.value_a:>7.2f} {row.value_b:>7.2f} "
                         f"{row.delta:>+7.2f}  {_interval(row):<18} {_p(row.p_value):>7} "
                         f"{_p(row.p_holm):>7}  {shared:<17} {row.verdict}")
        lines += [f"{task:<8} not compared: {why}" for task, why in pair.skipped.items()]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def comparison_markdown(comparison: Comparison) -> str:
    """Markdown: one table per pair; with several pairs, a summary table of every model's values with
    ▲ / ▼ where it is significantly better / worse than the baseline (after Holm)."""
    blocks = []
    for pair in comparison.pairs:
        lines = [f"**{pair.model}** vs **{pair.baseline}** (split {comparison.split}, {comparison.resamples} "
                 f"resamples, Holm over {len(pair.rows)} metrics, alpha {comparison.alpha})", "",
                 *(f"**Note:** {note}.\n" for note in pair.notes),
                 "| Task | Metric | A | B | B − A | 95% CI | p | p (Holm) | Shared items | Verdict |",
                 "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r.task} | {r.metric} | {r.value_a:.2f} | {r.value_b:.2f} | {r.delta:+.2f} | "
                  f"{_interval(r)} | {_p(r.p_value)} | {_p(r.p_holm)} | {r.n} {UNIT_NAMES.get(r.unit, r.unit)}"
                  f" | {r.verdict} |" for r in pair.rows]
        lines += [f"- {task}: not compared ({why})" for task, why in pair.skipped.items()]
        blocks.append("\n".join(lines))
    if len(comparison.pairs) > 1:
        blocks.append(_summary_markdown(comparison))
    return "\n\n".join(blocks) + "\n"


def _summary_markdown(comparison: Comparison) -> str:
    columns = list(dict.fromkeys((r.task, r.metric) for pair in comparison.pairs for r in pair.rows))
    lines = ["| Model | " + " | ".join(f"{task} {metric}" for task, metric in columns) + " |",
             "|---|" + "---|" * len(columns)]
    baseline_values = {(r.task, r.metric): r.value_a for pair in comparison.pairs for r in pair.rows}
    lines.append(f"| {comparison.pairs[0].baseline} (baseline) | "
                 + " | ".join(f"{baseline_values[c]:.2f}" for c in columns) + " |")
    marks = {"better": " ▲", "worse": " ▼"}
    for pair in comparison.pairs:
        rows = {(r.task, r.metric): r for r in pair.rows}
        cells = [f"{rows[c].value_b:.2f}{marks.get(rows[c].verdict, '')}" if c in rows else "—" for c in columns]
        lines.append(f"| {pair.model} | " + " | ".join(cells) + " |")
    lines += ["", f"▲ / ▼: significantly better / worse than {comparison.pairs[0].baseline} (paired test, "
                  f"Holm-corrected p < {comparison.alpha}; docs/significance.md)."]
    return "\n".join(lines)


def _interval(row: MetricComparison) -> str:
    return f"[{row.ci_low:+.2f}, {row.ci_high:+.2f}]"


def _p(value: float) -> str:
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"
