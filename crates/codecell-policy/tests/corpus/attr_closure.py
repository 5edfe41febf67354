def execute(args):
    return execute.__closure__
