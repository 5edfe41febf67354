def execute(args):
    return args._private
