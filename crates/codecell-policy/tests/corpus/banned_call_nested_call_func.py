def execute(args):
    return eval('f')(1)
