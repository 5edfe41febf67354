"""Guest-side stdout/stderr: line-buffered and encoded in chunks.

The host caps what it captures; this module only makes sure output reaches the host promptly
(each line, so nothing is lost when a run is stopped) and that printing a huge string never
needs a second, encoded copy of it: a 100 MB print under a 128 MiB memory cap reaches the output
cap instead of the memory cap.
"""

import io
import os
import sys

CHUNK = 64 * 1024


class ChunkedWriter(io.TextIOBase):
    """A text stream over a file descriptor that flushes on newline and encodes in 64 KiB chunks."""

    def __init__(self, fd: int, original):
        self._fd = fd
        self._pending = []
        self._size = 0
        # Code that writes bytes (`sys.stdout.buffer.write`) still reaches the same descriptor.
        self.buffer = original.buffer

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "backslashreplace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self._fd

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        if len(s) >= CHUNK:
            self.flush()
            for start in range(0, len(s), CHUNK):
                self._emit(s[start:start + CHUNK])
            return len(s)
        self._pending.append(s)
        self._size += len(s)
        if "\n" in s or self._size >= CHUNK:
            self.flush()
        return len(s)

    def flush(self):
        self.buffer.flush()
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._size = 0
            self._emit(text)

    def _emit(self, text):
        view = memoryview(text.encode("utf-8", "backslashreplace"))
        while view:
            written = os.write(self._fd, view)
            view = view[written:]


def install() -> None:
    """Replaces sys.stdout and sys.stderr (done once, before the snapshot)."""
    sys.stdout = ChunkedWriter(1, sys.stdout)
    sys.stderr = ChunkedWriter(2, sys.stderr)
