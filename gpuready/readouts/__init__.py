"""Native-library readouts: each module's ``read() -> dict`` turns one library into plain data.

They are the only places that import native bindings (pynvml, amdsmi, winreg/ctypes);
every error becomes data in the dict, never an exception. ``Host.library(name)`` calls
them on the live machine; recorded machines store their output as ``libraries/<name>.json``.
"""
