"""The catalogue layer: data only. ``loader`` reads and validates the model TOML files (each
task registers the parser of its own entries), ``tables`` the GPU, CPU and NPU tables.
No task logic lives here."""
