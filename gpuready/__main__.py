"""`python -m gpuready` runs the command-line interface."""

from gpuready.cli import main

raise SystemExit(main())
