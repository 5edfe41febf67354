def execute(args):
    return execute.__globals__
