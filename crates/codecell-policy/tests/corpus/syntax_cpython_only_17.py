def f[T](x): pass
def execute(args):
    return 1
