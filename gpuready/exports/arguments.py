"""The flags of `gpuready export` and `gpuready fleet`; imports nothing else, so every run stays quick."""

from __future__ import annotations

import argparse
from collections.abc import Callable

FORMATS = ("nfd", "prometheus", "ray", "slurm")
# Where each reader looks by default: NFD's local source (nfd-worker's features.d) and
# Debian's prometheus-node-exporter (--collector.textfile.directory, README.textfile).
NFD_DIR = "/etc/kubernetes/node-feature-discovery/features.d"
PROMETHEUS_DIR = "/var/lib/prometheus/node-exporter"


def add_commands(commands, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add `export` and `fleet` to the top-level subparsers."""
    export = commands.add_parser("export", help="node labels, metrics or scheduler options for Kubernetes NFD, Prometheus, Ray or Slurm")
    export.add_argument("format", choices=FORMATS, help="nfd: features.d file; prometheus: textfile-collector .prom; ray: `ray start` options; slurm: Features=/gres.conf lines")
    export.add_argument("--dir", metavar="DIR", help=f"nfd/prometheus: directory to write into (nfd: {NFD_DIR}; prometheus: {PROMETHEUS_DIR})")
    mode = export.add_mutually_exclusive_group()
    mode.add_argument("--oneshot", action="store_true", help="write once and exit (the default)")
    mode.add_argument("--interval", metavar="DURATION", help="nfd/prometheus: re-probe and rewrite every DURATION (e.g. 1h) until SIGTERM or Ctrl-C")
    export.add_argument("--expiry", metavar="DURATION", help="nfd: labels expire this long after each write (default: twice the interval, 2h when --oneshot)")
    export.add_argument("--json", action="store_true", help="ray: print {resources, labels} as JSON")
    common(export)

    merge = commands.add_parser("fleet", help="merge reports from many machines: which node runs which task and model")
    merge.add_argument("reports", nargs="+", metavar="REPORT", help="`gpuready report --json` files, or directories of *.json")
    merge.add_argument("--model", help="only nodes that run this model id")
    merge.add_argument("--json", action="store_true", help="print the merged fleet as JSON")
