"""Statistics over results, beside evaluation/ in its layer: intervals, paired tests and their resampling
(`significance`), the significance groups of a leaderboard over many results (`ranking_groups`)."""
