for f() in x: pass
def execute(args):
    return 1
