def execute(args):
    del args._x
    return args
