def execute(args):
    return compile(args)
