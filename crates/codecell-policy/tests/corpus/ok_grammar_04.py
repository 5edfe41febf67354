del a, (b, c), [d]
def execute(args):
    return 1
