"""Exceptions: what a coroutine suspended in an ``except`` block or a ``finally`` with a
pending exception holds, and what simulations keep as event values.

Record ``autosave.exception``: ``[class name, args tuple, __dict__ or None, __cause__,
__context__, __suppress_context__]``. The traceback is not saved (it loads as None).
Built-in exception classes are named ``builtins.KeyError`` and rebuilt by calling them
with their args (their constructors only store them). Other classes must resolve
through the trust rules like any saved class; they are made with ``cls.__new__(cls,
*args)`` and get their ``__dict__`` back, without calling ``__init__``.
"""

import builtins

from ...errors import FormatError, UntrustedTypeError
from ...checks.loadcheck import str_dict
from ..registry import REGISTRY
from .base import Adapter, register_adapter


def _builtin_exception(name):
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return cls
    return None


class ExceptionAdapter(Adapter):
    name = "autosave.exception"
    types = ()
    has_fill = True
    build_slice = slice(1, 3)

    def parts(self, obj):
        cls = type(obj)
        if cls.__module__ == "builtins" and _builtin_exception(cls.__name__) is cls:
            cls_name = f"builtins.{cls.__name__}"
        else:
            cls_name = REGISTRY.check_savable_name(cls, "exception class")
        return [cls_name, obj.args, dict(obj.__dict__) or None, obj.__cause__,
                obj.__context__, obj.__suppress_context__]

    def build(self, vals):
        cls_name, args = vals[1:3]
        if type(cls_name) is not str or type(args) is not tuple:
            raise ValueError("an exception record holds a class name and an args tuple")
        module, _, attr_ = cls_name.rpartition(".")
        if issubclass(_builtin_exception(attr_) or Exception, BaseExceptionGroup) or (
                module != "builtins" and _is_group_name(cls_name)):
            _check_group_args(args)
        if module == "builtins":
            cls = _builtin_exception(attr_)
            if cls is None:
                raise UntrustedTypeError(f"the save names builtins.{attr_} as an exception "
                                         f"class; it is not one")
            exc = cls(*args)
        else:
            cls = REGISTRY.resolve(cls_name, "exception class")
            if not isinstance(cls, type) or not issubclass(cls, BaseException):
                raise UntrustedTypeError(f"the save names {cls_name} as an exception class; "
                                         f"it is not one")
            exc = cls.__new__(cls, *args)
        exc.args = args
        return exc

    def fill(self, obj, vals):
        state, cause, context, suppress = vals[3:]
        if str_dict(state, "an exception's attributes", allow_none=True):
            obj.__dict__.update(state)
        for value in (cause, context):
            if value is not None and not isinstance(value, BaseException):
                raise ValueError("an exception's cause and context are exceptions")
        obj.__cause__ = cause
        obj.__context__ = context
        obj.__suppress_context__ = bool(suppress)


def _is_group_name(cls_name):
    cls = REGISTRY.resolve(cls_name, "exception class")
    return isinstance(cls, type) and issubclass(cls, BaseExceptionGroup)


def _check_group_args(args):
    """An exception group's constructor copies its second argument as a sequence: it
    must be the plain list or tuple of exceptions autosave built, never a lazy or huge
    sequence a save makes up (range(10**9))."""
    if (len(args) != 2 or type(args[0]) is not str or type(args[1]) not in (list, tuple)
            or not all(isinstance(e, BaseException) for e in args[1])):
        raise FormatError("an exception group record's arguments are a message and a "
                          "list of exceptions")


EXCEPTION = register_adapter(ExceptionAdapter())
