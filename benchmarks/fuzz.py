"""Fuzz every parser of user input with 10,000 generated inputs each (issue 11), and print the figures.

    .venv/bin/python benchmarks/fuzz.py [EXAMPLES [PARSER ...]]

Uses the "benchmark" profile of tests/fuzzing.py (derandomized: the same inputs every run).
Each input must end in a result or in the parser's own one-line error (exit code 2); the
script counts both and stops at the first input that does neither.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from hypothesis import given, settings  # noqa: E402

import fuzzing  # noqa: E402


def _counting(target, seen: Counter):
    def counted(value):
        seen["inputs"] += 1
        seen[target(value)] += 1

    return counted


def main() -> int:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    profile = settings(settings.get_profile("benchmark"), max_examples=examples)
    total = 0
    chosen = sys.argv[2:] or sorted(fuzzing.TARGETS)
    for name in chosen:
        strategy, target = fuzzing.TARGETS[name]
        seen: Counter[str] = Counter()
        counted = _counting(target, seen)

        start = time.perf_counter()
        given(strategy)(profile(counted))()
        total += seen["inputs"]
        print(f"{name:13s} {seen['inputs']:7,} inputs: {seen['result']:6,} results, {seen['error']:6,} one-line errors, "
              f"no traceback ({time.perf_counter() - start:.1f} s)", flush=True)
    print(f"{total:,} generated inputs over {len(chosen)} parsers: each ended in a result or a one-line error")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
