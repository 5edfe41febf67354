class Box:
    def getattr(self, k):
        return k

def execute(args):
    return Box().getattr('x')
