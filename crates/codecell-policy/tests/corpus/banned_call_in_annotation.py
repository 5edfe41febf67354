def execute(args: eval('dict')):
    return args
