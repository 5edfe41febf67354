def f(a, **): pass
def execute(args):
    return 1
