def f(*, **k): pass
def execute(args):
    return 1
