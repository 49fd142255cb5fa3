"""The one error the build tool reports: what it could not do, and where."""


class CodegenError(Exception):
    """A package cannot be generated for; the message names the file:line and why."""
