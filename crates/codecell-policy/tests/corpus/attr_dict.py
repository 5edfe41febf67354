def execute(args):
    return args.__dict__
