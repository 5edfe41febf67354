def execute(args):
    return exec(args)
