def f(*, a, **k): pass
def execute(args):
    return 1
