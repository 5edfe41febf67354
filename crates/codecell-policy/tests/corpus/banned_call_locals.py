def execute(args):
    return locals(args)
