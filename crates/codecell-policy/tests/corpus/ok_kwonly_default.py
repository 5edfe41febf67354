def execute(args, *, scale=2):
    return args['x'] * scale
