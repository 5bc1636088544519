"""The built-in SciDocs tasks, one module per task family; each registers its tasks with `@register_task`.

`scidocs_eval.evaluation.task.task_names()` imports every module here (alphabetical order: classification, ranking,
recomm), which is also Table 1's order.
"""
