"""The one exception a probe raises when it cannot produce its value at all."""


class ProbeFailure(Exception):
    """A probe could not produce its value; the registry turns it into an error Problem with this hint."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint
