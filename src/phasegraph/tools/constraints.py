"""Tool constraints by task type, narrowed per phase (SPEC section 5).

Rules map a task type (the ``task_type`` of the structured request) to the tools it may use
(``allowed``; absent means every tool) and those it may not (``forbidden``). A phase's own
``allowed_tools`` narrows the result further. The defaults keep read-only work read-only.
Rules are a setting (``Context.tool_rules``) and replace the defaults for the types they name.
A rule names tools, or kinds of tool by what tools declare of themselves (`KINDS`): ``@writes``
stands for every tool that declares a file it writes, ``@runs`` for every one that runs
programs, so the defaults hold for a caller's tools as for the built-in ones. Writing work may
run programs: under the sandbox a command reaches nothing but the workspace, and a program that
writes its result (``sort a > b``) is how content is made exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set

ToolRules = Mapping[str, Mapping[str, Sequence[str]]]

#: The kinds a rule may name, as ``@kind``: tools that declare ``writes`` (a file they write)
#: and tools that declare ``runs`` (the argv they run). No tool's name starts with ``@``.
KINDS = ("writes", "runs")

DEFAULT_TOOL_RULES: dict[str, dict[str, list[str]]] = {
    "research": {"forbidden": ["@writes", "@runs"]},
    "analysis": {"forbidden": ["@writes"]},
}


def resolved_rules(rules: ToolRules, kinds: Mapping[str, Set[str]]) -> ToolRules:
    """``rules`` with each ``@kind`` replaced by the names of the tools of that kind.

    ``kinds`` maps each of `KINDS` to the tools that declare it (`facts.tools.tool_kinds`).
    """

    def names_of(listed: Sequence[str]) -> list[str]:
        out: list[str] = []
        for name in listed:
            out += sorted(kinds.get(name[1:], ())) if name.startswith("@") else [name]
        return out

    return {
        task_type: {key: names_of(listed) for key, listed in rule.items()}
        for task_type, rule in rules.items()
    }


def same_rules(first: ToolRules, second: ToolRules, kinds: Mapping[str, Set[str]]) -> bool:
    """Whether two rules allow and forbid the same tools, kinds resolved (`resolved_rules`)."""

    def sets(rules: ToolRules) -> dict[str, dict[str, frozenset[str]]]:
        resolved = resolved_rules(rules, kinds)
        return {t: {k: frozenset(v) for k, v in rule.items()} for t, rule in resolved.items()}

    return sets(first) == sets(second)


def validate_rules(rules: object) -> dict[str, dict[str, list[str]]]:
    """Check a rules mapping's shape; a clear error names what is wrong."""
    if not isinstance(rules, Mapping):
        raise ValueError("tool_rules must map task types to {allowed, forbidden} lists")
    checked: dict[str, dict[str, list[str]]] = {}
    for task_type, rule in rules.items():
        if not isinstance(rule, Mapping) or set(rule) - {"allowed", "forbidden"}:
            raise ValueError(f"tool_rules[{task_type!r}] may only have 'allowed' and 'forbidden'")
        entry: dict[str, list[str]] = {}
        for key, names in rule.items():
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ValueError(f"tool_rules[{task_type!r}][{key!r}] must be a list of names")
            unknown = [n for n in names if n.startswith("@") and n[1:] not in KINDS]
            if unknown:
                raise ValueError(
                    f"tool_rules[{task_type!r}][{key!r}] names unknown kinds {unknown}; "
                    f"the kinds are {['@' + kind for kind in KINDS]}"
                )
            entry[key] = list(names)
        checked[str(task_type)] = entry
    return checked


def allowed_tools(
    available: Iterable[str],
    task_type: str,
    phase_tools: Sequence[str],
    rules: ToolRules,
    *,
    always: Set[str] = frozenset(),
    needed: Set[str] = frozenset(),
) -> list[str]:
    """Tools a phase may use: what exists, within its task type's rule and the phase's list.

    ``always``: tools a phase's own list never narrows away: the reading tools, since a phase
    that cannot look at the workspace cannot do its part (small models narrow "write the
    result" to write_file alone). ``needed``: tools the task type may not forbid, because the
    run's own checks need them: a request whose check wants a file written is not read-only
    work, whatever type the analysis guessed. A phase's names that are no tool (small models
    invent them) narrow nothing.
    """
    rule = rules.get(task_type.strip().lower(), {})
    allowed = rule.get("allowed")
    forbidden = set(rule.get("forbidden", ())) - set(needed)
    names = [
        name
        for name in available
        if (allowed is None or name in allowed or name in needed) and name not in forbidden
    ]
    listed = {name for name in phase_tools if name in names}
    if listed:
        names = [name for name in names if name in listed or name in always]
    return names


def refusal_reason(tool: str, available: Iterable[str], task_type: str, phase_id: str) -> str:
    """Why a task's tool is refused, for the judge and `tool_violations`."""
    if tool not in set(available):
        return f"tool {tool!r} does not exist"
    return f"tool {tool!r} is not allowed for {task_type!r} work in phase {phase_id!r}"
