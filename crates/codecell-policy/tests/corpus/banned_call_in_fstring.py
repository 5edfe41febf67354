def execute(args):
    return f"{eval(args['e'])}"
