"""On-disk formats, read and write: the suite layout, embeddings files, paper corpora, citation lists.
Imports nothing above the core (errors, paths, progress, registry).
"""
