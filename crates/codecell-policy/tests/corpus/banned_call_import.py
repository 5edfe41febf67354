def execute(args):
    return __import__(args)
