def execute(args):
    return __name__
