def g(a=eval('x'), *, b=args._y):
    pass

def execute(args):
    return 1
