def execute(args):
    return args.__class__
