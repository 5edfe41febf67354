

   
# comment
def execute(args):
    return 1
