"""Test-only model builders (also used by bench/): a small random BERT checkpoint trained from given texts."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

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
