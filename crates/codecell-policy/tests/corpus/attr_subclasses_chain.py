def execute(args):
    return ().__class__.__mro__[1].__subclasses__()
