def execute(args):
    return open(args)
