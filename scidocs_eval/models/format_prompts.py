"""Per-format prompts: an instruction prefix for each input format (`INPUT_FORMATS`), as SciRepEval gives an
instruction-tuned model one per task format (its INSTRUCTOR run: "Represent the Science document for
classification: ", "... for retrieval: ", "Represent the Science query for retrieving supporting documents: ").

`format_prompts` = {input format: prompt}; a format it does not name gets the adapter's `prompt`. With it, the
adapter embeds by format (`Adapter.by_format`): a paper two formats need is embedded once with each prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scidocs_eval.evaluation.task import INPUT_FORMATS
from scidocs_eval.params import Satisfies

if TYPE_CHECKING:
    from scidocs_eval.evaluation.papers import EmbeddingRole


def _is_format_prompts(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and \
        all(key in INPUT_FORMATS and isinstance(text, str) for key, text in value.items())


FORMAT_PROMPTS = Satisfies(_is_format_prompts, f"a mapping {{input format: prompt}} over {', '.join(INPUT_FORMATS)}",
                           outside=[{"search": "Query: "}, {"proximity": 1}, {}, "Query: "])
"""The constraint of a `format_prompts` parameter."""


class FormatPrompts:
    """What an adapter with `prompt` and `format_prompts` parameters shares: whether it embeds by format, and the
    prompt of a role."""

    prompt: str | None
    format_prompts: dict[str, str] | None

    @property
    def by_format(self) -> bool:
        return bool(self.format_prompts)

    def role_prompt(self, role: EmbeddingRole | None) -> str | None:
        """The prompt of papers embedded in `role` (None: outside any role): its format's, else `prompt`."""
        if role is None or not self.format_prompts:
            return self.prompt
        return self.format_prompts.get(role.input_format, self.prompt)

