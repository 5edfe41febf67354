@a._d
def f():
    return eval('1')

def execute(args):
    return 1
