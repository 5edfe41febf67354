def execute(args):
    return f'{args.__class__}'
