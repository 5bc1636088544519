"""Turning papers into vectors: the Adapter interface and its registry, the transformer encoder, text tools,
word-vector training, model cache, weights' identity and `--tune`.
"""
