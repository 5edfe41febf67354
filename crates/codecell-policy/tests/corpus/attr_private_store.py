def execute(args):
    args._cache = 1
    return args
