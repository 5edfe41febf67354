def execute(args=open('f')):
    return args
