def execute(args):
    match args:
        case args.__class__():
            return 1
