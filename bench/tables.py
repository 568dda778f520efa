"""The benchmark's figures as tables: each measure with its target and a verdict."""

from __future__ import annotations

from typing import Any


def _row(rows: list[dict[str, Any]], system: str, actions: int) -> dict[str, Any]:
    return next(r for r in rows if r["system"] == system and r["actions_needed"] == actions)


def systems_table(r: dict[str, Any]) -> str:
    """Per system and task size: calls, prompt tokens, largest prompt, wall time, codes."""
    lines = [
        f"{'system':<22} {'actions':>7} {'calls':>5} {'prompt tok':>10} {'largest':>8} "
        f"{'sim wall s':>10} {'reads':>5} {'codes':>5}"
    ]
    for row in r["architectures"] + r["architectures_1000_token_records"]:
        label = row["system"] + (" (1k rec)" if row["record_tokens"] != 300 else "")
        lines.append(
            f"{label:<22} {row['actions_needed']:>7} {row['llm_calls']:>5} "
            f"{row['prompt_tokens']:>10} {row['largest_prompt']:>8} "
            f"{row['simulated_wall_s']:>10.1f} {row['tool_actions']:>5} {row['codes_reported']:>5}"
        )
    return "\n".join(lines)


#: Overhead per tool action against ReAct's, with each stage its own step: long phases, short.
OVERHEAD_TARGETS = {"phasegraph": 1.1, "short_phases": 1.25}
"""Framework overhead per tool action, at most this many times `create_react_agent`'s."""


def _overhead_rows(over: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """Overhead per action against ReAct's, per shape: the ratio with its target, then the ms."""
    rows: list[tuple[str, str, str, bool | None]] = []
    for prefix, react_key in (("phasegraph", "react"), ("short_phases", "short_phases_react")):
        shape = over[f"{prefix}_shape"]
        ratio = over[f"{prefix}_over_react"]
        target = OVERHEAD_TARGETS[prefix]
        rows += [
            (
                f"overhead per action / react, {shape['width']} reads, "
                f"{shape['rounds_per_phase']}-round phases",
                f"{ratio:.2f}",
                f"<= {target}",
                ratio <= target,
            ),
            (
                f"  ms per action, phasegraph vs react ({shape['width'] * shape['levels']} reads)",
                f"{over[f'{prefix}_ms_per_action']:.2f}",
                f"vs {over[f'{react_key}_ms_per_action']:.2f}",
                None,
            ),
            (
                "  same, both SQLite files synchronous=NORMAL",
                f"{over[f'{prefix}_over_react_sync_normal']:.2f}",
                "(for scale)",
                None,
            ),
            (
                "  same, checkpoints in memory (framework alone)",
                f"{over[f'{prefix}_ms_per_action_in_memory']:.2f}",
                f"vs {over[f'{react_key}_ms_per_action_in_memory']:.2f}",
                None,
            ),
            (
                "  whole run, the simulated model's own work in it",
                f"{over[f'{prefix}_wall_over_react']:.2f}",
                "(for scale)",
                None,
            ),
        ]
    return rows


def table(r: dict[str, Any]) -> str:
    """The figures as one table: measure, value, target, verdict."""
    growth = r["checkpoint_growth"]
    par = r["parallel_round"]
    many = r["many_threads"]
    worst = max(growth["bytes_ratio_per_doubling"])
    arch = r["architectures"]
    big = max(row["actions_needed"] for row in arch)
    pg, react = _row(arch, "phasegraph", big), _row(arch, "react", big)
    pe = _row(arch, "plan_execute", big)
    pg_small = _row(arch, "phasegraph", 8)
    long_pg = _row(r["architectures_1000_token_records"], "phasegraph", big)
    long_react = _row(r["architectures_1000_token_records"], "react", big)
    over = r["overhead"]
    large_budget = r["phasegraph_prompt_budget_3000"]
    rows = [
        (
            f"prompt tokens, phasegraph / react, {big} actions",
            f"{pg['prompt_tokens'] / react['prompt_tokens']:.2f}",
            "<= 0.3",
            pg["prompt_tokens"] / react["prompt_tokens"] <= 0.3,
        ),
        (
            "  same, records of 1,000 tokens",
            f"{long_pg['prompt_tokens'] / long_react['prompt_tokens']:.2f}",
            "<= 0.3",
            long_pg["prompt_tokens"] / long_react["prompt_tokens"] <= 0.3,
        ),
        (
            f"  same, prompt_token_budget 3,000 ({large_budget['codes_reported']}/{big} codes)",
            f"{large_budget['prompt_tokens'] / react['prompt_tokens']:.2f}",
            "(for scale)",
            None,
        ),
        (
            f"  plan_execute / react, {big} actions",
            f"{pe['prompt_tokens'] / react['prompt_tokens']:.2f}",
            "(for scale)",
            None,
        ),
        (
            f"largest prompt, phasegraph {big} / 8 actions",
            f"{pg['largest_prompt'] / pg_small['largest_prompt']:.2f}",
            "<= 1.5",
            pg["largest_prompt"] / pg_small["largest_prompt"] <= 1.5,
        ),
        (
            f"  react {big} / 8 actions",
            f"{react['largest_prompt'] / _row(arch, 'react', 8)['largest_prompt']:.2f}",
            "(for scale)",
            None,
        ),
        (
            f"simulated wall, phasegraph / react, {big} actions",
            f"{pg['simulated_wall_s'] / react['simulated_wall_s']:.2f}",
            "(no target)",
            None,
        ),
        (
            f"codes in the final answer, phasegraph, of {big}",
            f"{pg['codes_reported']}",
            f"{big}",
            pg["codes_reported"] == big,
        ),
        *_overhead_rows(over),
        (
            "checkpoint bytes, x per doubling of steps",
            f"{worst:.2f}",
            "~2.0 (linear)",
            worst <= 2.3,
        ),
        (
            f"parallel round / one task ({par['tasks']} x {par['task_seconds']} s)",
            f"{par['parallel_over_one_task']:.2f}",
            "<= 1.5",
            par["parallel_over_one_task"] <= 1.5,
        ),
        (
            "one at a time / parallel",
            f"{par['one_at_a_time_over_parallel']:.2f}",
            "(for scale)",
            None,
        ),
        (
            f"list {many['threads']} threads (s)",
            f"{many['list_all_s']:.3f}",
            "< 1",
            many["list_all_s"] < 1,
        ),
        (
            f"resume to first node, {many['threads']} threads (ms)",
            f"{many['resume_to_first_event_ms']:.1f}",
            "< 50",
            many["resume_to_first_event_ms"] < 50,
        ),
    ]
    lines = [f"{'measure':<52} {'value':>9}  {'target':<14} verdict"]
    for name, value, target, ok in rows:
        verdict = "" if ok is None else ("ahead" if ok else "NOT MET")
        lines.append(f"{name:<52} {value:>9}  {target:<14} {verdict}")
    return "\n".join(lines)
