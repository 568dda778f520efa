"""How the local model's structured answers are made: tokens forced, copied, chosen (issue 61).

    python -m bench.token_split [--set suite] [--tasks a,b] [--model local:...] [--work DIR]

Runs phasegraph on the local suite's tasks (request alone) with each answer's tokens counted
(`phasegraph.models.grammar_sampler.TokenSplit`): a token the grammar allowed alone is forced
(decoding it decided nothing), one that ends a run of three tokens standing in the prompt is
copied (prompt-lookup decoding would propose it), any other is chosen. It prints the split per
stage, the function each answer calls. Counting asks the grammar about the whole vocabulary at
every token, so the run is slower than an unmeasured one: time it with ``python -m bench``.
"""

from __future__ import annotations

import argparse
import os

from phasegraph.models import grammar_sampler


def split_table(splits: dict[str, grammar_sampler.TokenSplit]) -> str:
    """One line per stage: its answer tokens, and the share forced, copied and chosen."""
    lines = [f"{'stage':<18}{'tokens':>8}{'forced':>9}{'copied':>9}{'chosen':>9}"]
    total = grammar_sampler.TokenSplit()
    for name, split in sorted(splits.items()):
        total.add(split)
        lines.append(_row(name, split))
    lines.append(_row("all", total))
    return "\n".join(lines)


def _row(name: str, split: grammar_sampler.TokenSplit) -> str:
    count = split.forced + split.copied + split.chosen
    shares = [f"{100 * n / count:8.0f}%" if count else f"{'-':>9}"
              for n in (split.forced, split.copied, split.chosen)]  # fmt: skip
    return f"{name:<18}{count:>8}" + "".join(shares)


def main(argv: list[str] | None = None) -> int:
    """Run the tasks with the split counted, and print it per stage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="suite")
    parser.add_argument("--tasks", default="")
    parser.add_argument("--model", default="")
    parser.add_argument("--work", default="")
    args = parser.parse_args(argv)
    os.environ[grammar_sampler.SPLIT_SETTING] = "1"
    from bench import local_suite

    suite_args = ["--set", args.set, "--modes", "alone", "--systems", "phasegraph"]
    for flag, value in (("--tasks", args.tasks), ("--model", args.model), ("--work", args.work)):
        suite_args += [flag, value] if value else []
    code = local_suite.main(suite_args)
    print(split_table(grammar_sampler.SPLITS))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
