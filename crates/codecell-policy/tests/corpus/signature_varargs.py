def execute(args, *rest):
    return 1
