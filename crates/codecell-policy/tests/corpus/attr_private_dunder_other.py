def execute(args):
    return args.__len__()
