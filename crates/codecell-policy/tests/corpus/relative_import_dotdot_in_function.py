def execute(args):
    from ..pkg import z
    return z
