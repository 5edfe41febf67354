f(a, b=(x for x in y))
def execute(args):
    return 1
