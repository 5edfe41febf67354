if True:
    async def execute(args):
        pass

def execute(args):
    return 1
