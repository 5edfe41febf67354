"""Turns any exception into the `failure` the host expects: a (kind, message, traceback, line) tuple.

Shared by both guests; each guest's `_codecell_binding` makes the export's result of the tuple.
Only frames of the user's code are kept in the traceback: the guest's own frames tell a model
nothing and would leak the guest's layout. How much of the message and traceback is kept comes
from the run's options (`Clip`), held by the export's own frame rather than in module globals a
snippet could rewrite; the host clips again whatever comes back.
"""

import traceback

USER_FILENAMES = ("<snippet>", "<cell>", "<tool>")

# What a failure that cannot even be described becomes, e.g. on a MemoryError while formatting.
LAST_RESORT = ("MemoryError", "", "", None)


class Clip:
    """The character limits of one run's failure record (WIT `run-options`)."""

    __slots__ = ("message", "traceback")

    def __init__(self, message: int, traceback: int):
        self.message = max(64, int(message))
        self.traceback = max(64, int(traceback))


def _is_user_file(name: str) -> bool:
    return name in USER_FILENAMES or name.startswith("tools/")


def _user_frames(exc: BaseException) -> list:
    return [f for f in traceback.extract_tb(exc.__traceback__) if _is_user_file(f.filename)]


def _format(exc: BaseException, frames: list) -> str:
    head = ""
    if frames:
        head = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    return head + "".join(traceback.format_exception_only(type(exc), exc))


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 15] + "... (truncated)"


def to_failure(exc: BaseException, clip: Clip) -> tuple:
    """Describes `exc` as (kind, message, traceback, line); never raises."""
    try:
        kind = type(exc).__name__
        try:
            message = str(exc)
        except BaseException:  # a hostile __str__
            message = "<unprintable exception>"
        line = None
        try:
            frames = _user_frames(exc)
            if frames and frames[-1].lineno is not None:
                line = int(frames[-1].lineno)
            text = _format(exc, frames)
        except BaseException:
            text = kind + ": " + message
        return (_clip(kind, 256), _clip(message, clip.message), _clip(text, clip.traceback), line)
    except BaseException:
        return LAST_RESORT
