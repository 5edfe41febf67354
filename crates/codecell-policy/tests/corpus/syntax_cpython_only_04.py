del *a
def execute(args):
    return 1
