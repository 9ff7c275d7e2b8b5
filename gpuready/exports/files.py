"""Writing export files so a reader never sees half of one, and rewriting them on a timer.

NFD's local source and node_exporter's textfile collector both read a directory while
other programs write into it; both ask for a temporary file in the same directory that
is then renamed over the real one (NFD ignores dot-files: kubernetes-sigs/
node-feature-discovery docs/usage/customization-guide.md, "Local feature source";
node_exporter README, "Textfile Collector": write `*.prom.$$`, then `mv`). ``os.replace``
is that rename, atomic on POSIX and Windows within one filesystem.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


class Stop(Exception):
    """SIGTERM arrived: finish quietly."""


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a hidden temporary file beside `path`, then rename it over `path`."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)  # mkstemp makes it 0600; the reader may run as another user
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def parse_duration(text: str) -> float:
    """Seconds in '90s', '30m', '1h', '2d' or a bare number of seconds; ValueError otherwise."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    text = text.strip().lower()
    number, unit = (text[:-1], units[text[-1]]) if text and text[-1] in units else (text, 1)
    try:
        seconds = float(number) * unit
    except ValueError:
        raise ValueError(f"'{text}' is not a duration (e.g. 90s, 30m, 1h)") from None
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"'{text}' is not a positive duration")
    return seconds


def repeat(step: Callable[[], None], interval_s: float, sleep: Callable[[float], None] = time.sleep) -> None:
    """Run `step` now and then every `interval_s` seconds until SIGTERM or Ctrl-C."""

    def on_term(signum, frame):
        raise Stop

    previous = signal.signal(signal.SIGTERM, on_term) if _main_thread() else None
    try:
        while True:
            step()
            sleep(interval_s)
    except (Stop, KeyboardInterrupt):
        return
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
