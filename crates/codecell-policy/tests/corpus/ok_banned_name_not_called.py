def execute(args):
    f = eval
    g = [getattr, open]
    return len(g)
