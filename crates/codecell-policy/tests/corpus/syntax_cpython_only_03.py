(a, b): int
def execute(args):
    return 1
