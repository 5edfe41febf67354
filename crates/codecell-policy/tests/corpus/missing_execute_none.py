def run(args):
    return args
