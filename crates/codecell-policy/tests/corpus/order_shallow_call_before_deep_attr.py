def execute(args):
    return args.__class__

y = eval('1')
