"""[CLS] pooling reads one row of the last layer, so compute only that row there.

In the last transformer layer every token still supplies a key and a value, but only the [CLS] row needs
its query, attention output and feed-forward block. Computing that row alone skips about 5/6 of the last
layer's work (on 6-layer MiniLM, about a seventh of the model's) and gives the same vectors up to float
rounding (~1e-6; a test compares it with the full forward). Applied to BERT-architecture models with absolute
positions (BERT, SciBERT, SPECTER, MiniLM); any other model runs its full forward.
"""

from __future__ import annotations

import math
from typing import Any

from scidocs_eval.extras import require

NEEDED_BY = "the transformer encoder"


def split_last_layer(network: Any) -> Any | None:
    """Remove the last layer from a BERT model's encoder and return it; None (model untouched) otherwise
    (another architecture, a decoder, relative positions, or no layers).

    After the split, `network(...)`'s `last_hidden_state` is the input of the removed layer, which
    `cls_of_last_layer` finishes for the [CLS] row.
    """
    torch = require("torch", NEEDED_BY)

    config = network.config
    layers = network.encoder.layer if config.model_type == "bert" else ()
    if not layers or getattr(config, "is_decoder", False) \
            or getattr(config, "position_embedding_type", "absolute") != "absolute":
        return None
    last = layers[-1]
    network.encoder.layer = torch.nn.ModuleList(layers[:-1])
    return last


def cls_of_last_layer(layer: Any, hidden: Any, attention_mask: Any) -> Any:
    """(batch, dim): the output of BERT `layer` at the [CLS] (first) position.

    Args:
        layer: the BertLayer that `split_last_layer` removed.
        hidden: (batch, tokens, dim) its input, the previous layer's hidden states.
        attention_mask: (batch, tokens), 1 for real tokens and 0 for padding.
    """
    torch = require("torch", NEEDED_BY)

    attention = layer.attention.self
    batch, tokens, dim = hidden.shape
    heads, head_size = attention.num_attention_heads, attention.attention_head_size

    def split_heads(states: Any, length: int) -> Any:
        return states.view(batch, length, heads, head_size).transpose(1, 2)

    query = split_heads(attention.query(hidden[:, :1]), 1)
    key = split_heads(attention.key(hidden), tokens)
    value = split_heads(attention.value(hidden), tokens)
    mask = attention_mask.bool()[:, None, None, :]
    context = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask,
                                                               scale=1 / math.sqrt(head_size))
    attended = layer.attention.output(context.transpose(1, 2).reshape(batch, 1, dim), hidden[:, :1])
    return layer.output(layer.intermediate(attended), attended)[:, 0]
