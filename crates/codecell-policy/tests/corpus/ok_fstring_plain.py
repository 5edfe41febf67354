def execute(args):
    return f"{args['a']!r:>10} {args.get('b', 0):.2f}"
