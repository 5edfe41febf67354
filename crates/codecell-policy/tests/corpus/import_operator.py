from operator import itemgetter

def execute(args):
    return 1
