[a, *b] = c
def execute(args):
    return 1
