def execute(args):
    return 1

async def execute(args):
    return 2
