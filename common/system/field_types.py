"""Type checks of config dataclass fields against their annotations, before any range check.

gin hands over whatever a binding says (`learning_rate = 'fast'`, `gamma = '0.99'`); checked
here first, such a value is named in one line instead of failing later in a comparison. No
TensorFlow: the environment configs that worker processes unpickle use it too.
"""
import dataclasses
import numbers
import typing


def _matches(value, annotation):
    if annotation is typing.Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Union:
        return any(_matches(value, option) for option in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if annotation in (tuple, list) or origin in (tuple, list):
        return isinstance(value, (tuple, list))
    if annotation is dict or origin is dict:
        return isinstance(value, dict)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True  # an annotation this checker does not know: the field's own check decides


def describe(annotation):
    """'an int', 'a float or None', ... for error messages."""
    if typing.get_origin(annotation) is typing.Union:
        return ' or '.join(describe(option) for option in typing.get_args(annotation))
    names = {bool: 'True or False', int: 'an int', float: 'a number', str: 'a string',
             tuple: 'a sequence', list: 'a sequence', dict: 'a dict', type(None): 'None'}
    return names.get(annotation, getattr(annotation, '__name__', str(annotation)))


def first_type_error(owner, config):
    """A one-line message for the first field of the dataclass config whose value does not have
    its annotated type, or None."""
    hints = typing.get_type_hints(type(config))
    for field in dataclasses.fields(config):
        annotation = hints.get(field.name, typing.Any)
        value = getattr(config, field.name)
        if not _matches(value, annotation):
            return f'{owner}.{field.name}={value!r} must be {describe(annotation)}'
    return None
