class Tool:
    def execute(self, args):
        return args
