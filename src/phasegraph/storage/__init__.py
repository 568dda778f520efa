"""The durable side of a run: the checkpointer and the database beside its checkpoints.

`open_checkpointer` (and `aopen_checkpointer`) opens the checkpointer the CLI uses, for a SQLite
file or a ``postgresql://`` URL (`checkpointer`). phasegraph keeps its own tables in the same
database (`database`): the thread leases (`lease`), the tool journal (`journal`) and the thread
index (`thread_index`). `integrity` refuses a checkpoint that does not come back whole.
"""

from phasegraph.storage.checkpointer import aopen_checkpointer, open_checkpointer

__all__ = ["aopen_checkpointer", "open_checkpointer"]
