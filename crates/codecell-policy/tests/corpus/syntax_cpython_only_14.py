f(x for x in y, 1)
def execute(args):
    return 1
