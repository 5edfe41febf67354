def execute(args):
    return f'{args:{args._w}}'
