def execute(args):
    return 1
