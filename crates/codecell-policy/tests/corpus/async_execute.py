async def execute(args):
    return args
