# -*- coding: utf-8 -*-
def execute(args):
    café = 'naïve ☃ 日本'
    return {'π': café, 'x': args}
