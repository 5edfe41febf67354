def execute(args):
    return 'abc
