"""Choosing the chat model and talking to it.

`selection` picks the model the settings name (`model_from_context`, `describe_model`,
`model_kind`, `embedded_choice`); `embedded` assembles and verifies the models the package index
carries; `local` runs a GGUF file in-process with llama.cpp (`local_format`: what it sends and
reads back); `scripted` returns prepared answers; `structured` makes every stage's forced
function call, validated and repaired.
"""

from phasegraph.models.selection import (
    describe_model,
    embedded_choice,
    model_from_context,
    model_kind,
)

__all__ = ["describe_model", "embedded_choice", "model_from_context", "model_kind"]
