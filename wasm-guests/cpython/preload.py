"""Stdlib modules imported while the snapshot is taken.

componentize-py snapshots the interpreter after `app` is imported; only modules imported by then
exist at run time (there is no filesystem to load others from). So everything tool code commonly
uses is imported here, once, at build time. Modules that reach the OS (socket, subprocess, ctypes)
are deliberately absent.
"""

# ruff: noqa: F401
import abc
import array
import base64
import binascii
import bisect
import calendar
import cmath
import collections
import collections.abc
import contextlib
import copy
import csv
import dataclasses
import datetime
import decimal
import difflib
import enum
import fnmatch
import fractions
import functools
import graphlib
import hashlib
import heapq
import hmac
import html
import io
import itertools
import json
import keyword
import math
import numbers
import operator
import pprint
import random
import re
import secrets
import shlex
import statistics
import string
import struct
import textwrap
import time
import types
import typing
import unicodedata
import urllib.parse
import uuid
import weakref
import zlib
