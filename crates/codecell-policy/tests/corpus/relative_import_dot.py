from . import x

def execute(args):
    return x
