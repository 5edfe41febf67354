class C:
    x = globals()

def execute(args):
    return 1
