def execute(args):
    return ｅｖａｌ('1')
