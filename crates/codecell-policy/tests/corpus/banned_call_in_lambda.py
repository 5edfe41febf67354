def execute(args):
    f = lambda: exec('x')
    return f
