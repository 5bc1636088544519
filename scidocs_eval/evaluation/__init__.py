"""Scoring: the Task interface and its TaskSpec, the runner (`evaluate`) that times every task, the metrics,
the RunResult saved as JSON, and the check of a suite against the registered tasks.
"""
