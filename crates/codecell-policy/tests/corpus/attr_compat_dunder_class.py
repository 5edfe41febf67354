def execute(args):
    return args.__ｃｌａｓｓ__
