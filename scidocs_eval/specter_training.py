"""The documented import path before the layered layout: `from scidocs_eval.specter_training import train_specter`.

Kept as a re-export; the code lives in `scidocs_eval.training.specter` (also `from scidocs_eval import train_specter`).
"""

from scidocs_eval.training.specter import train_specter

__all__ = ["train_specter"]
