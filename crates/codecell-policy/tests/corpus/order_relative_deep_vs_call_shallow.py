eval('1')
def execute(args):
    from . import x
