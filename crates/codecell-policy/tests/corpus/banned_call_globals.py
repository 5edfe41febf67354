def execute(args):
    return globals(args)
