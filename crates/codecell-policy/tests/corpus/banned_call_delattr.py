def execute(args):
    return delattr(args)
