def execute(args):
    return args.methodcaller('x')
