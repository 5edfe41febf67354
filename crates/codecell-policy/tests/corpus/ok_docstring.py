"""Doc."""

def execute(args):
    """Return args."""
    return args
