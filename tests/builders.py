"""Test-only model builders (also used by bench/): a small random BERT checkpoint trained from given texts."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BERT_BASE_SIZE = {"vocab_size": 30522, "hidden_size": 768, "layers": 12, "heads": 12}  # `build_small_bert` options


def build_small_bert(texts: Sequence[str], out_dir: str | os.PathLike[str], *, vocab_size: int = 4000,
                     hidden_size: int = 64, layers: int = 2, heads: int = 2, dropout: float = 0.1,
                     seed: int = 0) -> Path:
    """A randomly initialised BERT with a WordPiece vocabulary learnt from `texts`, saved as a checkpoint.

    For smoke tests and CPU benchmarks of the training loop; `**BERT_BASE_SIZE` gives a BERT-base-sized model
    (for GPU throughput figures: random weights compute as fast as trained ones).
    """
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    wordpiece = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wordpiece.normalizer = normalizers.BertNormalizer(lowercase=True)
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wordpiece.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials))
    wordpiece.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[(token, wordpiece.token_to_id(token)) for token in ("[CLS]", "[SEP]")])
    tokenizer = BertTokenizerFast(tokenizer_object=wordpiece, unk_token="[UNK]", sep_token="[SEP]",
                                  pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]")
    config = BertConfig(vocab_size=wordpiece.get_vocab_size(), hidden_size=hidden_size, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=4 * hidden_size, max_position_embeddings=512,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    torch.manual_seed(seed)
    out_dir = Path(out_dir)
    BertModel(config).save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def model_weights(folder: str | os.PathLike[str]) -> dict:
    """The state dict of the transformers checkpoint in `folder` (to compare two trained models)."""
    from transformers import AutoModel

    return AutoModel.from_pretrained(folder).state_dict()


def build_retrieval_dataset(folder: str | os.PathLike[str], *, documents: int = 400, queries: int = 40,
                            dim: int = 16, seed: int = 0, candidates: int | None = None,
                            duplicates: int = 20, split: str = "test") -> dict:
    """A BEIR-layout retrieval dataset with graded qrels and a random float32 vector for every text.

    `duplicates` documents repeat an earlier document's vector (ties that only the document id can break, some
    of them judged relevant); with `candidates`, each query also gets that many candidates (`top_ranked`, a
    reranking dataset). Returns {"texts": text -> vector, "queries": id -> vector, "corpus": id -> vector}.
    """
    import numpy as np

    from scidocs_eval.formats.retrieval import Document, write_beir

    rng = np.random.default_rng(seed)
    corpus = [Document(f"doc{i:05d}", f"title {i}" if i % 7 else "", f"text of document {i}")
              for i in range(documents)]
    query_texts = {f"query{i:04d}": f"query number {i}" for i in range(queries)}
    doc_vectors = rng.normal(size=(documents, dim)).astype(np.float32)
    for row in rng.choice(np.arange(1, documents), duplicates, replace=False):
        doc_vectors[row] = doc_vectors[rng.integers(0, row)]
    query_vectors = rng.normal(size=(queries, dim)).astype(np.float32)
    top_ranked = None
    qrels: dict[str, dict[str, int]] = {}
    for query_id in query_texts:
        pool = rng.choice(documents, candidates or 8, replace=False)
        judged = pool if candidates else pool[:6]
        qrels[query_id] = {corpus[j].doc_id: int(rng.integers(0, 3)) for j in judged}
        if candidates:
            top_ranked = top_ranked or {}
            top_ranked[query_id] = [corpus[j].doc_id for j in pool]
    write_beir(folder, corpus, query_texts, {split: qrels}, top_ranked={split: top_ranked} if top_ranked else None)
    texts = {doc.mteb_text: vector for doc, vector in zip(corpus, doc_vectors)}
    texts.update({text: vector for text, vector in zip(query_texts.values(), query_vectors)})
    return {"texts": texts, "queries": dict(zip(query_texts, query_vectors)),
            "corpus": {doc.doc_id: vector for doc, vector in zip(corpus, doc_vectors)}}


def write_vectors(path: str | os.PathLike[str], vectors: dict) -> Path:
    """An embeddings file (official JSON lines) of {id: vector}."""
    from scidocs_eval.formats.embeddings import format_embedding_line

    Path(path).write_bytes(b"".join(format_embedding_line(key, vector) for key, vector in vectors.items()))
    return Path(path)


def mteb_lookup_encoder(vectors: dict) -> object:
    """An MTEB 2.x encoder (its EncoderProtocol) returning `vectors[text]` for each text it is given."""
    import numpy as np
    from mteb.models.model_meta import ModelMeta

    class Lookup:
        mteb_model_meta = ModelMeta(loader=None, name="test/lookup", revision="1", model_type=["dense"], embed_dim=16,
                                    similarity_fn_name="cosine", languages=None, open_weights=True,
                                    release_date=None, n_parameters=0, n_embedding_parameters=0, memory_usage_mb=0,
                                    license="mit", max_tokens=np.inf, reference=None, framework=[],
                                    use_instructions=False, public_training_code=None, public_training_data=None,
                                    training_datasets=set(), modalities=["text"])

        def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):
            return np.stack([vectors[text] for batch in inputs for text in batch["text"]])

        def similarity(self, a, b):
            from mteb.models.model_meta import ScoringFunction
            from mteb.similarity_functions import select_similarity

            return select_similarity(a, b, ScoringFunction("cosine"))

        def similarity_pairwise(self, a, b):
            raise NotImplementedError

    return Lookup()


def write_clustering_copy(root: str | os.PathLike[str], task: str, count: int, seed: int = 0) -> dict:
    """A synthetic copy of clustering task `task`'s hub rows in `root/task` (rows of one document, or of document
    lists for a task whose hub rows are sets; "main.secondary" labels for ArXiv's hierarchical tasks); returns
    text -> a vector near its label's centre."""
    import random

    import numpy as np

    from scidocs_eval.evaluation.task import TASKS
    from scidocs_eval.formats.hf_rows import write_rows

    cls = TASKS[task]
    names = ["cs.AI", "cs.CL", "cs.LG", "math.PR", "math.ST", "hep-th", "q-bio.NC"] if cls.hierarchical_sample \
        else ["neuroscience", "genomics", "ecology", "immunology"]
    rng, generator = random.Random(seed), np.random.default_rng(seed)
    labels = [rng.choice(names) for _ in range(count)]
    texts = [f"{task} paper {i} on {label} {rng.random():.6f}" for i, label in enumerate(labels)]
    if cls.row_lists:
        rows = [{"sentences": texts[i:i + 250], "labels": labels[i:i + 250]} for i in range(0, count, 250)]
    else:
        rows = [{"sentences": text, "labels": label} for text, label in zip(texts, labels)]
    Path(root, task).mkdir(parents=True, exist_ok=True)
    write_rows(Path(root, task), "test", rows)
    centres = {label: generator.normal(size=12) for label in names}
    return {text: (centres[label] + generator.normal(scale=1.5, size=12)).astype(np.float32)
            for text, label in zip(texts, labels)}


def write_classification_copy(root: str | os.PathLike[str], task: str, labels: int = 5, train: int = 300,
                              test: int = 120, seed: int = 0) -> dict:
    """A synthetic copy of an MTEB classification task's train and test rows (`text`, `label`) in `root/task`, a
    repeated text in each split; returns text -> a vector near its label's centre."""
    import random

    import numpy as np

    from scidocs_eval.formats.hf_rows import write_rows

    rng, generator = random.Random(seed), np.random.default_rng(seed)
    centres = generator.normal(size=(labels, 10))
    vectors = {}
    Path(root, task).mkdir(parents=True, exist_ok=True)
    for split, count in (("train", train), ("test", test)):
        rows = []
        for i in range(count):
            label = rng.randrange(labels)
            text = f"{split} paper {i} about subject {label}"
            vectors[text] = (centres[label] + generator.normal(scale=1.2, size=10)).astype(np.float32)
            rows.append({"text": text, "label": label})
        rows.append(dict(rows[0]))
        write_rows(Path(root, task), split, rows)
    return vectors


def write_mteb_copies(root: str | os.PathLike[str], benchmarks: tuple[str, ...] = ("mteb-scidocs", "mteb-sci"),
                      seed: int = 0) -> None:
    """A small synthetic copy of every task of `benchmarks` with a hub dataset, each in its task's layout, in
    `root/{task}` (retrieval: BEIR, with candidates for reranking, on the task's split)."""
    from scidocs_eval.evaluation.task import TASKS, task_names

    for offset, name in enumerate(n for b in benchmarks for n in task_names(benchmark=b)):
        spec = TASKS[name].spec
        if spec.family in ("retrieval", "reranking"):
            build_retrieval_dataset(Path(root, name), documents=120, queries=12, seed=seed + offset,
                                    candidates=20 if spec.family == "reranking" else None,
                                    split=spec.dataset["split"])
        elif spec.family == "clustering":
            write_clustering_copy(root, name, 2200 if TASKS[name].hierarchical_sample else 800, seed + offset)
        elif spec.family == "mteb-classification":
            write_classification_copy(root, name, seed=seed + offset)


def build_every_format_suite(base: str | os.PathLike[str], scirepeval_folders: tuple[str, ...] | None = None) -> Path:
    """A small suite under `base`/world holding data of every format a registered task reads: the demo suite's
    layout, SciRepEval's (its folders `scirepeval_folders`, default all) and MTEB's scientific sets."""
    from scidocs_eval.data.demo import DemoConfig, build_demo_suite
    from scidocs_eval.tasks.scirepeval import write_synthetic_scirepeval

    base = Path(base)
    root = build_demo_suite(base / "world", DemoConfig(
        mag_papers=250, mesh_papers=120, ranking_queries=4, positives=2, negatives=6, recomm_impressions=(40, 10, 10),
        recomm_papers=80, topics=5)).root
    write_synthetic_scirepeval(base / "scirepeval", seed=3)
    for folder in (base / "scirepeval").iterdir():
        if folder.is_dir() and (scirepeval_folders is None or folder.name in scirepeval_folders):
            shutil.copytree(folder, root / folder.name)
    write_mteb_copies(root, ("mteb-sci",))
    return root


def write_one_vector(folder: str | os.PathLike[str]) -> Path:
    """An embeddings file of one paper no suite holds: enough for a command to reach its data checks."""
    path = Path(folder) / "one.jsonl"
    path.write_text('{"paper_id": "nobody", "embedding": [0.5, 1.0]}\n', encoding="utf-8")
    return path


def score_task(task: Any, suite: Any, embeddings: Any, split: str = "test", missing: str = "official") -> Any:
    """`task` scored on `split` of `suite` as the runner scores it: its data loaded once (`Task.load`), then
    `evaluate(data, embeddings, missing)`."""
    return task.evaluate(task.load(suite, split), embeddings, missing)
