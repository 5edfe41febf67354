def execute(args):
    # eval(args) would be bad; so would obj.__class__
    return args
