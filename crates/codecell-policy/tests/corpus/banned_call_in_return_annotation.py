def execute(args) -> compile('x', 'y', 'eval'):
    return args
