def execute(args, **kw):
    return 1
