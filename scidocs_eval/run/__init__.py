"""From a model to a score: the pipeline, the embedding plan and its cache, files written from the plan, the
torchrun shards, `run_baseline` and `evaluate_model`.
"""
