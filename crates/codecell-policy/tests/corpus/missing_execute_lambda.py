execute = lambda args: args
