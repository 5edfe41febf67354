x: int.__class__ = 1

def execute(args):
    return x
