def execute(args):
    if (x := input()):
        return x
