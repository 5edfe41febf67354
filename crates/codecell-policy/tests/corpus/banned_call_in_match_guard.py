def execute(args):
    match args:
        case x if locals():
            return x
