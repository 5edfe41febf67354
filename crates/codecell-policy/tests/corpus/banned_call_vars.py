def execute(args):
    return vars(args)
