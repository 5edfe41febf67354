def execute(args):
    global g
    return args._x
