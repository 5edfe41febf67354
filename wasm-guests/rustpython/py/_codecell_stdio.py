"""Guest-side stdout/stderr: line-buffered and encoded in chunks.

The RustPython twin of ../../cpython/stdio.py. Output reaches the host promptly (each line, so
nothing is lost when a run is stopped), and printing a huge string never needs a second, encoded
copy of all of it. The bytes go out through `_codecell_host.write`, straight to the WASI stream.
"""

import io
import sys

import _codecell_host as _host

CHUNK = 64 * 1024


class _RawBuffer:
    """`sys.stdout.buffer`: code that writes bytes still reaches the same descriptor."""

    def __init__(self, fd):
        self._fd = fd

    def write(self, data):
        data = bytes(data)
        if not _host.write(self._fd, data):
            raise OSError("the output stream is closed")
        return len(data)

    def flush(self):
        pass

    def writable(self):
        return True

    def fileno(self):
        return self._fd


class ChunkedWriter(io.TextIOBase):
    """A text stream over a file descriptor that flushes on newline and encodes in 64 KiB chunks."""

    def __init__(self, fd: int):
        self._fd = fd
        self._pending = []
        self._size = 0
        self.buffer = _RawBuffer(fd)

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
        if not _host.write(self._fd, text.encode("utf-8", "backslashreplace")):
            raise OSError("the output stream is closed")


def install() -> None:
    """Replaces sys.stdout and sys.stderr (done once, at start-up)."""
    sys.stdout = sys.__stdout__ = ChunkedWriter(1)
    sys.stderr = sys.__stderr__ = ChunkedWriter(2)
