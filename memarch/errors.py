"""User-facing errors: the CLI prints them as one line and exits with code 2."""


class MemarchError(Exception):
    """An error caused by the user's input (a file, a name, a combination), not by a bug."""


class ArchitectureError(MemarchError):
    """An architecture breaks a validity rule; ``rule`` names which one."""

    def __init__(self, message: str, rule: str = "schema"):
        super().__init__(message)
        self.rule = rule


class LMRequiredError(MemarchError):
    """A module that cannot run without an LM was asked to run without one."""


class DataError(MemarchError):
    """A data file is missing or malformed."""


class NotFoundError(MemarchError):
    """A named thing (a memory item of a user) does not exist; the server answers 404."""
