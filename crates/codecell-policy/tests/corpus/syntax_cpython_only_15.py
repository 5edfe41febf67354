class C(x for x in y): pass
def execute(args):
    return 1
