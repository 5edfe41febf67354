def execute(args, extra):
    return 1
