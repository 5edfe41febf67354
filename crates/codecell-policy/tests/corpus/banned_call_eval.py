def execute(args):
    return eval(args)
