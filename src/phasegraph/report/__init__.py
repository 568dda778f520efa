"""What a thread's run was, for a person: the run report and what its checkpoints tell.

`document` builds the report from a thread's state (`build_report`, `statistics`) and writes it
as Markdown, HTML or JSON (`render`); `html` is its one self-contained HTML page; `history` reads
a thread's checkpoints for what its latest state does not keep (`run_history`: model use by
stage, rounds' wall time, reviews and replans).
"""

from phasegraph.report.document import (
    build_report,
    event_text,
    markdown_sections,
    render,
    statistics,
    to_html,
    to_json,
    to_markdown,
)

__all__ = [
    "build_report",
    "event_text",
    "markdown_sections",
    "render",
    "statistics",
    "to_html",
    "to_json",
    "to_markdown",
]
