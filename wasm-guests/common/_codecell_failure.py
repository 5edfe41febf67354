"""Turns any exception into the `failure` the host expects, as a (kind, message, traceback) tuple.

Shared by both guests; each guest's `_codecell_binding` makes the export's result of the tuple.
Only frames of the user's code are kept in the traceback: the guest's own frames tell a model
nothing and would leak the guest's layout.
"""

import traceback

USER_FILENAMES = ("<snippet>", "<tool>")
MAX_MESSAGE = 4096
MAX_TRACEBACK = 8192

# What a failure that cannot even be described becomes, e.g. on a MemoryError while formatting.
LAST_RESORT = ("MemoryError", "", "")


def _is_user_file(name: str) -> bool:
    return name in USER_FILENAMES or name.startswith("tools/")


def _format(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_user_file(f.filename)]
    head = ""
    if frames:
        head = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
    return head + "".join(traceback.format_exception_only(type(exc), exc))


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 15] + "... (truncated)"


def to_failure(exc: BaseException) -> tuple:
    """Describes `exc` as (kind, message, traceback); never raises."""
    try:
        kind = type(exc).__name__
        try:
            message = str(exc)
        except BaseException:  # a hostile __str__
            message = "<unprintable exception>"
        try:
            text = _format(exc)
        except BaseException:
            text = kind + ": " + message
        return (kind, _clip(message, MAX_MESSAGE), _clip(text, MAX_TRACEBACK))
    except BaseException:
        return LAST_RESORT
