"""The embedded model's saved states, for real: lean in memory, openings on disk.

A saved state carries no logits table and restores to the same answer. A process that calls the
model leaves the state of its prompt's opening turn on disk; the next process, with a prompt
that opens the same way, reads only the rest, and answers the same. Needs the ``local`` extra
(which `.ci/run` installs) and runs its default model.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

#: A context size no other caller of the model uses: its states get a folder of their own.
N_CTX = 1536

CALL = f"""
import json, sys
from langchain_core.messages import HumanMessage, SystemMessage
from phasegraph.models.local import LocalChatModel, load_llama

model = LocalChatModel(n_ctx={N_CTX}, max_tokens=12)
rules = " ".join(f"Rule {{n}}: answer in one short sentence." for n in range(1, 13))
opening = SystemMessage("You are a terse assistant. " + rules)
reply = model.invoke([opening, HumanMessage(sys.argv[1])])
llm, _lock = load_llama(model.resolved_path(), {N_CTX}, None)
print(json.dumps({{
    "text": reply.content,
    "prompt": reply.usage_metadata["input_tokens"],
    "reused": reply.usage_metadata["input_token_details"]["cache_read"],
    "folder": str(llm.cache.disk.folder),
}}))
"""


def _call(question: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", CALL, question], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_later_process_reads_only_what_follows_the_opening_it_saved() -> None:
    first = _call("What colour is the sky?")
    folder = Path(str(first["folder"]))
    try:
        shutil.rmtree(folder)  # whatever an earlier run of this test left: start from none
        first = _call("What colour is the sky?")
        assert int(str(first["reused"])) < 10  # (llama.cpp counts a token or so apart)
        assert len(list(folder.glob("*.pgstate"))) == 1  # the opening turn's state, once
        again = _call("What colour is the sky?")
        other = _call("What colour is grass?")
        # the system turn (well over 100 tokens) is not read again by either later process
        assert int(str(again["reused"])) > 100 and again["reused"] == other["reused"]
        assert int(str(other["prompt"])) > int(str(other["reused"]))
        assert again["text"] == first["text"]  # the same answer from a restored opening
        assert len(list(folder.glob("*.pgstate"))) == 1  # kept once, not again
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_saved_state_leaves_the_logits_table_and_restores_the_same_answer() -> None:
    import llama_cpp

    from phasegraph.models.embedded import default_model_path
    from phasegraph.models.local import new_llama
    from phasegraph.models.state_cache import install_lean_states

    llm = new_llama(str(default_model_path()), n_ctx=1024)
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
