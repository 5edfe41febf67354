with (a as b, c as d): pass
def execute(args):
    return 1
