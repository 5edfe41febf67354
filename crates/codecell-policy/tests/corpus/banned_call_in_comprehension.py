def execute(args):
    return [vars(x) for x in args]
