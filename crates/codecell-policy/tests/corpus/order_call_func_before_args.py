def execute(args):
    return f(args._a)(eval('x'))
