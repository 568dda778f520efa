"""phasegraph from code: a run that pauses for plan review, resumed by thread id.

Run it with ``python examples/quickstart.py``. It uses the scripted model (prepared answers in
demo_script.json, so it runs offline and the same every time), two small tools of its own over
a temporary folder, and a SQLite file for the threads. Pass ``--model NAME`` (with
OPENAI_API_KEY, or ``--base-url`` for a local server) to drive it with a real model instead.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from phasegraph import Context, ScriptedChatModel, build_graph, resume

HERE = Path(__file__).parent


def main() -> int:
    """Run the demo request, approve its plan, print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=f"scripted:{HERE / 'demo_script.json'}")
    parser.add_argument("--base-url", default="")
    args = parser.parse_args()

    workspace = Path(tempfile.mkdtemp(prefix="phasegraph-demo-"))
    (workspace / "notes.txt").write_text("meeting notes\n")
    (workspace / "todo.txt").write_text("buy milk\n")

    @tool
    def list_names() -> str:
        """List the names of the files in the workspace."""
        return "\n".join(sorted(p.name for p in workspace.iterdir()))

    @tool
    def save_text(name: str, text: str) -> str:
        """Save text to a file of the workspace (a plain name, no folders)."""
        if Path(name).name != name or name.startswith("."):
            raise ValueError(f"{name!r} is not a plain file name")
        (workspace / name).write_text(text, encoding="utf-8")
        return f"wrote {len(text)} characters to {name}"

    context = Context(
        model=args.model, base_url=args.base_url, review="plan", workspace=str(workspace)
    )
    model = None
    if args.model.startswith("scripted:"):
        model = ScriptedChatModel.from_file(args.model.removeprefix("scripted:"))
        print("Using the scripted model (prepared answers from demo_script.json).", file=sys.stderr)
    config = {"configurable": {"thread_id": "demo-1"}}
    with SqliteSaver.from_conn_string(str(workspace / "threads.sqlite")) as saver:
        graph = build_graph(model=model, tools=[list_names, save_text], checkpointer=saver)
        request = "List the files in this folder and write their names to files.md"
        for event in graph.stream(
            {"request": request}, config, context=context, stream_mode="custom"
        ):
            print("  progress:", event, file=sys.stderr)
        state = graph.get_state(config)
        review = state.values["pending_review"]
        print(f"Paused for {review['kind']}: {[p['name'] for p in review['phases']]}")
        out = resume(
            graph,
            config,
            {"action": "approve"},
            context=context,
            on_progress=lambda event: print("  progress:", event, file=sys.stderr),
        )
    print(out["final_summary"])
    print(f"\nstatus={out['status']} steps={out['step_count']} workspace={workspace}")
    print((workspace / "files.md").read_text() if (workspace / "files.md").exists() else "")
    return 0 if out["status"] == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
