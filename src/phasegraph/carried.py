"""The settings a thread keeps: what a run started with is what its resumes go on with.

A run given ``Context(model="scripted:...")`` and resumed with ``Command(resume=...)`` and no
context would otherwise load whatever the defaults name (the embedded model), silently. The
settings a run starts with beyond the defaults are kept in its limits (`start_settings`), and a
resume whose settings leave one at its default goes on with the thread's (`carried_settings`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from phasegraph.context import Context

logger = logging.getLogger("phasegraph")

#: Settings a thread does not keep: where it works is kept apart (the state's ``workspace``),
#: MCP servers' definitions may carry tokens in their environment, and an endpoint's address
#: is not written into a checkpoint (it may name a private host or hold credentials).
NOT_CARRIED = frozenset({"workspace", "mcp_servers", "base_url"})

#: Kept where the run named an endpoint (``base_url``, which is not kept).
ON_ENDPOINT = "model_on_endpoint"


def start_settings(context: Context) -> dict[str, Any]:
    """The settings of a new run that differ from the defaults, to keep with its thread.

    No endpoint address is kept (`NOT_CARRIED`); a run on one is marked `ON_ENDPOINT`, so
    that a resume naming no endpoint is told, and not sent elsewhere with the model's name.
    """
    defaults = Context.coerce(None)
    kept: dict[str, Any] = {
        f.name: getattr(context, f.name)
        for f in dataclasses.fields(Context)
        if f.name not in NOT_CARRIED and getattr(context, f.name) != getattr(defaults, f.name)
    }
    if context.base_url:
        kept[ON_ENDPOINT] = True
    return kept


def carried_settings(settings: Context, values: Mapping[str, Any]) -> Context:
    """The settings a resumed run goes on with: the thread's where the resume's are defaults.

    A setting the resume leaves at its default takes the thread's recorded value; one it
    names differently is kept, and logged as a change (a warning on the ``phasegraph``
    logger), as is a resume that names no endpoint for a thread that ran on one, so a resume
    never changes the model or tools unannounced. A thread that recorded none (a new run, an
    older thread) goes on as given.
    """
    recorded = (values.get("limits") or {}).get("settings") or {}
    names = {f.name for f in dataclasses.fields(Context)} - NOT_CARRIED
    defaults = Context.coerce(None)
    if recorded.get(ON_ENDPOINT) and not settings.base_url:
        # the model's name alone would send the thread's prompts to another endpoint
        names.discard("model")
        logger.warning(
            "the thread ran on a model endpoint (base_url), which is not kept with it; this "
            "resume names none and goes on with %r: give it the run's model and base_url",
            settings.model or "the embedded model",
        )
    taken: dict[str, Any] = {}
    for name, value in recorded.items():
        if name not in names:
            continue  # a setting this version does not know
        given = getattr(settings, name)
        if given == getattr(defaults, name):
            taken[name] = value
        elif given != value:
            logger.warning(
                "this resume changes the thread's setting %s from %r to %r", name, value, given
            )
    return dataclasses.replace(settings, **taken) if taken else settings
