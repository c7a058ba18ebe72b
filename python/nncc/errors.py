"""nncc.Error: every failure of the compiler or of a compiled library."""
import re

_LOCATION = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$",
                       re.MULTILINE)


class Error(Exception):
    """A failed nncc call.

    status:   the library's status name ("SHAPE_MISMATCH", ...) or "COMPILE"
    message:  the message (the compiler's first error, or the library's)
    location: (file, line, col) of a compile error in a .nn source, else None
    details:  the compiler's whole output, for compile errors
    """

    def __init__(self, status, message, location=None, details=""):
        where = "%s:%d:%d: " % location if location else ""
        super().__init__("%s%s" % (where, message))
        self.status, self.message, self.location, self.details = status, message, location, details

    @classmethod
    def from_compiler(cls, output, what):
        m = _LOCATION.search(output)
        if m:
            return cls("COMPILE", m.group("msg"),
                       (m.group("file"), int(m.group("line")), int(m.group("col"))), output)
        lines = [l for l in output.splitlines() if "error" in l] or output.splitlines() or [what]
        return cls("COMPILE", lines[0].strip(), None, output)
