def execute(args):
    return {k: v for k, v in args.items() if v}, {x for x in args}, list(y for y in args)
