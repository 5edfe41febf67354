import string

def execute(args):
    return 1
