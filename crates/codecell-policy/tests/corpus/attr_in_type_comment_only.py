def execute(args):
    x = 1  # type: args.__class__
    return x
