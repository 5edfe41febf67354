import collections, csv, datetime, decimal, fractions, functools
import hashlib, heapq, itertools, json, math, random, re, statistics

def execute(args):
    return 0
