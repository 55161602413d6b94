"""The error types of tilewise.

Every bad input raises one of these with a one-line message that names the offending value and
what would be valid. All derive from :class:`TilewiseError`, itself a :class:`ValueError`, so a
caller can catch them together; the CLI turns them into one line on stderr and a non-zero exit.
"""

from __future__ import annotations


class TilewiseError(ValueError):
    """Base class of all tilewise input errors."""


class ParseError(TilewiseError):
    """Malformed text (a layout string, a mapping, a size list), with the offending position.

    ``text`` is the whole input and ``pos`` the 0-based index of the offending character; the
    message shows the text with the offending character marked, on one line.
    """

    def __init__(self, what: str, text: str, pos: int, expected: str):
        self.what, self.text, self.pos, self.expected = what, text, pos, expected
        pos = max(0, min(pos, len(text)))
        got = repr(text[pos]) if pos < len(text) else "end of text"
        marked = text[:pos] + "\u25b6" + text[pos:]
        super().__init__(
            f"malformed {what} {text!r}: at character {pos + 1} ({got}) expected {expected}; "
            f"here: {marked!r}"
        )


class DTypeError(TilewiseError):
    """Unknown or unsupported element type."""


class LayoutError(TilewiseError):
    """An XLA layout that is well formed text but not valid for its shape."""


class PackError(TilewiseError):
    """An illegal ``pack``/``unpack`` (the same rules as MLIR's linalg.pack verifier)."""


class WorkloadError(TilewiseError):
    """A workload with bad sizes, dtypes or inconsistent index expressions."""


class SpecError(TilewiseError):
    """An invalid architecture spec (names the file, the key and what is allowed)."""


class MappingError(TilewiseError):
    """A mapping that is malformed or illegal for its workload and architecture."""


class CapacityError(MappingError):
    """A tile that does not fit a memory level (names the level and the bytes)."""


class ISAError(TilewiseError):
    """A vector instruction with a field out of range or an illegal combination."""


class ModelError(TilewiseError):
    """A network model file that cannot be imported (not ONNX, dynamic shapes without values,
    nothing to tile); names the file and what would be valid."""


class StoreError(TilewiseError):
    """A solution store that cannot be opened or is not a tilewise store."""


class DmaError(TilewiseError):
    """A data-movement program the DMAs cannot run: an access pattern beyond a declared limit,
    out of a buffer's bounds, or writing one element twice; names the descriptor and field."""
