if True:
    def execute(args):
        return args
