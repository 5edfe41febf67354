from .helpers import y

def execute(args):
    return y
