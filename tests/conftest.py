"""Shared fixtures: a small synthetic demo suite, the real corpora in ../shared/data, an isolated cache."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from scidocs_eval.demo import DemoConfig, build_demo_suite
from scidocs_eval.suite import Suite
from scidocs_eval.text import analyzer

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("SCIDOCS_EVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own cache dir, so no test sees another's parsed embeddings or models."""
    monkeypatch.setenv("SCIDOCS_EVAL_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setenv("SCIDOCS_EVAL_QUIET", "1")


@pytest.fixture(scope="session")
def demo_suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """A small synthetic suite (all seven tasks), built once per test session; do not modify it."""
    config = DemoConfig(mag_papers=400, mesh_papers=300, ranking_queries=25, recomm_impressions=(300, 80, 80),
                        recomm_papers=600)
    return build_demo_suite(tmp_path_factory.mktemp("demo") / "suite", config)


@pytest.fixture(scope="session")
def tiny_suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    """A 528-paper synthetic suite for tests that run a real model over every paper; do not modify it."""
    config = DemoConfig(mag_papers=100, mesh_papers=60, ranking_queries=4, positives=2, negatives=6,
                        recomm_impressions=(40, 10, 10), recomm_papers=80, topics=5)
    return build_demo_suite(tmp_path_factory.mktemp("tiny") / "suite", config)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (real corpora); tests that need it skip with the reason when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real corpora not found at {SHARED_DATA} (set SCIDOCS_EVAL_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def sample_dir(shared_data: Path) -> Path:
    """The SPECTER training-format sample (data.json, metadata.json, train/val/test ids)."""
    return shared_data / "specter-sample"


@pytest.fixture(scope="session")
def demo_vectors(demo_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A .vec file of seeded random 20-d vectors for every demo word (fast stand-in for trained vectors)."""
    analyze = analyzer()
    words = sorted({w for p in demo_suite.papers() for w in analyze(f"{p.title} {p.abstract}")})
    vectors = np.random.default_rng(0).standard_normal((len(words), 20))
    path = tmp_path_factory.mktemp("vectors") / "demo.vec"
    lines = [f"{len(words)} 20"] + [w + " " + " ".join(f"{x:.5f}" for x in v) for w, v in zip(words, vectors)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` skip, with the reason, where torch sees no CUDA device."""
    gpu_tests = [item for item in items if "gpu" in item.keywords]
    if gpu_tests and not _cuda_available():
        for item in gpu_tests:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)"))
