def execute(args):
    return f"{args:{dir(args)}}"
