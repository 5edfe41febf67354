def execute(args, *, scale):
    return scale
