"""Guest-side stdout/stderr: line-buffered and encoded in chunks.

The host caps what it captures; this module only makes sure output reaches the host promptly
(each line, so nothing is lost when a run is stopped) and that printing a huge string never
needs a second, encoded copy of it: in the CPython guest a 100 MB print under a 128 MiB memory
cap reaches the output cap instead of the memory cap. The bytes go out through
`_codecell_binding.write`.
"""

import io
import sys

import _codecell_binding as _binding

CHUNK = 64 * 1024


class ChunkedWriter(io.TextIOBase):
    """A text stream over a file descriptor that flushes on newline and encodes in 64 KiB chunks."""

    def __init__(self, fd: int):
        self._fd = fd
        self._pending = []
        self._size = 0
        # Code that writes bytes (`sys.stdout.buffer.write`) still reaches the same descriptor,
        # after the text written before it, as on native Python.
        self.buffer = RawBuffer(fd, self.flush)

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
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._size = 0
            self._emit(text)

    def _emit(self, text):
        _write(self._fd, text.encode("utf-8", "backslashreplace"))


class RawBuffer:
    """A text stream's `.buffer`: bytes written go to the descriptor at once, unbuffered, once
    the text stream's pending text (`before_write`) has gone out."""

    def __init__(self, fd, before_write):
        self._fd = fd
        self._before_write = before_write

    def write(self, data):
        data = bytes(data)
        self._before_write()
        _write(self._fd, data)
        return len(data)

    def flush(self):
        pass

    def writable(self):
        return True

    def fileno(self):
        return self._fd


def _write(fd, data):
    if not _binding.write(fd, data):
        raise OSError("the output stream is closed")


def install() -> None:
    """Replaces sys.stdout and sys.stderr (done once, before any snapshot is taken)."""
    sys.stdout = sys.__stdout__ = ChunkedWriter(1)
    sys.stderr = sys.__stderr__ = ChunkedWriter(2)
