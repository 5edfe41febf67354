nonlocal x

def execute(args):
    return 1
