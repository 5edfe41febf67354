def execute(args):
    yield 1
