def execute(args):
    return dir(args)
