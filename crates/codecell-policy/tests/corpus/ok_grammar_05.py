for (a, *b) in x: pass
def execute(args):
    return 1
