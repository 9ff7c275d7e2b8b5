"""The terminal UI (Textual). ``run_tui`` builds the Report's inputs off the UI thread and runs the app.

Importing this package imports Textual, so a missing Textual raises ImportError here and
the CLI falls back to the plain-text summary. `gpuready report` and `check` never import it.
"""

from __future__ import annotations

import sys

import textual  # noqa: F401  (ImportError here lets the CLI fall back to text)


def inputs_from_args(args):
    """Probe (or replay, or read --hardware) and load the catalogue, as the CLI does: slow, so run off the UI thread."""
    from gpuready import app
    from gpuready.frontends.arguments import request
    from gpuready.frontends.tui.app import Inputs

    catalog = app.load_catalog(args.catalog_dir)
    hardware, problems = app.load_hardware(request(args))
    return Inputs(hardware=hardware, problems=tuple(problems), catalog=catalog)


def not_this_computer(args, environ=None) -> str | None:
    """What the machine these arguments name is when it is not this computer ('a recording', 'a what-if'), else None.

    `b` measures this computer; on anything else it must refuse rather than keep this
    computer's measurements while another machine is on screen.
    """
    import os

    from gpuready.host import other_machine, replayed_machine

    environ = os.environ if environ is None else environ
    if replayed_machine(getattr(args, "machine", None), environ):
        return "a recording"
    return "a what-if" if other_machine(args, environ) else None


def run_tui(args) -> int:
    """Run the UI for the machine the CLI arguments name (live, --machine, --hardware, --memory)."""
    from gpuready.frontends.tui.app import GpureadyApp

    app = GpureadyApp(lambda: inputs_from_args(args), elsewhere=not_this_computer(args))
    app.run()
    if app.fatal:
        sys.stderr.write(f"gpuready: error: {app.fatal}\n")
    return app.return_code or 0
