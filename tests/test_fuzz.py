"""Every parser of user input, fuzzed (issue 11): a result, or its own error with a one-line message (exit 2).

A few hundred generated inputs per parser here, deterministically (the "ci" profile in
tests/fuzzing.py: derandomized, no example database); benchmarks/fuzz.py runs 10,000 each.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

import fuzzing


@pytest.mark.parametrize("parser", sorted(fuzzing.TARGETS))
def test_every_generated_input_ends_in_a_result_or_a_one_line_error(parser):
    strategy, target = fuzzing.TARGETS[parser]

    def ends_well(value) -> None:
        assert target(value) in ("result", "error")

    given(strategy)(settings(settings.get_profile("ci"))(ends_well))()
