def execute(args):
    return args.__getattribute__('x')
