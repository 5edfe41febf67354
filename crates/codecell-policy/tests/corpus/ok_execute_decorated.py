import functools

@functools.wraps(len)
def execute(args):
    return 1
