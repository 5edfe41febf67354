import functools

def execute(args):
    return functools.attrgetter
