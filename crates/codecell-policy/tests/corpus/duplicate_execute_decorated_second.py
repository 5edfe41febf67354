def execute(args):
    return 1

@staticmethod
@staticmethod
def execute(args):
    return 2
