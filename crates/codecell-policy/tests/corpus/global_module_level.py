global x

def execute(args):
    return 1
