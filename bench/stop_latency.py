"""How soon a stop ends a local model call, in the prompt's reading and in the answer's writing.

    python -m bench.stop_latency [--model qwen2.5-coder-1.5b] [--repeats 3]

A call is stopped (`phasegraph.models.stop.stop_calls`, what Ctrl-C does) a moment after it
starts, once while llama.cpp reads a long prompt and once while it writes the answer; the figure
is the median seconds from the stop to the call's end, beside the seconds the whole prompt's
reading takes unstopped (what an interrupt waited for before). What the abort callback costs a
prompt's reading is timed side by side: the same prompt read with it and without it,
alternating, and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from phasegraph.models import stop
from phasegraph.models.embedded import EMBEDDED, model_path
from phasegraph.models.local import new_llama
from phasegraph.models.model_thread import on_model_thread

PROMPT = "Files: " + ", ".join(f"report_{n:03d}.txt" for n in range(300)) + ".\nList them:"


def _read(llm: Any, tokens: list[int]) -> None:
    llm.reset()
    llm.eval(tokens)
    stop.check()


def _write(llm: Any, tokens: list[int]) -> None:
    llm.reset()
    llm.eval(tokens[:64])
    for _ in range(400):
        llm.eval([llm.sample(temp=0.0)])
        stop.check()


def _stopped_after(call: Any, wait_s: float) -> float:
    """Seconds from a stop, ``wait_s`` after ``call`` starts on the model thread, to its end."""
    ended: list[float] = []

    def run() -> None:
        try:
            on_model_thread(call)
        except stop.CallStopped:
            pass
        except RuntimeError:  # the decode llama.cpp aborted, raised before `check`
            pass
        ended.append(time.perf_counter())

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(wait_s)
    stopped_at = time.perf_counter()
    stop.stop_calls()
    thread.join()
    return ended[0] - stopped_at


def stop_latency(model: str, repeats: int) -> dict[str, Any]:
    """Median seconds from a stop to the call's end, reading and writing; the whole reading."""
    import llama_cpp

    llm = new_llama(str(model_path(EMBEDDED[model])), n_ctx=8192)
    stop.install_abort(llm, llama_cpp)
    tokens = llm.tokenize(PROMPT.encode())
    plain: list[float] = []
    asked: list[float] = []
    for i in range(repeats * 2):
        began = time.perf_counter()
        if i % 2:
            on_model_thread(lambda: _read(llm, tokens))  # through the callback's wrapper
        else:
            on_model_thread(lambda: (llm.reset(), type(llm).eval(llm, tokens)))
        (asked if i % 2 else plain).append(time.perf_counter() - began)
    whole = statistics.median(plain)
    reading = [_stopped_after(lambda: _read(llm, tokens), 0.5) for _ in range(repeats)]
    writing = [_stopped_after(lambda: _write(llm, tokens), 3.0) for _ in range(repeats)]
    stop.forget(llm)
    llm.close()
    return {
        "prompt_tokens": len(tokens),
        "whole_read_s": round(whole, 2),
        "read_with_callback_ratio": round(statistics.median(asked) / whole, 3),
        "stopped_reading_s": round(statistics.median(reading), 3),
        "stopped_writing_s": round(statistics.median(writing), 3),
        "all_s": [round(s, 3) for s in reading + writing],
    }


def main(argv: list[str] | None = None) -> int:
    """Print the figures as one line of JSON."""
    import json

    parser = argparse.ArgumentParser(prog="python -m bench.stop_latency")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", choices=sorted(EMBEDDED))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(stop_latency(args.model, args.repeats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
