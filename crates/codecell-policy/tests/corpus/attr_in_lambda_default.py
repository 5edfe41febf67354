def execute(args):
    f = lambda v=args.__dict__: v
    return f()
