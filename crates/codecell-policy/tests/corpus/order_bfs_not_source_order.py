def execute(args):
    if args:
        if args:
            return eval('1')
    return args._x
