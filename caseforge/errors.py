"""Errors the CLI turns into exit codes."""


class CommandFailed(Exception):
    """A command ran but something failed or was quarantined; carries one-line reasons."""

    def __init__(self, reasons: list[str]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons
