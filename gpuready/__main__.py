"""`python -m gpuready` runs the command-line interface."""

from gpuready.frontends.cli import main

raise SystemExit(main())
