def execute(args):
    ｖａｌｕｅ = 3
    return value
