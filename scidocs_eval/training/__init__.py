"""Training SPECTER: citation triplets from the official training files, and the triplet-loss training loop
that writes a transformers checkpoint.
"""
