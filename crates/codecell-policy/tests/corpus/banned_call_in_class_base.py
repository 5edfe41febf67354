class C(vars()):
    pass

def execute(args):
    return 1
