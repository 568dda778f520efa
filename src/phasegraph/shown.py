"""Text a person is shown: control characters made visible, never sent (SPEC section 5).

A tool's output and a model's answer are data. Written to a terminal as they are, an escape
sequence in them would act: move the cursor, rewrite what was printed, set the window's title,
or write the clipboard (OSC 52). Every human-facing render (``show``, ``chat``, progress, text
reports) passes text through `visible` (the terminal's own console does, `VisibleConsole`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

#: C0 controls but tab and newline, DEL, and the C1 controls (which some terminals act on).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMES = {"\x1b": "ESC", "\x07": "BEL", "\x08": "BS", "\r": "CR", "\x7f": "DEL", "\x00": "NUL"}


def visible(text: str) -> str:
    """``text`` with each control character shown as its name in angle brackets (``<ESC>``)."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda m: f"<{_NAMES.get(m.group(), f'U+{ord(m.group()):04X}')}>", text)


class VisibleConsole(Console):
    """A rich console that shows the control characters of what it prints (`visible`).

    Its own control codes (styles, a live display's cursor moves) are rich's, and are sent.
    """

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """Rich's segments, each text segment's control characters made visible."""
        for segment in super().render(renderable, options):
            if segment.control or _CONTROL.search(segment.text) is None:
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style, segment.control)
