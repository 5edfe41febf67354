def execute(args):
    return args.get_field('x', (), {})
