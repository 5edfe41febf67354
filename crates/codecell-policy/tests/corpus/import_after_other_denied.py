import json

def execute(args):
    import socket
    return 1

import ctypes
