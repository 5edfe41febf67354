def execute(args):
    return {1: args._v, args.__class__: 2}
