"""Machinery one task family needs beyond glue: the linear SVM of classification, the features and rankers
of recommendation. Imports formats and evaluation, never models.
"""
