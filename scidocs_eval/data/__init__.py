"""Getting suites: download the official release, build one from any corpus, write the synthetic demo,
resolve what --data names (a path, "demo", or the default directory) into a Suite.
"""
