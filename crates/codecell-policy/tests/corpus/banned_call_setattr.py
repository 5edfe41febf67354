def execute(args):
    return setattr(args)
