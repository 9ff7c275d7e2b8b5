#!/usr/bin/env python3
"""Write the fitted speed constants into gpuready/tasks/text_estimate.py (run after changing validation rows).

Usage: python benchmarks/write_constants.py   (from the repository root)
Each dict named below is rewritten with the fit of benchmarks/score_estimator.py; keys the fit
has no rows for (sycl) keep their value in text_estimate.py, marked there as unfitted guesses.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ESTIMATE = ROOT / "gpuready" / "tasks" / "text_estimate.py"


def main() -> int:
    spec = importlib.util.spec_from_file_location("score_estimator", ROOT / "benchmarks" / "score_estimator.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = ESTIMATE.read_text(encoding="utf-8")
    for line in module.constants_text().splitlines():
        name, literal = line.split(" = ", 1)
        if not literal.startswith("{"):
            text = re.sub(rf"^{name} = [0-9.e-]+$", f"{name} = {literal}", text, flags=re.M)
            continue
        fitted = dict(re.findall(r'"([^"]+)": ([0-9.e-]+)', literal))
        block = re.search(rf"^{name} = \{{\n(.*?)^\}}\n", text, re.S | re.M)
        old = dict(re.findall(r'^    "([^"]+)": ([0-9.e-]+),', block.group(1), re.M))
        merged = {**{k: v for k, v in old.items() if k not in fitted and k == "sycl"}, **fitted}
        if name in ("PROMPT_EFFICIENCY", "PROMPT_SECONDS_PER_TFLOP", "PROMPT_JOULES_PER_FLOP") and "sycl" not in merged:
            merged["sycl"] = {"PROMPT_EFFICIENCY": "0.30", "PROMPT_SECONDS_PER_TFLOP": "0.0", "PROMPT_JOULES_PER_FLOP": "0.0"}[name]
        body = "".join(f'    "{key}": {merged[key]},\n' for key in sorted(merged))
        text = text[:block.start(1)] + body + text[block.end(1):]
    ESTIMATE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
