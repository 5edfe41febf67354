def execute(args):
    return getattr(args)
