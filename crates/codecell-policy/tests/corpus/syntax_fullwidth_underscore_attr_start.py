def execute(args):
    return args.＿x
