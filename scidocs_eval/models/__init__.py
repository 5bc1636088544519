"""Turning papers into vectors: the Adapter interface and its registry, running an adapter over a suite,
the transformer encoder, text tools, word-vector training, model cache and `--tune`.
"""
