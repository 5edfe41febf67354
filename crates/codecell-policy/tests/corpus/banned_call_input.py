def execute(args):
    return input(args)
