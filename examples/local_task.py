"""A real task on the embedded local model: no key, no network, threads in a SQLite file.

Run it with ``python examples/local_task.py`` after ``pip install -e ".[local]"``. It makes a
temporary workspace with a few files and asks phasegraph, with its built-in workspace tools, to
"list the files in this folder and write their names to files.md". The first run assembles the
default model (Qwen2.5-Coder-1.5B, about 1.1 GB) into the cache directory; every run prints
progress on stderr, then the summary, then whether files.md came out right and the run's status.
On the sample workspace the run is given checks of code, one per file ("files.md contains
notes.txt"...): its status is ``completed`` only when they pass, and a failing one tells the next
round what is still missing (a small model does not always manage).

Options: ``--model local:PATH.gguf`` for another GGUF file, ``--model NAME --base-url URL`` for an
OpenAI-compatible endpoint, ``--max-steps N`` (default 17, the local suite's budget of model
calls and tool actions), ``--workspace DIR`` to use a folder of yours.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from phasegraph import Context, build_graph
from phasegraph.models import describe_model, embedded_choice
from phasegraph.models.embedded import model_path

REQUEST = "List the files in this folder and write their names to files.md, one per line."
SAMPLE_FILES = {"notes.txt": "meeting notes\n", "todo.txt": "buy milk\n", "plan.md": "# Plan\n"}


_BEGAN = time.monotonic()


def _progress(event: dict[str, Any]) -> None:
    details = " ".join(f"{k}={v}" for k, v in event.items() if k != "event")
    elapsed = time.monotonic() - _BEGAN
    print(f"  [{elapsed:5.0f}s {event.get('event')}] {details}"[:200], file=sys.stderr, flush=True)


def main() -> int:
    """Run the task and report how it went; exit 0 when the run ended with a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="empty: the embedded local model")
    parser.add_argument("--base-url", default="")
    parser.add_argument("--max-steps", type=int, default=17)
    parser.add_argument("--workspace", default="", help="empty: a new temporary folder")
    args = parser.parse_args()

    if args.workspace:
        workspace = Path(args.workspace).resolve()
    else:
        workspace = Path(tempfile.mkdtemp(prefix="phasegraph-local-"))
        for name, text in SAMPLE_FILES.items():
            (workspace / name).write_text(text)
    context = Context(
        model=args.model, base_url=args.base_url, workspace=str(workspace), max_steps=args.max_steps
    )
    print(f"Model: {describe_model(context)}", file=sys.stderr)
    chosen = embedded_choice(context)
    if chosen is not None:  # assembled once from its packages, with progress
        model_path(chosen, on_progress=lambda text: print(text, file=sys.stderr, flush=True))

    # What done means, said in code: the status then rests on checks, not on the judge's word.
    checks = [f"contains:files.md:{name}" for name in SAMPLE_FILES] if not args.workspace else []
    database = workspace / ".phasegraph" / "threads.sqlite"
    database.parent.mkdir(exist_ok=True)
    config = {"configurable": {"thread_id": f"local-{uuid.uuid4().hex[:8]}"}}
    started = time.monotonic()
    with SqliteSaver.from_conn_string(str(database)) as saver:
        graph = build_graph(checkpointer=saver)
        for event in graph.stream(
            {"request": REQUEST, "checks": checks}, config, context=context, stream_mode="custom"
        ):
            _progress(event)
        out = graph.get_state(config).values
    elapsed = time.monotonic() - started

    print(out.get("final_summary") or "(no summary)")
    listing = workspace / "files.md"
    expected = sorted(SAMPLE_FILES) if not args.workspace else None
    written = listing.read_text(errors="replace") if listing.is_file() else ""
    right = expected is not None and all(name in written for name in expected)
    print(
        f"\nstatus={out.get('status')} steps={out.get('step_count')} "
        f"llm_calls={out.get('llm_calls')} wall_s={elapsed:.0f} "
        f"files_md={'right' if right else ('written' if written else 'missing')} "
        f"thread={config['configurable']['thread_id']} workspace={workspace}"
    )
    return 0 if out.get("final_summary") else 1


if __name__ == "__main__":
    sys.exit(main())
