"""Running the `export` and `fleet` subcommands over report dicts (their flags: :mod:`.arguments`).

The CLI hands `run_export` a function that builds a fresh report dict (probing the
machine, or replaying --machine/--hardware/--gpu), so `--interval` re-probes each time.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from gpuready.exports import files, fleet, nfd, prometheus, ray, slurm
from gpuready.exports.arguments import NFD_DIR, PROMETHEUS_DIR
from gpuready.exports.capacity import capacity, check_report


class ExportUsageError(ValueError):
    """Bad flags for `export` or `fleet` (exit code 2)."""


def run_export(args, build: Callable[[], dict], now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
               sleep: Callable[[float], None] | None = None) -> int:
    """Write or print one export format; loop when --interval is given."""
    if args.json and args.format != "ray":
        raise ExportUsageError(f"--json is for export ray; export {args.format} writes its own format")
    if args.expiry and args.format != "nfd":
        raise ExportUsageError("--expiry is for export nfd (NFD's expiry-time directive)")
    interval = _duration(args.interval, "--interval") if args.interval else None
    expiry = _duration(args.expiry, "--expiry") if args.expiry else 2 * (interval or 3600)
    if interval and args.expiry and expiry <= interval:
        raise ExportUsageError(f"--expiry {args.expiry} is not longer than --interval {args.interval}: the labels would "
                               "expire before each rewrite")
    if args.format in ("ray", "slurm"):
        if interval or args.dir:
            raise ExportUsageError(f"export {args.format} prints to stdout; --dir and --interval are for nfd and prometheus")
        cap = capacity(check_report(build(), "report"))
        if args.format == "ray":
            sys.stdout.write((json.dumps(ray.as_json(cap), indent=2) if args.json else ray.command_line(cap)) + "\n")
        else:
            sys.stdout.write(slurm.text(cap))
        return 0
    directory = Path(args.dir or (NFD_DIR if args.format == "nfd" else PROMETHEUS_DIR))
    if not directory.is_dir():
        where = f"--dir {directory}" if args.dir else f"{directory} (the default; give --dir DIR)"
        raise ExportUsageError(f"{where}: not a directory")
    target = directory / (nfd.FILE_NAME if args.format == "nfd" else prometheus.FILE_NAME)

    def step() -> None:
        cap = capacity(check_report(build(), "report"))
        if args.format == "nfd":
            content = nfd.feature_file(cap, now(), timedelta(seconds=expiry))
        else:
            content = prometheus.text(cap)
        try:
            files.write_atomic(target, content)
        except OSError as error:
            raise ExportUsageError(f"{target}: cannot write: {error.strerror or error}") from None
        if sys.stderr.isatty():
            sys.stderr.write(f"wrote {target}\n")

    if interval is None:
        step()
    else:
        files.repeat(step, interval, **({"sleep": sleep} if sleep else {}))
    return 0


def run_fleet(args) -> int:
    nodes = fleet.load_fleet(args.reports)
    if args.model:
        judged = sorted(set().union(*(node.capacity.judged_models for node in nodes)))
        if args.model not in judged:
            # A typo is bad input (exit 2), not a model that no node runs (exit 1).
            close = difflib.get_close_matches(args.model.lower(), judged, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else "; see `gpuready models`"
            raise ExportUsageError(f"--model: unknown model '{args.model}': no report judged it{hint}")
        nodes = fleet.running(nodes, args.model)
        if not nodes:
            sys.stderr.write(f"no node runs {args.model}\n")
            if args.json:  # a program reading --json gets JSON whatever the answer
                data = fleet.fleet_json([])
                data["models"] = {args.model: {"task": None, "nodes": []}}
                sys.stdout.write(json.dumps(data, indent=2) + "\n")
            return 1
    if args.json:
        data = fleet.fleet_json(nodes)
        if args.model:
            data["models"] = {args.model: data["models"][args.model]}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(fleet.text(nodes))
    return 0


# The longest --interval or --expiry taken: a year. Longer ones overflowed the clock arithmetic (an internal error).
LONGEST_DURATION_S = 365 * 24 * 3600


def _duration(text: str, flag: str) -> float:
    try:
        seconds = files.parse_duration(text)
    except ValueError as error:
        raise ExportUsageError(f"{flag}: {error}") from None
    if seconds > LONGEST_DURATION_S:
        raise ExportUsageError(f"{flag}: {text} is longer than a year (365d), the longest taken")
    return seconds
