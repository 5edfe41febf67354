def execute(args):
    return breakpoint(args)
