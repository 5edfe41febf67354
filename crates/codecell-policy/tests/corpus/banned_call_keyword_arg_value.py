def execute(args):
    return sorted(args, key=getattr(args, 'k'))
