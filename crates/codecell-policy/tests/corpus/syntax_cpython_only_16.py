type X = int
def execute(args):
    return 1
