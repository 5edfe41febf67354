def execute(args):
    return execute.__code__
