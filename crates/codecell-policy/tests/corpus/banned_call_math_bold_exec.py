def execute(args):
    return 𝐞𝐱𝐞𝐜('1')
