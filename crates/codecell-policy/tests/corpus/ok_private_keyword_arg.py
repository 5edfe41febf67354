def f(**kw):
    return kw

def execute(args):
    return f(_x=1, __y=2)
