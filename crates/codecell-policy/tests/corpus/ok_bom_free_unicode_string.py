def execute(args):
    return '\ufeff\u200b' + "😀"
