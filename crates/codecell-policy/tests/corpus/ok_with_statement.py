def execute(args):
    with args as a, args as b:
        return a
