"""`baseline specter2` with a tiny BERT and a task adapter the test trains for a step, offline.

The adapters library pins its own transformers version, so these tests run in an environment of their own (CI
builds it, `.ci/run`): ``python -m venv .venv-adapters && .venv-adapters/bin/pip install -c constraints.txt
"adapters==1.3.0" "transformers==4.57.6" -e ".[transformers,offline-models]" pytest``, then
``.venv-adapters/bin/python -m pytest tests/test_specter2.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from scidocs_eval.cli import main
from scidocs_eval.formats.corpus import paper_text
from scidocs_eval.formats.suite import Suite

torch = pytest.importorskip("torch")
pytest.importorskip("adapters", reason="SPECTER2 needs the adapters library, which pins its own transformers "
                    "version: pip install -c constraints.txt -e '.[specter2]' in an environment of its own")

from builders import build_small_bert  # noqa: E402


def _train_adapter(base: Path, texts: list[str], out: Path, first: int) -> Path:
    """A bottleneck adapter on `base` trained for one step (pulling two texts' [CLS] vectors together), saved as
    SPECTER2's are."""
    from adapters import AutoAdapterModel
    from transformers import AutoTokenizer

    torch.manual_seed(first)
    model = AutoAdapterModel.from_pretrained(base)
    model.add_adapter("task", config="seq_bn")
    model.train_adapter("task")
    batch = AutoTokenizer.from_pretrained(base)(texts[first:first + 4], padding=True, truncation=True,
                                                max_length=32, return_tensors="pt")
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    cls = model(**batch).last_hidden_state[:, 0]
    (cls[0] - cls[1]).pow(2).sum().backward()
    optimizer.step()
    model.save_adapter(str(out), "task")
    return out


@pytest.fixture(scope="module")
def base_and_adapter(tiny_suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny BERT, and a bottleneck adapter on it trained for one step and saved as SPECTER2's are."""
    folder = tmp_path_factory.mktemp("specter2")
    texts = [f"{p.title} {p.abstract}" for p in tiny_suite.papers()]
    base = build_small_bert(texts, folder / "base", vocab_size=500, hidden_size=32)
    return base, _train_adapter(base, texts, folder / "proximity", 0)


def _cls(base: Path, texts: list[str], adapter: Path | None) -> np.ndarray:
    from adapters import AutoAdapterModel
    from transformers import AutoModel, AutoTokenizer

    if adapter is None:
        model = AutoModel.from_pretrained(base).eval()
    else:
        model = AutoAdapterModel.from_pretrained(base).eval()
        model.load_adapter(str(adapter), load_as="task", set_active=True)
    batch = AutoTokenizer.from_pretrained(base)(texts, padding=True, truncation=True, max_length=32,
                                                return_tensors="pt")
    with torch.no_grad():
        return model(**batch).last_hidden_state[:, 0].numpy()


def test_baseline_specter2_embeds_with_the_task_adapter_end_to_end(base_and_adapter: tuple[Path, Path],
                                                                    tiny_suite: Suite, tmp_path: Path) -> None:
    base, adapter = base_and_adapter
    assert main(["baseline", "specter2", "--model", str(base), "--task-adapter", str(adapter), "--device", "cpu",
                 "--data", str(tiny_suite.root), "--tasks", "mesh", "--max-length", "32", "--out-dir", str(tmp_path),
                 "--quiet"]) == 0
    results = orjson.loads((tmp_path / "specter2.results.json").read_bytes())
    assert set(results["tasks"]) == {"mesh"}
    assert results["model_info"]["params"]["task_adapter"] == str(adapter)
    rows = [orjson.loads(line) for line in (tmp_path / "specter2.jsonl").read_bytes().splitlines()]
    vectors = {row["paper_id"]: row["embedding"] for row in rows}
    papers = [p for p in tiny_suite.papers(("mag_mesh",)) if p.paper_id in vectors][:6]
    texts = [paper_text(p, "[SEP]") for p in papers]
    got = np.array([vectors[p.paper_id] for p in papers])
    np.testing.assert_allclose(got, _cls(base, texts, adapter), atol=1e-5)
    assert np.abs(got - _cls(base, texts, None)).max() > 1e-3  # the trained adapter changed the vectors


def test_by_group_embeds_each_group_with_its_own_adapter(base_and_adapter: tuple[Path, Path], tiny_suite: Suite,
                                                         tmp_path: Path) -> None:
    base, adapter = base_and_adapter
    assert main(["baseline", "specter2", "--model", str(base), "--task-adapter",
                 f"cls={adapter},user-citation={base / 'none'}", "--data", str(tiny_suite.root), "--tasks", "mesh",
                 "--max-length", "32", "--device", "cpu", "--out-dir", str(tmp_path), "--quiet"]) == 2
    assert main(["baseline", "specter2", "--model", str(base), "--task-adapter", f"cls={adapter}", "--data",
                 str(tiny_suite.root), "--tasks", "mesh,cite", "--max-length", "32", "--device", "cpu", "--out-dir",
                 str(tmp_path), "--quiet"]) == 2
    assert main(["baseline", "specter2", "--model", str(base), "--task-adapter", f"cls={adapter}", "--data",
                 str(tiny_suite.root), "--tasks", "mesh", "--max-length", "32", "--device", "cpu", "--out-dir",
                 str(tmp_path), "--quiet"]) == 0
    results = orjson.loads((tmp_path / "specter2.results.json").read_bytes())
    assert results["model_info"]["groups"] == {"cls": str(adapter)}
    rows = [orjson.loads(line) for line in (tmp_path / "specter2-cls.jsonl").read_bytes().splitlines()]
    vectors = {row["paper_id"]: row["embedding"] for row in rows}
    papers = [p for p in tiny_suite.papers(("mag_mesh",)) if p.paper_id in vectors][:4]
    np.testing.assert_allclose(np.array([vectors[p.paper_id] for p in papers]),
                               _cls(base, [paper_text(p, "[SEP]") for p in papers], adapter), atol=1e-5)


def test_by_format_embeds_each_format_with_its_adapter_in_one_run(tmp_path: Path) -> None:
    """SciRepEval's recipe: [CLF] classification, [RGN] regression, [PRX] proximity and search candidates, [QRY]
    search queries, each paper once per format; here with local adapters in place of the authors' hub ones."""
    from scidocs_eval.formats.scirepeval import meta_file, read_meta
    from scidocs_eval.formats.suite import paper_of_record
    from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval

    data = tmp_path / "scirepeval"
    write_synthetic_scirepeval(data, seed=2)
    texts = [f"{p.title} {p.abstract}" for p in Suite(data).papers(tuple(
        meta_file(config) for config in ("search", "drsm", "tweet_mentions")))]
    base = build_small_bert(texts, tmp_path / "base", vocab_size=300, hidden_size=32)  # words of this copy
    adapters = {name: _train_adapter(base, texts, tmp_path / name, seed)
                for seed, name in enumerate(("classification", "regression", "proximity", "adhoc_query"))}
    out = tmp_path / "out"
    pairs = ",".join(f"{name}={folder}" for name, folder in adapters.items())
    assert main(["baseline", "specter2", "--model", str(base), "--task-adapter", pairs, "--data", str(data),
                 "--tasks", "scirepeval-search,scirepeval-drsm,scirepeval-tweet-mentions", "--max-length", "32",
                 "--device", "cpu", "--out-dir", str(out), "--quiet"]) == 0
    results = orjson.loads((out / "specter2.results.json").read_bytes())
    assert set(results["tasks"]) == {"scirepeval-search", "scirepeval-drsm", "scirepeval-tweet-mentions"}
    written = {"classification": ("drsm", None), "regression": ("tweet_mentions", None),
               "proximity": ("search", None), "adhoc_query": ("search", "queries")}
    for name, (config, role) in written.items():
        meta = read_meta(data / meta_file(config))
        ids = meta.queries if role else [i for i in meta.records if i not in set(meta.queries)]
        file = out / ("specter2-scirepeval-search-queries.jsonl" if role else f"specter2-{name}.jsonl")
        vectors = {row["paper_id"]: row["embedding"] for row in map(orjson.loads, file.read_bytes().splitlines())}
        assert set(ids) <= set(vectors)
        fields = ("venue", "year") if config == "search" else ()  # Search's candidates: with venue and year
        papers = [paper_of_record(i, meta.records[i], fields) for i in ids[:4]]
        got = np.array([vectors[p.paper_id] for p in papers])
        texts_in = [paper_text(p, "[SEP]") for p in papers]
        np.testing.assert_allclose(got, _cls(base, texts_in, adapters[name]), atol=1e-5, err_msg=name)
        for other in set(adapters) - {name}:  # each format's papers went through its adapter, no other
            assert np.abs(got - _cls(base, texts_in, adapters[other])).max() > 1e-4, (name, other)


def test_the_default_recipe_loads_the_authors_adapters_from_the_hub(base_and_adapter: tuple[Path, Path],
                                                                    tiny_suite: Suite, tmp_path: Path) -> None:
    """`baseline specter2` with no --task-adapter: mag/mesh through allenai/specter2_classification, the ranking
    tasks through allenai/specter2, fetched by `adapters` from the hub, here a hub cache holding tiny ones
    (HF_HUB_OFFLINE: what a user with the authors' adapters downloaded gets)."""
    import os
    import subprocess
    import sys

    base, proximity = base_and_adapter
    texts = [f"{p.title} {p.abstract}" for p in tiny_suite.papers()]
    hub = tmp_path / "hub"
    served = {"specter2_classification": _train_adapter(base, texts, tmp_path / "classification", 5),
              "specter2": proximity}
    for repo, folder in served.items():
        snapshot = hub / f"models--allenai--{repo}" / "snapshots" / ("0" * 40)
        snapshot.parent.mkdir(parents=True)
        snapshot.symlink_to(folder, target_is_directory=True)
        (hub / f"models--allenai--{repo}" / "refs").mkdir()
        (hub / f"models--allenai--{repo}" / "refs" / "main").write_text("0" * 40)
    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-m", "scidocs_eval.cli", "baseline", "specter2", "--model", str(base),
                          "--data", str(tiny_suite.root), "--tasks", "mesh,cite", "--max-length", "32", "--device",
                          "cpu", "--out-dir", str(out), "--quiet"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in out.glob("*.jsonl")) == ["specter2-classification.jsonl",
                                                           "specter2-proximity.jsonl"]
    for name, metadata, adapter in (("classification", "mag_mesh", served["specter2_classification"]),
                                    ("proximity", "view_cite_read", proximity)):
        rows = (out / f"specter2-{name}.jsonl").read_bytes().splitlines()
        vectors = {row["paper_id"]: row["embedding"] for row in map(orjson.loads, rows)}
        papers = [p for p in tiny_suite.papers((metadata,)) if p.paper_id in vectors][:4]
        np.testing.assert_allclose(np.array([vectors[p.paper_id] for p in papers]),
                                   _cls(base, [paper_text(p, "[SEP]") for p in papers], adapter), atol=1e-5)
