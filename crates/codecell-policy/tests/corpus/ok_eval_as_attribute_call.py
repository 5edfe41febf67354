def execute(args):
    return args.eval(1) + args.open + args.exec()
