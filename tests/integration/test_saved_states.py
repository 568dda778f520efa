"""The embedded model's saved states, for real: lean in memory.

A saved state carries no logits table and restores to the same answer. Needs the ``local``
extra (which `.ci/run` installs) and runs its default model.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.integration


def test_a_saved_state_leaves_the_logits_table_and_restores_the_same_answer() -> None:
    import llama_cpp

    from phasegraph.models.embedded import default_model_path
    from phasegraph.models.state_cache import install_lean_states

    llm = llama_cpp.Llama(model_path=str(default_model_path()), n_ctx=1024, verbose=False, seed=0)
    install_lean_states(llm, llama_cpp)
    llm.eval(llm.tokenize(b"The three primary colours are"))
    saved = llm.save_state()
    # llama-cpp-python's own save copies a row of logits a token: here one row of zeros
    assert saved.scores.shape == (1, llm.n_vocab()) and not saved.scores.any()
    assert saved.n_tokens == llm.n_tokens and saved.llama_state_size > 0

    def answer() -> str:
        prompt = "The three primary colours are"
        text: Any = llm.create_completion(prompt, max_tokens=12, temperature=0)
        return str(text["choices"][0]["text"])

    first = answer()
    llm.reset()
    llm.eval(llm.tokenize(b"Something else entirely"))  # the context moves on
    llm.load_state(saved)
    assert llm.n_tokens == saved.n_tokens
    assert answer() == first  # from the restored state, the same greedy answer
